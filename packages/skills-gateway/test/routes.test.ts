/**
 * The skill routes over HTTP: one suite run against both adapters on a real socket
 * (`createNodeSkillsHandler` under a bare node:http listener, `createSkillsRoutes` of
 * `@mdp/skills-gateway/hono` under @hono/node-server), each passing what is not a skill route on to
 * the server (418 here). What only one adapter has (Hono in process, `extraHeaders`) follows.
 */
import { Agent, createServer, get, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router, encodeAuthCookie, type CallRecord, type RouterOptions } from '@mdp/core';
import { descriptor, fakeClient, recordingLogger, skill, type FakeClient } from '@mdp/test-kit';
import { createSkillsRoutes, type SkillsRoutesOptions } from '../src/hono.js';
import { createNodeSkillsHandler, type NodeSkillsOptions } from '../src/index.js';
import { connectClient } from './helpers.js';

let router: Router;
let server: Server | undefined;
let client: FakeClient;

/** A router with client c1 holding two skills. */
function start(options: RouterOptions = {}): void {
  router = new Router(options);
  client = connectClient(router, 'c1', [skill('/docs/review/skill.md'), skill('/data/skill.md')]);
}

beforeEach(() => start());

afterEach(async () => {
  await router.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
  }
  server = undefined;
});

function listening(started: Server): Promise<number> {
  server = started;
  return new Promise((resolve) => {
    if (started.listening) resolve((started.address() as AddressInfo).port);
    else started.once('listening', () => resolve((started.address() as AddressInfo).port));
  });
}

async function listenNode(options: NodeSkillsOptions = {}): Promise<number> {
  const handle = createNodeSkillsHandler(router, options);
  const started = createServer((req, res) => {
    if (!handle(req, res)) {
      res.writeHead(418);
      res.end('not a skill route');
    }
  });
  started.listen(0, '127.0.0.1');
  return listening(started);
}

async function listenHono(options: SkillsRoutesOptions = {}): Promise<number> {
  const app = new Hono();
  app.route('/', createSkillsRoutes(router, options));
  app.all('*', (c) => c.text('not a skill route', 418));
  return listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
}

