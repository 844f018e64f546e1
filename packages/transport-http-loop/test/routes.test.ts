/** Statuses and bodies of every HTTP loop call (SPEC §6), in-process with `app.request`. */
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import { LOOP_CLIENT as CLIENT, loopClient, watchSessions, type LoopClient, type SessionWatch } from '@mdp/test-kit';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let router: Router;
let sessions: SessionWatch;
let transport: HttpLoopTransport;
let client: LoopClient;

beforeEach(() => {
  router = new Router();
  sessions = watchSessions(router);
  transport = createHttpLoopTransport(router, { maxBodyBytes: 1024 });
  client = loopClient((path, init) => transport.app.request(path, init));
});

afterEach(async () => {
  await transport.close();
  await router.close();
});

const post = (path: string, body: string | undefined, headers: Record<string, string> = {}): Promise<Response> =>
  Promise.resolve(transport.app.request(path, { method: 'POST', headers, body }));

async function expectEmpty(response: Response, status: number): Promise<void> {
  expect(response.status).toBe(status);
  expect(await response.text()).toBe('');
}

async function expectError(response: Response, status: number, pattern: RegExp): Promise<void> {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: unknown };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatch(pattern);
}

describe('POST /connect', () => {
  it('opens a session for an empty body and for {}', async () => {
    for (const body of [undefined, '', '{}', ' { "extra": 1 } ']) {
      const response = await post('/connect', body);
      expect(response.status).toBe(200);
      const json = (await response.json()) as { sessionId: string };
      expect(Object.keys(json)).toEqual(['sessionId']);
      expect(json.sessionId).toMatch(UUID);
    }
    expect(transport.sessionCount).toBe(4);
    expect(router.sessionCount).toBe(4);
  });

  it('refuses invalid JSON and non-objects with 400', async () => {
    await expectError(await post('/connect', '{nope'), 400, /Invalid JSON/);
    for (const body of ['[]', 'null', '"x"', '3']) await expectError(await post('/connect', body), 400, /JSON object/);
    expect(transport.sessionCount).toBe(0);
  });

  it('refuses a body over the limit with 413', async () => {
    await expectError(await post('/connect', `{"pad":"${'x'.repeat(2000)}"}`), 413, /exceeds 1024 bytes/);
  });

  it('keeps the transport auth of the connect request', async () => {
    const sessionId = await client.connect({ headers: { authorization: 'Bearer t0' } });
    expect(sessions.session(sessionId).transportAuth).toMatchObject({ scheme: 'Bearer', token: 't0' });
    expect(sessions.session(sessionId).transportKind).toBe('http-loop');
  });

  it('lists a client connected over https as secure, one over http as not', async () => {
    const connectAt = async (url: string): Promise<string> => {
      const response = await transport.app.request(url, { method: 'POST', body: '{}' });
      return ((await response.json()) as { sessionId: string }).sessionId;
    };
    for (const [url, id, secure] of [['https://mdp.test/connect', 'tls', true], ['http://mdp.test/connect', 'plain', false]] as const) {
      const sessionId = await connectAt(url);
      expect((await client.send(sessionId, { type: 'registerClient', client: { ...CLIENT, id } })).status).toBe(202);
      expect(router.getClient(id)).toMatchObject({ sessionId, secure });
    }
  });
});

