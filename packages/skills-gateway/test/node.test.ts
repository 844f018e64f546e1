/** The node `request` adapter, on a real node:http server. */
import { Agent, createServer, get, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import { skill, type FakeClient } from '@mdp/test-kit';
import { createNodeSkillsHandler, joinedHeaders, type NodeSkillsOptions } from '../src/index.js';
import { connectClient } from './helpers.js';

let router: Router;
let server: Server | undefined;
let client: FakeClient;

beforeEach(() => {
  router = new Router();
  client = connectClient(router, 'c1', [skill('/docs/review/skill.md'), skill('/data/skill.md')]);
});

afterEach(async () => {
  await router.close();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = undefined;
});

async function listen(options: NodeSkillsOptions = {}): Promise<number> {
  const handle = createNodeSkillsHandler(router, options);
  server = createServer((req, res) => {
    if (!handle(req, res)) {
      res.writeHead(418);
      res.end('not a skill route');
    }
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A request written by hand on a TCP socket: the path and repeated headers go out exactly as given. */
function send(port: number, path: string, init: { method?: string; rawHeaders?: Array<[string, string]> } = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
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

describe('createNodeSkillsHandler', () => {
  it('reads a skill through both routes with the Markdown type', async () => {
    const port = await listen();
    for (const path of ['/skills/c1/docs/review', '/c1/skills/docs/review']) {
      const res = await send(port, path);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(res.body).toBe('skill at /docs/review/skill.md');
    }
  });

  it('passes other paths to the next handler', async () => {
    const port = await listen();
    for (const path of ['/mdp/meta', '/mdp/skills/x', '/skills/only-client', '/']) {
      expect((await send(port, path)).status, path).toBe(418);
    }
  });

  it('forwards the query (last value wins) and headers (lower-case, repeats joined by ", ")', async () => {
    const port = await listen();
    await send(port, '/skills/c1/docs/review?a=1&a=2&b=x%20y', {
      rawHeaders: [['X-Trace', 'one'], ['x-trace', 'two'], ['Cookie', 'a=1'], ['cookie', 'b=2']],
    });
    expect(client.lastCall.query).toEqual({ a: '2', b: 'x y' });
    expect(client.lastCall.headers).toMatchObject({ 'x-trace': 'one, two', cookie: 'a=1, b=2' });
  });

  it('forwards a header or query key named like an Object built-in as sent', async () => {
    const port = await listen();
    await send(port, '/skills/c1/docs/review?__proto__=1&constructor=2&a=3', { rawHeaders: [['constructor', 'x'], ['__proto__', 'y']] });
    expect(JSON.stringify(client.lastCall.query)).toBe('{"__proto__":"1","constructor":"2","a":"3"}');
    expect(JSON.stringify(client.lastCall.headers)).toMatch(/"constructor":"x","__proto__":"y"/);
  });

  it('wraps non-string data as JSON {data} and adds extra headers to every answer', async () => {
    client.reply = () => ({ ok: true, data: { n: 1 } });
    const port = await listen({ extraHeaders: () => ({ 'access-control-allow-origin': '*' }) });
    const res = await send(port, '/skills/c1/data');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ data: { n: 1 } });
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect((await send(port, '/skills/c1/nothing')).headers['access-control-allow-origin']).toBe('*');
  });

  it('answers 400 for a raw dot segment, 404, 405 with Allow, OPTIONS 204', async () => {
    const port = await listen();
    expect((await send(port, '/skills/c1/docs/../review')).status).toBe(400);
    // The absolute form of the same target (RFC 9112 §3.2.2) is checked the same way.
    expect((await send(port, `http://127.0.0.1:${port}/skills/c1/docs/../review`)).status).toBe(400);
    expect((await send(port, `http://127.0.0.1:${port}/skills/c1/docs/%2e%2e/review`)).status).toBe(400);
    const absolute = await send(port, `http://127.0.0.1:${port}/skills/c1/docs/review?a=1`);
    expect(absolute.status).toBe(200);
    expect(client.lastCall.query).toEqual({ a: '1' });
    const missing = await send(port, '/skills/c1/none');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(missing.body)).toMatchObject({ error: { code: 'not_found', details: { clientId: 'c1', skillPath: '/none' } } });
    const post = await send(port, '/skills/c1/docs/review', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, OPTIONS');
    expect((await send(port, '/skills/c1/docs/review', { method: 'OPTIONS' })).status).toBe(204);
  });

  it('refuses unauthorized reads with 401 but never preflights', async () => {
    const port = await listen({ authorize: (auth) => auth?.token === 'ok' });
    expect((await send(port, '/skills/c1/docs/review')).status).toBe(401);
    expect((await send(port, '/skills/c1/docs/review', { rawHeaders: [['authorization', 'Bearer ok']] })).status).toBe(200);
    expect((await send(port, '/skills/c1/docs/review', { method: 'OPTIONS' })).status).toBe(204);
  });

  it('answers 502 when the client fails', async () => {
    client.reply = () => ({ ok: false, error: { code: 'handler_error', message: 'boom' } });
    const port = await listen();
    const res = await send(port, '/skills/c1/docs/review');
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'handler_error', message: 'boom' } });
  });
});

describe('readers that leave, clients that are busy', () => {
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
  });

  it('ends the call at once when the reader goes away before its answer', async () => {
    const called = new Promise<string>((resolve) => {
      client.reply = (call) => {
        resolve(call.requestId);
        return undefined;
      };
    });
    const port = await listen();
    const cancel = router.cancel.bind(router);
    const cancelled = new Promise<void>((resolve) => {
      router.cancel = (call) => {
        cancel(call);
        resolve();
      };
    });
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(`GET /skills/c1/docs/review HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    const requestId = await called;
    expect(router.isPending(requestId)).toBe(true);
    socket.destroy();
    await cancelled;
    expect(router.isPending(requestId)).toBe(false);
    expect(router.pendingCount).toBe(0);
  });

  it('answers 503 with Retry-After when the client has too many calls waiting, sending it nothing', async () => {
    await router.close();
    router = new Router({ maxPendingCalls: 1 });
    client = connectClient(router, 'c1', [skill('/docs/review/skill.md')]);
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

  it.each<[string, NodeSkillsOptions]>([
    [
      'the read itself throws',
      {
        authorize: () => {
          throw new Error('policy bug');
        },
      },
    ],
    ['its answer cannot be written', { extraHeaders: () => ({ 'x-bad': 'a\nb' }) }],
    [
      'the extra headers throw',
      {
        extraHeaders: () => {
          throw new Error('cors bug');
        },
      },
    ],
  ])('500 {error} when %s', async (_case, options) => {
    const res = await send(await listen(options), '/skills/c1/docs/review');
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ error: 'Internal error' });
  });
});

describe('joinedHeaders', () => {
  it('lower-cases names and joins repeats', () => {
    expect(joinedHeaders(['A', '1', 'b', '2', 'a', '3'])).toEqual({ a: '1, 3', b: '2' });
  });

  it('keeps headers named like Object built-ins as plain headers', () => {
    const headers = joinedHeaders(['Constructor', 'x', '__proto__', 'y', 'toString', 'z', 'constructor', 'w']);
    expect(JSON.stringify(headers)).toBe('{"constructor":"x, w","__proto__":"y","tostring":"z"}');
  });
});
