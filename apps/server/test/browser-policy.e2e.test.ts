/**
 * Web pages and the routes that reach every client: the host API, the inspector and /mcp answer
 * only loopback pages, the server's own and configured origins, and only loopback (or configured)
 * Host names on a loopback server; the skill routes, the HTTP loop and /mdp/auth keep SPEC §6's
 * CORS for browser MDP clients. Requests go through node's client: fetch would not send our Host.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@mdp/core';
import { descriptor, skill, stopAll } from '@mdp/test-kit';
import { registeredClient, startServer, type TestServer } from './harness.js';

afterEach(async () => {
  await stopAll();
});

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One request with exactly these headers (Host included when given). */
function send(t: TestServer, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${t.port}`, ...init.headers };
    const req = httpRequest({ host: '127.0.0.1', port: t.port, path, method: init.method ?? 'GET', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      // An event stream stays open: its headers are the answer.
      if (res.headers['content-type']?.startsWith('text/event-stream')) {
        res.destroy();
        return resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      }
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const JSON_TYPE = { 'content-type': 'application/json' };
const CALL = JSON.stringify({ clientId: 'app', method: 'POST', path: '/run' });
const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
});
const MCP = { ...JSON_TYPE, accept: 'application/json, text/event-stream' };

async function serverWithApp(options: Parameters<typeof startServer>[0] = {}) {
  const t = await startServer(options);
  const app = await registeredClient(t, descriptor('app', [{ type: 'endpoint', method: 'POST', path: '/run' }, skill('/docs/skill.md')]));
  app.handler = (call) => (call.path === '/docs/skill.md' ? '# docs' : 'ran');
  return { t, app };
}

/** Every guarded route, as the request a page would make. */
const GUARDED: ReadonlyArray<readonly [string, string, Record<string, string>, string | undefined]> = [
  ['GET', '/mdp/clients', {}, undefined],
  ['GET', '/mdp/paths', {}, undefined],
  ['POST', '/mdp/call', JSON_TYPE, CALL],
  ['POST', '/mdp/call-many', JSON_TYPE, JSON.stringify({ method: 'POST', path: '/run' })],
  ['GET', '/mdp/inspector', {}, undefined],
  ['GET', '/mdp/inspector/events', {}, undefined],
  ['POST', '/mcp', MCP, INIT],
  // The guide names a connected client's skill and counts what runs here (features/guide.ts).
  ['GET', '/SKILL.md', {}, undefined],
];

describe('a page of another site', () => {
  it('is refused on every route that reaches every client, and the client is never called', async () => {
    const { t, app } = await serverWithApp();
    for (const [method, path, headers, body] of GUARDED) {
      const res = await send(t, path, { method, headers: { ...headers, origin: 'https://evil.example' }, body });
      expect(res.status, path).toBe(403);
      expect(res.body, path).toContain('Forbidden: Origin \\"https://evil.example\\" is not allowed');
      // No CORS grant either: the browser keeps even the refusal from the page.
      expect(res.headers['access-control-allow-origin'], path).toBeUndefined();
    }
    expect(app.calls).toEqual([]);
  });

  it('cannot preflight a guarded route; MDP browser clients keep their CORS', async () => {
    const { t, app } = await serverWithApp();
    const preflight = (path: string, origin: string) =>
      send(t, path, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    for (const path of ['/mdp/call', '/mdp/clients', '/mcp', '/mdp/inspector/events', '/SKILL.md']) {
      const refused = await preflight(path, 'https://evil.example');
      expect(refused.status, path).toBe(403);
      expect(refused.headers['access-control-allow-origin'], path).toBeUndefined();
      expect((await preflight(path, 'http://localhost:5173')).status, path).toBe(204);
    }
    // SPEC §6: the HTTP loop and /mdp/auth answer any page.
    for (const path of ['/mdp/http-loop/connect', '/mdp/auth']) {
      const open = await preflight(path, 'https://page.example');
      expect(open.status, path).toBe(204);
      expect(open.headers['access-control-allow-origin'], path).toBe('https://page.example');
    }
    // The skill routes: the seed's 204 to any preflight, but a grant only for the pages that may read.
    const skillPreflight = await preflight('/skills/app/docs/skill.md', 'https://page.example');
    expect([skillPreflight.status, skillPreflight.headers['access-control-allow-origin']]).toEqual([204, undefined]);
    expect((await preflight('/skills/app/docs/skill.md', 'http://localhost:5173')).headers['access-control-allow-origin']).toBe('http://localhost:5173');
    const read = await send(t, '/skills/app/docs/skill.md', { headers: { origin: 'https://page.example' } });
    expect([read.status, JSON.parse(read.body), read.headers['access-control-allow-origin']]).toEqual([
      403,
      { error: 'Forbidden: Origin "https://page.example" is not allowed' },
      undefined,
    ]);
    expect(app.calls).toHaveLength(0);
    const local = await send(t, '/skills/app/docs/skill.md', { headers: { origin: 'http://localhost:5173' } });
    expect([local.status, local.body, local.headers['access-control-allow-origin']]).toEqual([200, '# docs', 'http://localhost:5173']);
  });

  it('is allowed once configured, with CORS for it', async () => {
    const { t, app } = await serverWithApp({ allowedOrigins: ['https://agent.example'] });
    const res = await send(t, '/mdp/call', { method: 'POST', headers: { ...JSON_TYPE, origin: 'https://agent.example' }, body: CALL });
    expect([res.status, JSON.parse(res.body)]).toEqual([200, { ok: true, data: 'ran' }]);
    expect(res.headers['access-control-allow-origin']).toBe('https://agent.example');
    expect(app.calls).toHaveLength(1);
    const other = await send(t, '/mdp/clients', { headers: { origin: 'https://other.example' } });
    expect(other.status).toBe(403);
  });

  it('loopback pages (the inspector, a dev server) keep working', async () => {
    const { t } = await serverWithApp();
    const own = await send(t, '/mdp/call', { method: 'POST', headers: { ...JSON_TYPE, origin: t.http }, body: CALL });
    expect(own.status).toBe(200);
    expect(own.headers['access-control-allow-origin']).toBe(t.http);
    expect((await send(t, '/mdp/clients', { headers: { origin: 'http://localhost:5173' } })).status).toBe(200);
  });
});

describe('a rebound DNS name', () => {
  it('is refused on a loopback server, whatever Origin it claims', async () => {
    const { t, app } = await serverWithApp();
    const host = `rebind.evil.example:${t.port}`;
    for (const [method, path, headers, body] of GUARDED) {
      // The page's own origin (same-origin for the browser), or no Origin at all (a same-origin GET).
      for (const origin of [{ origin: `http://${host}` }, {}] as Array<Record<string, string>>) {
        const res = await send(t, path, { method, headers: { ...headers, host, ...origin }, body });
        expect(res.status, `${path} ${JSON.stringify(origin)}`).toBe(403);
        expect(res.body).toContain(`Forbidden: Host \\"${host}\\" is not allowed`);
      }
    }
    expect(app.calls).toEqual([]);
  });

  it('is allowed when configured', async () => {
    const { t } = await serverWithApp({ allowedHosts: ['box.lan'] });
    const res = await send(t, '/mdp/clients', { headers: { host: `box.lan:${t.port}`, origin: `http://box.lan:${t.port}` } });
    expect(res.status).toBe(200);
  });
});