describe('POST /send', () => {
  let sessionId: string;
  beforeEach(async () => {
    sessionId = await client.connect();
  });

  const sendRaw = (body: string, headers: Record<string, string> = {}): Promise<Response> =>
    post('/send', body, { 'content-type': 'application/json', 'x-mdp-session-id': sessionId, ...headers });

  it('accepts a client message with 202 {ok: true}', async () => {
    const response = await client.send(sessionId, { type: 'registerClient', client: CLIENT });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ ok: true });
    expect(router.getClient('c1')).toMatchObject({ sessionId, transportKind: 'http-loop' });
  });

  it('finds the session by header or by query, the header winning', async () => {
    const message = JSON.stringify({ message: { type: 'pong' } });
    expect((await post(`/send?sessionId=${sessionId}`, message)).status).toBe(202);
    expect((await post('/send?sessionId=nope', message, { 'x-mdp-session-id': sessionId })).status).toBe(202);
    await expectEmpty(await post(`/send?sessionId=${sessionId}`, message, { 'x-mdp-session-id': 'nope' }), 404);
  });

  it('answers 404 with an empty body for a missing or unknown session', async () => {
    const message = JSON.stringify({ message: { type: 'pong' } });
    await expectEmpty(await post('/send', message), 404);
    await expectEmpty(await post('/send', message, { 'x-mdp-session-id': '00000000-0000-4000-8000-000000000000' }), 404);
  });

  it('refuses a session id given twice with different values with 400', async () => {
    const message = JSON.stringify({ message: { type: 'pong' } });
    await expectError(await post(`/send?sessionId=${sessionId}&sessionId=other`, message), 400, /sessionId/);
    const headers = new Headers({ 'x-mdp-session-id': sessionId });
    headers.append('x-mdp-session-id', 'other');
    await expectError(await transport.app.request('/send', { method: 'POST', headers, body: message }), 400, /x-mdp-session-id/);
  });

  it('refuses invalid JSON with 400', async () => {
    await expectError(await sendRaw('{"message":'), 400, /Invalid JSON/);
    await expectError(await sendRaw(''), 400, /Invalid JSON/);
  });

  it('refuses a body that is not an object or has no message with 400', async () => {
    await expectError(await sendRaw('[1]'), 400, /JSON object/);
    await expectError(await sendRaw('{}'), 400, /^message: required$/);
    await expectError(await sendRaw('{"message":"hi"}'), 400, /^message: must be a JSON object$/);
  });

  it('refuses an invalid message with 400 naming the field', async () => {
    await expectError(await client.send(sessionId, { type: 'registerClient', client: { ...CLIENT, id: '' } }), 400, /^message\.client\.id: /);
    await expectError(await client.send(sessionId, { type: 'teleport' }), 400, /^message\.type: /);
    await expectError(await client.send(sessionId, { type: 'unregisterClient' }), 400, /^message\.clientId: /);
  });

  it('refuses a server-to-client message with 400', async () => {
    const callClient = { type: 'callClient', requestId: 'r1', clientId: 'c1', method: 'GET', path: '/hello' };
    await expectError(await client.send(sessionId, callClient), 400, /^message\.type: callClient is a server-to-client message$/);
  });

  it('answers a handling error (catalog update for a client not on this session) with 400', async () => {
    const other = await client.register();
    const update = { type: 'updateClientCatalog', clientId: 'c1', paths: [] };
    await expectError(await client.send(sessionId, update), 400, /"c1" is not registered on this session/);
    expect(router.getClient('c1')?.paths).toHaveLength(2);
    expect((await client.send(other, update)).status).toBe(202);
    expect(router.getClient('c1')?.paths).toHaveLength(0);
  });

  it('refuses a body over the limit with 413, by Content-Length and by the bytes read, and ends the session', async () => {
    await expectError(await sendRaw('{}', { 'content-length': '5000' }), 413, /exceeds 1024 bytes/);
    // Like a 1009 on the websocket, the session ends: its lost message cannot leave calls hanging.
    expect(router.sessionCount).toBe(0);
    expect((await client.poll(sessionId, 0)).status).toBe(404);
    sessionId = await client.connect();
    const big = JSON.stringify({ message: { type: 'registerClient', client: { ...CLIENT, description: 'x'.repeat(2000) } } });
    const stream = new Blob([big]).stream();
    const response = await transport.app.request('/send', {
      method: 'POST',
      headers: { 'x-mdp-session-id': sessionId },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await expectError(response, 413, /exceeds 1024 bytes/);
    expect(router.clientCount).toBe(0);
    expect(router.sessionCount).toBe(0);
  });
});