const ADAPTERS: ReadonlyArray<readonly [string, (options?: SkillsRoutesOptions) => Promise<number>]> = [
  ['createNodeSkillsHandler on node:http', listenNode],
  ['createSkillsRoutes on @hono/node-server', listenHono],
];

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A request written by hand on a TCP socket: the path and repeated headers go out exactly as given. */
function send(port: number, path: string, init: { method?: string; rawHeaders?: Array<[string, string]> } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const lines = [`${init.method ?? 'GET'} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: close'];
    for (const [name, value] of init.rawHeaders ?? []) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (raw += d));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: IncomingHttpHeaders = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: decodeChunked(headers, body) });
    });
  });
}

function decodeChunked(headers: IncomingHttpHeaders, body: string): string {
  if (headers['transfer-encoding'] !== 'chunked') return body;
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

describe.each(ADAPTERS)('skill routes: %s', (_name, listen) => {
  describe('reads', () => {
    it('reads a skill through both routes with the Markdown type', async () => {
      const port = await listen();
      for (const [path, target] of [
        ['/skills/c1/docs/review', '/docs/review/skill.md'],
        ['/c1/skills/data', '/data/skill.md'],
      ] as const) {
        const res = await send(port, path);
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe('text/markdown; charset=utf-8');
        expect(res.body).toBe(`skill at ${target}`);
        expect(client.lastCall.path).toBe(target);
      }
    });

    it('passes other paths on to the server', async () => {
      const port = await listen();
      for (const path of ['/mdp/meta', '/mdp/skills/x', '/skills/only-client', '/hello', '/']) {
        const res = await send(port, path);
        expect(res.status, path).toBe(418);
        expect(res.body).toBe('not a skill route');
      }
      expect(client.calls).toHaveLength(0);
      expect((await send(port, '/skills/c1/docs/review')).body).toBe('skill at /docs/review/skill.md');
    });

    it('forwards the query (last value wins) and headers (lower-case, repeats joined by ", ", cookies by "; ")', async () => {
      const port = await listen();
      await send(port, '/skills/c1/docs/review?a=1&a=2&b=x%20y&a=3', {
        rawHeaders: [
          ['X-Trace', 'one'],
          ['x-trace', 'two'],
          ['Accept-Language', 'en'],
          ['Cookie', 'a=1'],
          ['cookie', 'b=2'],
        ],
      });
      expect(client.lastCall.query).toEqual({ a: '3', b: 'x y' });
      expect(client.lastCall.args?.query).toEqual({ a: '3', b: 'x y' });
      expect(client.lastCall.headers).toMatchObject({ 'x-trace': 'one, two', 'accept-language': 'en', cookie: 'a=1; b=2' });
      expect(Object.keys(client.lastCall.headers ?? {}).every((name) => name === name.toLowerCase())).toBe(true);
    });

    it('forwards a header or query key named like an Object built-in as sent', async () => {
      const port = await listen();
      await send(port, '/skills/c1/docs/review?__proto__=1&constructor=2&a=3', {
        rawHeaders: [
          ['constructor', 'x'],
          ['__proto__', 'y'],
        ],
      });
      expect(JSON.stringify(client.lastCall.query)).toBe('{"__proto__":"1","constructor":"2","a":"3"}');
      // Own entries, in whatever order the adapter lists them (Fetch Headers sort their names).
      expect(Object.entries(client.lastCall.headers ?? {})).toEqual(
        expect.arrayContaining([
          ['constructor', 'x'],
          ['__proto__', 'y'],
        ]),
      );
      expect(Object.getPrototypeOf(client.lastCall.headers)).toBe(Object.prototype);
    });

    it('sends the transport auth of the request: Authorization, mdp_auth cookie, x-mdp-auth-*', async () => {
      const port = await listen();
      const cookie = `mdp_auth=${encodeAuthCookie({ token: 'from-cookie', metadata: { user: 'u1' } })}`;
      await send(port, '/skills/c1/docs/review', {
        rawHeaders: [
          ['Authorization', 'Bearer tok-1'],
          ['Cookie', 'other=1'],
          ['Cookie', cookie],
          ['X-MDP-Auth-Tenant', 't9'],
        ],
      });
      expect(client.lastCall.auth).toEqual({
        scheme: 'Bearer',
        token: 'tok-1',
        metadata: { user: 'u1' },
        headers: { authorization: 'Bearer tok-1', cookie: `other=1; ${cookie}`, 'x-mdp-auth-tenant': 't9' },
      });

      await send(port, '/skills/c1/docs/review');
      expect(client.lastCall.auth).toBeUndefined();
    });

    it('under an auth policy (authorize) sends neither the Authorization header nor the mdp_auth cookie', async () => {
      const port = await listen({ authorize: (auth) => auth?.token === 'tok-1' });
      const cookie = `mdp_auth=${encodeAuthCookie({ token: 'from-cookie', metadata: { user: 'u1' } })}`;
      await send(port, '/skills/c1/docs/review', {
        rawHeaders: [
          ['Authorization', 'Bearer tok-1'],
          ['Cookie', 'theme=dark'],
          ['Cookie', cookie],
          ['X-MDP-Auth-Tenant', 't9'],
        ],
      });
      expect(client.lastCall.auth).toEqual({ headers: { cookie: 'theme=dark', 'x-mdp-auth-tenant': 't9' } });
      expect(client.lastCall.headers).toMatchObject({ cookie: 'theme=dark', 'x-mdp-auth-tenant': 't9' });
      expect(JSON.stringify(client.lastCall)).not.toMatch(/tok-1|from-cookie|mdp_auth/);
    });

    it('forwards what the given forwarding lets through', async () => {
      const port = await listen({
        authorize: () => true,
        forwarding: { forwardableAuth: () => ({ token: 'chosen' }), forwardableHeaders: () => ({ only: 'this' }) },
      });
      await send(port, '/skills/c1/docs/review', { rawHeaders: [['Authorization', 'Bearer tok-1']] });
      expect(client.lastCall.auth).toEqual({ token: 'chosen' });
      expect(client.lastCall.headers).toEqual({ only: 'this' });
    });

    it('uses a custom extractAuth', async () => {
      const port = await listen({ extractAuth: (headers) => ({ token: String(headers['x-api-key']) }) });
      await send(port, '/skills/c1/docs/review', { rawHeaders: [['X-Api-Key', 'k-42']] });
      expect(client.lastCall.auth).toEqual({ token: 'k-42' });
    });

    it('wraps non-string data as JSON {data}', async () => {
      client.reply = () => ({ ok: true, data: { n: 1 } });
      const res = await send(await listen(), '/skills/c1/data');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(res.body)).toEqual({ data: { n: 1 } });
    });

    it('keeps serving reads on a kept-alive connection, and cancels nothing once a read is answered', async () => {
      const port = await listen();
      const connections: Socket[] = [];
      server!.on('connection', (socket) => connections.push(socket));
      const cancel = vi.spyOn(router, 'cancel');
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; i < 3; i++) {
        const body = await new Promise<string>((resolve) =>
          get({ port, host: '127.0.0.1', path: '/skills/c1/docs/review', agent }, (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () => resolve(text));
          }),
        );
        expect(body).toBe('skill at /docs/review/skill.md');
      }
      expect(connections).toHaveLength(1);
      const closed = new Promise((resolve) => connections[0]!.once('close', resolve));
      agent.destroy();
      await closed;
      expect(cancel).not.toHaveBeenCalled();
      expect(router.pendingCount).toBe(0);
      expect(client.calls).toHaveLength(3);
    });
  });

  describe('statuses', () => {
    it('answers 400 for a raw dot segment, 404, 405 with Allow, OPTIONS 204', async () => {
      const port = await listen();
      // The raw target is read, not a URL with its dot segments resolved (a read of another skill).
      const dotted = await send(port, '/skills/c1/docs/../review');
      expect(dotted.status).toBe(400);
      expect(dotted.headers['content-type']).toMatch(/^application\/json/);
      expect(typeof (JSON.parse(dotted.body) as { error: unknown }).error).toBe('string');
      // The absolute form of the same target (RFC 9112 §3.2.2) is checked the same way.
      expect((await send(port, `http://127.0.0.1:${port}/skills/c1/docs/../review`)).status).toBe(400);
      expect((await send(port, `http://127.0.0.1:${port}/skills/c1/docs/%2e%2e/review`)).status).toBe(400);
      expect((await send(port, '/skills/c1/docs%2Freview')).status).toBe(400);
      expect(client.calls).toHaveLength(0);
      const absolute = await send(port, `http://127.0.0.1:${port}/skills/c1/docs/review?a=1`);
      expect(absolute.status).toBe(200);
      expect(client.lastCall.query).toEqual({ a: '1' });

      // The seed's 404: an empty body; the reason is in the headers.
      const missing = await send(port, '/skills/c1/none');
      expect(missing.status).toBe(404);
      expect(missing.body).toBe('');
      expect(missing.headers['content-type']).toBeUndefined();
      expect(missing.headers['mdp-error-code']).toBe('unknown_path');
      expect(missing.headers['mdp-error']).toContain('Client "c1" has no skill "/none"');
      const nobody = await send(port, '/nobody/skills/docs/review');
      expect([nobody.status, nobody.body, nobody.headers['mdp-error-code'], nobody.headers['mdp-error']]).toEqual([
        404,
        '',
        'unknown_client',
        'No client "nobody" is connected',
      ]);

      const post = await send(port, '/skills/c1/docs/review', { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.allow).toBe('GET, OPTIONS');
      expect(post.body).toBe('');
      const options = await send(port, '/skills/c1/docs/review', { method: 'OPTIONS' });
      expect(options.status).toBe(204);
      expect(options.body).toBe('');
    });

    it('refuses unauthorized reads with 401 {error} but never preflights', async () => {
      const port = await listen({ authorize: (auth) => auth?.token === 'ok' });
      const refused = await send(port, '/skills/c1/docs/review', { rawHeaders: [['authorization', 'Bearer bad']] });
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toEqual({ error: 'Unauthorized' });
      expect((await send(port, '/skills/c1/docs/review')).status).toBe(401);
      expect((await send(port, '/skills/c1/docs/review', { method: 'OPTIONS' })).status).toBe(204);
      expect(client.calls).toHaveLength(0);
      expect((await send(port, '/skills/c1/docs/review', { rawHeaders: [['authorization', 'Bearer ok']] })).status).toBe(200);
      expect(client.calls).toHaveLength(1);
    });

    it('answers 502 when the client fails', async () => {
      client.reply = () => ({ ok: false, error: { code: 'handler_error', message: 'boom' } });
      const res = await send(await listen(), '/skills/c1/docs/review');
      expect(res.status).toBe(502);
      expect(JSON.parse(res.body)).toEqual({ error: { code: 'handler_error', message: 'boom' } });
    });

    it('answers 504 {error: timeout} past the per-call timeoutMs', async () => {
      client.reply = () => undefined;
      const res = await send(await listen({ timeoutMs: 5 }), '/skills/c1/docs/review');
      expect(res.status).toBe(504);
      expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe('timeout');
    });

    it('answers 503 with Retry-After when the client has too many calls waiting, sending it nothing', async () => {
      await router.close();
      start({ maxPendingCalls: 1 });
      const called = new Promise<void>((resolve) => {
        client.reply = () => {
          resolve();
          return undefined;
        };
      });
      const port = await listen();
      void send(port, '/skills/c1/docs/review').catch(() => undefined);
      await called;
      const res = await send(port, '/skills/c1/docs/review');
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(JSON.parse(res.body)).toEqual({
        error: { code: 'not_ready', message: 'Client "c1" has 1 calls waiting for an answer; try again later', details: { retryAfterMs: 1000 } },
      });
      expect(client.calls).toHaveLength(1);
    });
  });

  describe('readers that leave', () => {
    it('ends the call at once when the reader goes away before its answer', async () => {
      await router.close();
      let ended: (record: CallRecord) => void = () => undefined;
      const callEnded = new Promise<CallRecord>((resolve) => (ended = resolve));
      start({ onCallEnd: (record) => ended(record) });
      const called = new Promise<string>((resolve) => {
        client.reply = (call) => {
          resolve(call.requestId);
          return undefined;
        };
      });
      const port = await listen();
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(`GET /skills/c1/docs/review HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      const requestId = await called;
      expect(router.isPending(requestId)).toBe(true);
      socket.destroy();
      expect(await callEnded).toMatchObject({ route: 'skill', clientId: 'c1', outcome: { ok: false, error: { code: 'transport_error' } } });
      expect(router.isPending(requestId)).toBe(false);
      expect(router.pendingCount).toBe(0);
    });
  });

  describe('answers that cannot be made', () => {
    it('502 for a declared contentType that is no valid header value; the server keeps serving', async () => {
      connectClient(router, 'bad', [skill('/x/skill.md', { contentType: 'text/plain\r\nx-injected: 1' })]);
      const port = await listen();
      const res = await send(port, '/skills/bad/x');
      expect(res.status).toBe(502);
      expect(res.headers['x-injected']).toBeUndefined();
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'handler_error', message: expect.stringContaining('contentType') } });
      expect((await send(port, '/skills/c1/docs/review')).status).toBe(200);
    });

    it('502 for data nested too deeply to serialise again (ok or error details); never a hung read', async () => {
      let deep: unknown = 'bottom';
      for (let i = 0; i < 100_000; i++) deep = [deep];
      expect(() => JSON.stringify(deep)).toThrow(RangeError);
      const port = await listen();
      client.reply = () => ({ ok: true, data: deep });
      const ok = await send(port, '/skills/c1/docs/review');
      expect(ok.status).toBe(502);
      expect(JSON.parse(ok.body)).toMatchObject({ error: { code: 'handler_error', message: expect.stringContaining('nested too deeply') } });
      client.reply = () => ({ ok: false, error: { code: 'handler_error', message: 'x', details: deep } });
      const failed = await send(port, '/skills/c1/docs/review');
      expect(failed.status).toBe(502);
      expect(JSON.parse(failed.body)).toMatchObject({ error: { code: 'handler_error', message: expect.stringContaining('nested too deeply') } });
      client.reply = () => ({ ok: true, data: [[['fine']]] });
      const next = await send(port, '/skills/c1/docs/review');
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body)).toEqual({ data: [[['fine']]] });
    });

    it('500 {error} when the read itself throws, logged and never echoed', async () => {
      const { logger, records: logged } = recordingLogger({ level: 'info' });
      const port = await listen({
        authorize: () => {
          throw new Error('policy bug');
        },
        logger,
      });
      const res = await send(port, '/skills/c1/docs/review');
      expect(res.status).toBe(500);
      expect(JSON.parse(res.body)).toEqual({ error: 'Internal error' });
      expect(logged).toMatchObject([{ event: 'skills.read_failed', error: { message: 'policy bug' } }]);
      expect((await send(port, '/skills/c1/docs/review', { method: 'OPTIONS' })).status).toBe(204);
    });
  });
});

describe('createSkillsRoutes in process (app.request)', () => {
  it('reads the URL without a node request, and the raw target with one', async () => {
    const app = createSkillsRoutes(router);
    // A Fetch URL has `/a/../b` resolved to `/b` already: with no node request that is all there is.
    expect(await (await app.request('/skills/c1/docs/x/../review')).text()).toBe('skill at /docs/review/skill.md');
    // The raw target of a node request (`env.incoming`, as @hono/node-server passes it) wins.
    const dotted = await app.request('/skills/c1/docs/review', {}, { incoming: { url: '/skills/c1/docs/x/../review?x=1' } });
    expect(dotted.status).toBe(400);
    await app.request('/skills/c1/docs/review?x=1', {}, { incoming: { url: '/skills/c1/data?y=2' } });
    expect(client.lastCall).toMatchObject({ path: '/data/skill.md', query: { y: '2' } });
    expect(client.calls).toHaveLength(2);
  });

  it('falls through to the routes after it, with Hono answering what nothing takes', async () => {
    const app = new Hono();
    app.route('/', createSkillsRoutes(router));
    app.get('/skills/c1', (c) => c.text('no skill path'));
    expect(await (await app.request('/skills/c1')).text()).toBe('no skill path');
    const unknown = await app.request('/elsewhere');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('404 Not Found'); // Hono's own not-found, not the empty skill 404
    expect(client.calls).toHaveLength(0);
  });
});

describe('createNodeSkillsHandler: extraHeaders', () => {
  it('are added to every answer', async () => {
    client.reply = () => ({ ok: true, data: { n: 1 } });
    const port = await listenNode({ extraHeaders: () => ({ 'access-control-allow-origin': '*' }) });
    const res = await send(port, '/skills/c1/data');
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect((await send(port, '/skills/c1/nothing')).headers['access-control-allow-origin']).toBe('*');
  });

  it.each<[string, NodeSkillsOptions]>([
    ['its answer cannot be written', { extraHeaders: () => ({ 'x-bad': 'a\nb' }) }],
    [
      'the extra headers throw',
      {
        extraHeaders: () => {
          throw new Error('cors bug');
        },
      },
    ],
  ])('that fail give 500 {error} when %s', async (_case, options) => {
    const res = await send(await listenNode(options), '/skills/c1/docs/review');
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ error: 'Internal error' });
  });
});

describe('createNodeSkillsHandler: the sockets it reads on', () => {
  /** One kept-alive GET of `path` on its own connection; resolves with the server's socket once answered. */
  async function onItsOwnConnection(port: number, path: string): Promise<Socket> {
    const accepted = new Promise<Socket>((resolve) => server!.once('connection', resolve));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    await new Promise<void>((resolve) => get({ port, host: '127.0.0.1', path, agent }, (res) => res.resume().on('end', resolve)));
    const socket = await accepted;
    agent.destroy();
    return socket;
  }
  const ownKeys = (socket: Socket): string[] => Reflect.ownKeys(socket).map(String).sort();

  it('are left with the properties node gave them: no shape of ours for node to handle on every request', async () => {
    // Answered on a later turn, as across a socket: the read waits on its connection meanwhile.
    fakeClient(router, descriptor('later', [skill('/docs/review/skill.md')]), { later: true });
    const port = await listenNode();
    const read = await onItsOwnConnection(port, '/skills/later/docs/review');
    const other = await onItsOwnConnection(port, '/not-a-skill');
    expect(ownKeys(read)).toEqual(ownKeys(other));
  });
});