/** One request written as it stands on a socket (node's client always sends a Host); the status and body. */
function rawExchange(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0), body: answer.slice(answer.indexOf('\r\n\r\n') + 4) }));
  });
}

describe('Host headers that name nothing', () => {
  it('a malformed Host on /mcp is 400, not an internal error', async () => {
    const errors: string[] = [];
    const logger = createLogger({ level: 'error', write: (line) => errors.push(line) });
    const { t, app } = await serverWithApp({ logger });
    for (const host of ['a b', '[', 'x:y:z']) {
      const res = await send(t, '/mcp', { method: 'POST', headers: { ...MCP, host }, body: INIT });
      expect(res.status, host).toBe(400);
      expect(res.body).toContain('malformed Host header');
    }
    expect(errors).toEqual([]);
    expect(app.calls).toEqual([]);
  });

  it('a request without a Host (HTTP/1.0) is refused on /mcp as on the host API', async () => {
    const { t, app } = await serverWithApp();
    const mcp = await rawExchange(
      t.port,
      `POST /mcp HTTP/1.0\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${Buffer.byteLength(INIT)}\r\n\r\n${INIT}`,
    );
    expect(mcp.status).toBe(403);
    expect(mcp.body).toContain('missing or malformed Host header');
    const host = await rawExchange(t.port, 'GET /mdp/clients HTTP/1.0\r\n\r\n');
    expect(host.status).toBe(403);
    expect(t.server.mcp ? (await send(t, '/mcp', { method: 'POST', headers: MCP, body: INIT })).status : 0).toBe(200);
    expect(app.calls).toEqual([]);
  });

  it('a server bound to another spelling of loopback (127.1) checks the Host as well', async () => {
    const { t } = await serverWithApp({ host: '127.1' });
    for (const [method, path, headers, body] of GUARDED) {
      const res = await send(t, path, { method, headers: { ...headers, host: `evil.example:${t.port}` }, body });
      expect(res.status, path).toBe(403);
    }
    expect((await send(t, '/mdp/clients')).status).toBe(200);
  });
});

describe('host API bodies', () => {
  it('must be declared JSON: a "simple" cross-origin post cannot reach a call', async () => {
    const { t, app } = await serverWithApp();
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
      const res = await send(t, '/mdp/call', { method: 'POST', headers: type === undefined ? {} : { 'content-type': type }, body: CALL });
      expect(res.status, type).toBe(415);
      expect(JSON.parse(res.body), type).toEqual({
        error: { code: 'bad_request', message: 'The body must be JSON, sent with Content-Type: application/json' },
      });
    }
    const declared = await send(t, '/mdp/call', { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: CALL });
    expect(declared.status).toBe(200);
    expect(app.calls).toHaveLength(1);
  });
});