describe('GET /poll', () => {
  it('answers 404 with an empty body for a missing or unknown session', async () => {
    await expectEmpty(await transport.app.request('/poll?waitMs=0'), 404);
    await expectEmpty(await transport.app.request('/poll?waitMs=0&sessionId=unknown'), 404);
    await expectEmpty(await transport.app.request('/poll?waitMs=0', { headers: { 'x-mdp-session-id': 'unknown' } }), 404);
  });

  it('refuses a malformed request with 400', async () => {
    const sessionId = await client.connect();
    await expectError(await transport.app.request(`/poll?waitMs=0&sessionId=${sessionId}&sessionId=x`), 400, /sessionId/);
  });

  it('answers 204 with an empty body when nothing is queued, by header or query', async () => {
    const sessionId = await client.connect();
    await expectEmpty(await client.poll(sessionId, 0), 204);
    await expectEmpty(await transport.app.request('/poll?waitMs=0', { headers: { 'x-mdp-session-id': sessionId } }), 204);
  });

  it('answers HEAD with 405 rather than swallowing a message', async () => {
    const sessionId = await client.register();
    const outcome = router.invoke('c1', 'GET', '/hello');
    const head = await transport.app.request(`/poll?waitMs=0&sessionId=${sessionId}`, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
    expect((await client.poll(sessionId, 0)).status).toBe(200);
    await router.close();
    expect((await outcome).ok).toBe(false);
  });
});

describe('POST /disconnect', () => {
  it('answers 204 for a known, unknown or missing session', async () => {
    const sessionId = await client.connect();
    await expectEmpty(await client.disconnect(sessionId), 204);
    await expectEmpty(await client.disconnect(sessionId), 204);
    await expectEmpty(await post('/disconnect', undefined), 204);
  });

  it('refuses a malformed request with 400', async () => {
    const sessionId = await client.connect();
    await expectError(await post(`/disconnect?sessionId=${sessionId}&sessionId=x`, undefined), 400, /sessionId/);
    expect(transport.sessionCount).toBe(1);
  });

  it('ends the session: poll and send answer 404, pending calls fail at once', async () => {
    const sessionId = await client.register();
    const outcome = router.invoke('c1', 'GET', '/hello');
    expect(router.pendingCount).toBe(1);
    expect((await client.disconnect(sessionId)).status).toBe(204);
    expect(await outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    await expectEmpty(await client.poll(sessionId, 0), 404);
    await expectEmpty(await client.send(sessionId, { type: 'pong' }), 404);
    expect(transport.sessionCount).toBe(0);
    expect(router.sessionCount).toBe(0);
    expect(router.getClient('c1')).toBeUndefined();
  });
});

describe('mounted under a server app', () => {
  it('serves the routes at the mount point and leaves CORS preflight to the app', async () => {
    const server = new Hono();
    server.use('/mdp/http-loop/*', cors({ origin: (origin) => origin, credentials: true }));
    server.route('/mdp/http-loop', transport.app);
    const mounted = loopClient((path, init) => server.request(`/mdp/http-loop${path}`, init));
    const sessionId = await mounted.register();
    expect(router.getClient('c1')?.sessionId).toBe(sessionId);

    for (const path of ['/connect', '/send', '/poll', '/disconnect']) {
      const preflight = await server.request(`/mdp/http-loop${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://app.test',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, x-mdp-session-id',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://app.test');
    }
    const polled = await server.request(`/mdp/http-loop/poll?waitMs=0&sessionId=${sessionId}`, { headers: { origin: 'http://app.test' } });
    expect(polled.status).toBe(204);
    expect(polled.headers.get('access-control-allow-origin')).toBe('http://app.test');
  });
});

describe('unexpected errors', () => {
  it('become a plain 500 that does not echo the message', async () => {
    const broken = new Router();
    vi.spyOn(broken, 'handleMessage').mockImplementation(() => {
      throw new Error('secret detail');
    });
    const brokenTransport = createHttpLoopTransport(broken);
    const brokenClient = loopClient((path, init) => brokenTransport.app.request(path, init));
    const sessionId = await brokenClient.connect();
    const response = await brokenClient.send(sessionId, { type: 'pong' });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: 'Internal error' });
    await brokenTransport.close();
    await broken.close();
  });
});

describe('options', () => {
  it('refuses invalid limits', () => {
    expect(() => createHttpLoopTransport(router, { longPollTimeoutMs: -1 })).toThrow(RangeError);
    expect(() => createHttpLoopTransport(router, { maxBodyBytes: 0 })).toThrow(RangeError);
  });
});
