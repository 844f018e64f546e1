/** The inspector's node side: its files, its refusals and its event stream; and the page's SSE parser. */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Router, createLocalHost, originPolicyFor } from '@mdp/core';
import { closeServer, fakeClient, listen } from '@mdp/test-kit';
import { INSPECTOR_CSP, createInspector, type Inspector } from '../src/index.js';
import { SseParser } from '../src/page/sse.js';

describe('SseParser', () => {
  it('returns complete events only, across chunks split anywhere; skips comments; joins data lines', () => {
    const parser = new SseParser();
    expect(parser.push(': keep-alive\n\nevent: cli')).toEqual([]);
    expect(parser.push('ents\ndata: {"a":\r\ndata: 1}\n')).toEqual([]);
    expect(parser.push('\nevent: x\ndata:no-space\n\ndata: plain\n\n')).toEqual([
      { event: 'clients', data: '{"a":\n1}' },
      { event: 'x', data: 'no-space' },
      { event: 'message', data: 'plain' },
    ]);
  });
});

let router: Router;
let inspector: Inspector;
let server: Server;
let base: string;
/** The server side of the latest request. */
let lastResponse: ServerResponse;

async function serve(options: Parameters<typeof createInspector>[1] = {}): Promise<void> {
  router = new Router();
  inspector = createInspector(createLocalHost(router), { coalesceMs: 10, ...options });
  server = createServer((req, res) => {
    lastResponse = res;
    if (!inspector.handle(req, res, req.url ?? '/')) res.writeHead(418).end();
  });
  base = `http://127.0.0.1:${await listen(server)}`;
}

/** Stop what `serve` started after each test of the calling suite; no timer may be left. */
function stopServing(): void {
  afterEach(async () => {
    inspector.close();
    await router.close();
    server.closeAllConnections();
    await closeServer(server);
    expect(inspector.timers).toBe(0);
  });
}

/** The events of a streaming response, one at a time. */
function eventReader(response: Response): { next(): Promise<{ event: string; data: string }>; cancel(): Promise<void> } {
  const parser = new SseParser();
  const queued: Array<{ event: string; data: string }> = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  return {
    async next() {
      while (queued.length === 0) {
        const { done, value } = await reader.read();
        if (done) throw new Error('the stream ended');
        queued.push(...parser.push(value));
      }
      return queued.shift()!;
    },
    cancel: () => reader.cancel(),
  };
}

describe('createInspector', () => {
  stopServing();
  it('serves the page with its CSP, its modules and marked; 404 for anything else below it; other paths are not its', async () => {
    await serve();
    for (const path of ['/mdp/inspector', '/mdp/inspector/', '/mdp/inspector?from=link']) {
      const page = await fetch(`${base}${path}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBe(INSPECTOR_CSP);
      expect(await page.text()).toContain('<script type="module" src="/mdp/inspector/inspector.js">');
    }
    for (const file of ['inspector.js', 'api.js', 'dom.js', 'markdown.js', 'sse.js', 'marked.js']) {
      const res = await fetch(`${base}/mdp/inspector/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect((await fetch(`${base}/mdp/inspector/inspector.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const missing = await fetch(`${base}/mdp/inspector/nope.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'not_found', message: 'No inspector file "/mdp/inspector/nope.js"' } });
    expect((await fetch(`${base}/mdp/inspectorx`)).status).toBe(418);
    const post = await fetch(`${base}/mdp/inspector`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('the event stream: 405 for other methods, 401 without an accepted credential, 400 for a query', async () => {
    await serve({ authorize: (auth) => auth?.token === 'ok' });
    expect((await fetch(`${base}/mdp/inspector/events`, { method: 'POST' })).status).toBe(405);
    const refused = await fetch(`${base}/mdp/inspector/events`, { headers: { authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: { code: 'unauthorized', message: 'Unauthorized' } });
    const query = await fetch(`${base}/mdp/inspector/events?x=1`, { headers: { authorization: 'Bearer ok' } });
    expect(query.status).toBe(400);
    expect(inspector.streams).toBe(0);
  });

  it("with an origin policy, refuses other sites' pages on the stream and the page alike (403)", async () => {
    await serve({ originPolicy: originPolicyFor('127.0.0.1') });
    for (const path of ['/mdp/inspector/events', '/mdp/inspector', '/mdp/inspector/inspector.js']) {
      const refused = await fetch(`${base}${path}`, { headers: { origin: 'https://evil.example' } });
      expect(refused.status, path).toBe(403);
      expect(await refused.json()).toEqual({ error: { code: 'forbidden', message: 'Forbidden: Origin "https://evil.example" is not allowed' } });
    }
    expect(inspector.streams).toBe(0);
    const own = await fetch(`${base}/mdp/inspector/events`, { headers: { origin: base } });
    expect(own.status).toBe(200);
    await own.body?.cancel();
  });

  it('sends the list when a stream opens and again, once, after a burst of changes; stops watching when the last stream goes', async () => {
    await serve();
    const response = await fetch(`${base}/mdp/inspector/events`);
    const serverSide = lastResponse;
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = eventReader(response);
    const first = await events.next();
    expect(first).toEqual({ event: 'clients', data: '{"clients":[]}' });
    expect(inspector.timers).toBe(1); // the keep-alive
    // Registered and updated within the coalescing window: one event with the latest state.
    const client = fakeClient(router, { id: 'c1', name: 'One', paths: [] });
    client.session.handle({ type: 'updateClientCatalog', clientId: 'c1', paths: [{ type: 'skill', path: '/s/skill.md' }] });
    const second = await events.next();
    expect(second.event).toBe('clients');
    expect(JSON.parse(second.data).clients).toMatchObject([{ id: 'c1', paths: [{ path: '/s/skill.md' }] }]);
    client.disconnect();
    expect(JSON.parse((await events.next()).data)).toEqual({ clients: [] });
    await events.cancel();
    await once(serverSide, 'close');
    expect(inspector.streams).toBe(0);
    expect(inspector.timers).toBe(0);
  });

  it('close ends every open stream and refuses new ones with 503', async () => {
    await serve();
    const response = await fetch(`${base}/mdp/inspector/events`);
    const reader = response.body!.getReader();
    await reader.read();
    inspector.close();
    inspector.close();
    for (;;) if ((await reader.read()).done) break;
    expect(inspector.streams).toBe(0);
    expect((await fetch(`${base}/mdp/inspector/events`)).status).toBe(503);
  });
});
