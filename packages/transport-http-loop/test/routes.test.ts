/**
 * Every status of SPEC §6, the mailbox rules over real connections, body limits and auth: one
 * suite run against both adapters on a real socket (`handleNode` under a bare node:http listener,
 * the Hono routes of `@mdp/transport-http-loop/hono` under @hono/node-server). What only one
 * adapter has (Hono in process and under a server app, `extraHeaders` of `handleNode`) follows.
 */
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders, type Server } from 'node:http';
import { connect as netConnect } from 'node:net';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { Router, encodeAuthCookie } from '@mdp/core';
import type { AuthContext } from '@mdp/protocol';
import {
  LOOP_CLIENT as CLIENT,
  loopClient,
  polledMessage,
  recordingLogger,
  watchSessions,
  type LoopClient,
  type RecordingLogger,
  type SessionWatch,
} from '@mdp/test-kit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHttpLoopRoutes } from '../src/hono.js';
import { createHttpLoopTransport, type HttpLoopOptions, type HttpLoopTransport } from '../src/index.js';
import { ADAPTERS, MOUNT, serveHandleNode, stopServing } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A router whose every message handling fails unexpectedly. */
function brokenRouter(): Router {
  const router = new Router();
  vi.spyOn(router, 'handleMessage').mockImplementation(() => {
    throw new Error('secret detail');
  });
  return router;
}

/** What `rawRequest` sends as headers: a map, or names and values in turn (each repeat its own line). */
type RawHeaders = OutgoingHttpHeaders | readonly string[];

/**
 * A request with node's own client, for what fetch will not send: a lying Content-Length, a body
 * in several chunks, a repeated header. Answers as soon as the response is complete, whether or
 * not the whole body was sent.
 */
function rawRequest(port: number, method: string, path: string, headers: RawHeaders, chunks: readonly string[] = []): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // Given as a list, headers are sent as they stand: node adds no Host then.
    const sent = Array.isArray(headers) ? ['Host', `127.0.0.1:${port}`, ...headers] : headers;
    const req = httpRequest({ host: '127.0.0.1', port, method, path: `${MOUNT}${path}`, headers: sent, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
    for (const chunk of chunks) req.write(chunk);
    if (chunks.length > 0) req.end();
  });
}

async function expectEmpty(response: Response, status: number): Promise<void> {
  expect(response.status).toBe(status);
  expect(await response.text()).toBe('');
}

async function expectError(response: Response | RawResponse, status: number, pattern: RegExp): Promise<void> {
  expect(response.status).toBe(status);
  // Not `instanceof Response`: @hono/node-server replaces the global Response class.
  const text = typeof response.body === 'string' ? response.body : await (response as Response).text();
  const body = JSON.parse(text) as { error: unknown };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatch(pattern);
}

describe.each(ADAPTERS)('HTTP loop routes: %s', (_name, serveAdapter) => {
  let router: Router;
  let sessions: SessionWatch;
  let transport: HttpLoopTransport;
  let server: Server;
  let port: number;
  let client: LoopClient;
  let logs: RecordingLogger;

  async function setUp(options: HttpLoopOptions = {}, given: Router = new Router()): Promise<void> {
    router = given;
    sessions = watchSessions(router);
    logs = recordingLogger();
    transport = createHttpLoopTransport(router, { maxBodyBytes: 1024, logger: logs.logger, ...options });
    ({ server, port } = await serveAdapter(transport, 418));
    client = loopClient((path, init) => fetch(`http://127.0.0.1:${port}${MOUNT}${path}`, init));
  }

  afterEach(() => stopServing(transport, router, server));

  const raw = (method: string, path: string, headers: RawHeaders, chunks: readonly string[] = []): Promise<RawResponse> =>
    rawRequest(port, method, path, headers, chunks);

  const post = (path: string, body: string | undefined, headers: Record<string, string> = {}): Promise<Response> =>
    client.fetch(path, { method: 'POST', headers, body });

  /** Start a long poll, wait until the server holds it, abort it from the client side. */
  async function abortedPoll(sessionId: string): Promise<void> {
    const controller = new AbortController();
    const started = logs.next('poll.start');
    const poll = client.poll(sessionId, 60_000, { signal: controller.signal });
    await started;
    controller.abort();
    await expect(poll).rejects.toThrow();
  }

  describe('POST /connect', () => {
    it('opens a session for an empty body and for {}', async () => {
      await setUp();
      for (const body of [undefined, '', '{}', ' { "extra": 1 } ']) {
        const response = await post('/connect', body);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('application/json');
        const json = (await response.json()) as { sessionId: string };
        expect(Object.keys(json)).toEqual(['sessionId']);
        expect(json.sessionId).toMatch(UUID);
      }
      expect(transport.sessionCount).toBe(4);
      expect(router.sessionCount).toBe(4);
    });

    it('refuses invalid JSON, non-objects and non-UTF-8 bodies with 400', async () => {
      await setUp();
      await expectError(await post('/connect', '{nope'), 400, /Invalid JSON/);
      for (const body of ['[]', 'null', '"x"', '3']) await expectError(await post('/connect', body), 400, /JSON object/);
      const latin1 = await client.fetch('/connect', { method: 'POST', body: new Uint8Array([0x7b, 0xe9, 0x7d]) });
      await expectError(latin1, 400, /not UTF-8/);
      expect(transport.sessionCount).toBe(0);
    });

    it('reads a body sent in several chunks, with a BOM', async () => {
      await setUp();
      const response = await raw('POST', '/connect', {}, ['\uFEFF{"a":', '"b', '"}']);
      expect(response.status).toBe(200);
      expect(JSON.parse(response.body)).toEqual({ sessionId: expect.stringMatching(UUID) });
    });

    it('refuses a body over the limit with 413, by Content-Length and by the bytes read', async () => {
      await setUp();
      // Declared too long: answered before any byte of the body is sent.
      const declared = await raw('POST', '/connect', { 'content-length': '5000' });
      await expectError(declared, 413, /exceeds 1024 bytes/);
      expect(declared.headers.connection).toBe('close');
      const streamed = await raw('POST', '/connect', {}, [`{"pad":"${'x'.repeat(600)}`, `${'x'.repeat(600)}"}`]);
      await expectError(streamed, 413, /exceeds 1024 bytes/);
      expect(streamed.headers['transfer-encoding']).toBeUndefined();
      expect(transport.sessionCount).toBe(0);
    });

    it('keeps the transport auth of the connect request', async () => {
      await setUp();
      const sessionId = await client.connect({ headers: { authorization: 'Bearer t0', 'x-mdp-auth-tenant': 't1' } });
      expect(sessions.session(sessionId).transportAuth).toEqual({
        scheme: 'Bearer',
        token: 't0',
        headers: { authorization: 'Bearer t0', 'x-mdp-auth-tenant': 't1' },
      });
      expect(sessions.session(sessionId).transportKind).toBe('http-loop');
    });

    it('reads repeated auth headers as one map: values joined by ", ", cookies by "; "', async () => {
      await setUp();
      const cookie = `mdp_auth=${encodeAuthCookie({ token: 'from-cookie' })}`;
      const headers = [
        'Authorization',
        'Bearer a',
        'authorization',
        'Bearer b',
        'X-MDP-Auth-Tenant',
        't1',
        'x-mdp-auth-tenant',
        't2',
        'Cookie',
        'other=1',
        'cookie',
        cookie,
      ];
      const response = await raw('POST', '/connect', headers, ['{}']);
      const { sessionId } = JSON.parse(response.body) as { sessionId: string };
      expect(sessions.session(sessionId).transportAuth).toEqual({
        scheme: 'Bearer',
        token: 'a, Bearer b',
        headers: { authorization: 'Bearer a, Bearer b', cookie: `other=1; ${cookie}`, 'x-mdp-auth-tenant': 't1, t2' },
      });
    });

    it('reads other repeated headers the same way when Authorization comes once', async () => {
      await setUp();
      const cookie = `mdp_auth=${encodeAuthCookie({ token: 'from-cookie' })}`;
      const headers = ['X-MDP-Auth-Tenant', 't1', 'Authorization', 'Bearer a', 'x-mdp-auth-tenant', 't2', 'Cookie', 'other=1', 'cookie', cookie];
      const response = await raw('POST', '/connect', headers, ['{}']);
      const { sessionId } = JSON.parse(response.body) as { sessionId: string };
      expect(sessions.session(sessionId).transportAuth).toEqual({
        scheme: 'Bearer',
        token: 'a',
        headers: { authorization: 'Bearer a', cookie: `other=1; ${cookie}`, 'x-mdp-auth-tenant': 't1, t2' },
      });
    });

    it('answers 401 when authorize refuses the transport auth', async () => {
      const seen: (AuthContext | undefined)[] = [];
      await setUp({
        authorize: (auth) => {
          seen.push(auth);
          return auth?.token === 'good';
        },
      });
      await expectError(await post('/connect', undefined, { authorization: 'Bearer bad' }), 401, /^Unauthorized$/);
      await expectError(await post('/connect', undefined), 401, /^Unauthorized$/);
      expect(transport.sessionCount).toBe(0);
      expect((await post('/connect', undefined, { authorization: 'Bearer good' })).status).toBe(200);
      expect(seen.map((auth) => auth?.token)).toEqual(['bad', undefined, 'good']);
      expect(transport.sessionCount).toBe(1);
    });

    it('uses the configured extractAuth on the lower-case header map', async () => {
      await setUp({ extractAuth: (headers) => ({ token: String(headers['x-custom']) }) });
      const sessionId = await client.connect({ headers: { 'X-Custom': 'abc' } });
      expect(sessions.session(sessionId).transportAuth).toEqual({ token: 'abc' });
    });

    it('answers 503 once the transport is closed', async () => {
      await setUp();
      await transport.close();
      await expectError(await post('/connect', undefined), 503, /^Server is shutting down$/);
    });
  });

  describe('POST /send', () => {
    it('accepts a client message with 202 {ok: true}', async () => {
      await setUp();
      const sessionId = await client.connect();
      const response = await client.send(sessionId, { type: 'registerClient', client: CLIENT });
      expect(response.status).toBe(202);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(await response.text()).toBe('{"ok":true}');
      expect(router.getClient('c1')).toMatchObject({ sessionId, transportKind: 'http-loop' });
    });

    it('finds the session by header or by query, the header winning', async () => {
      await setUp();
      const sessionId = await client.connect();
      const message = JSON.stringify({ message: { type: 'pong' } });
      expect((await post(`/send?sessionId=${sessionId}`, message)).status).toBe(202);
      expect((await post(`/send?a=1&sessionId=${encodeURIComponent(sessionId)}&b=%20`, message)).status).toBe(202);
      expect((await post('/send?sessionId=nope', message, { 'x-mdp-session-id': sessionId })).status).toBe(202);
      await expectEmpty(await post(`/send?sessionId=${sessionId}`, message, { 'x-mdp-session-id': 'nope' }), 404);
    });

    it('answers 404 with an empty body for a missing or unknown session', async () => {
      await setUp();
      const message = JSON.stringify({ message: { type: 'pong' } });
      await expectEmpty(await post('/send', message), 404);
      await expectEmpty(await post('/send', message, { 'x-mdp-session-id': '00000000-0000-4000-8000-000000000000' }), 404);
    });

    it('refuses a session id given twice with different values with 400', async () => {
      await setUp();
      const sessionId = await client.connect();
      const message = JSON.stringify({ message: { type: 'pong' } });
      await expectError(await post(`/send?sessionId=${sessionId}&sessionId=other`, message), 400, /sessionId/);
      // Even with the header present: one source naming two sessions is ambiguous.
      await expectError(await post(`/send?sessionId=${sessionId}&sessionId=other`, message, { 'x-mdp-session-id': sessionId }), 400, /sessionId/);
      const twice = await raw('POST', '/send', { 'x-mdp-session-id': [sessionId, 'other'] }, [message]);
      await expectError(twice, 400, /x-mdp-session-id/);
    });

    /** Connect, and send raw bodies on that session. */
    async function sendingRaw(): Promise<{ sessionId: string; sendRaw: (body: string) => Promise<Response> }> {
      await setUp();
      const sessionId = await client.connect();
      return { sessionId, sendRaw: (body) => post('/send', body, { 'content-type': 'application/json', 'x-mdp-session-id': sessionId }) };
    }

    it('refuses invalid JSON with 400', async () => {
      const { sendRaw } = await sendingRaw();
      await expectError(await sendRaw('{"message":'), 400, /Invalid JSON/);
      await expectError(await sendRaw(''), 400, /Invalid JSON/);
    });

    it('refuses a body that is not an object or has no message with 400', async () => {
      const { sendRaw } = await sendingRaw();
      await expectError(await sendRaw('[1]'), 400, /JSON object/);
      await expectError(await sendRaw('{}'), 400, /^message: required$/);
      await expectError(await sendRaw('{"message":"hi"}'), 400, /^message: must be a JSON object$/);
    });

    it('refuses an invalid message with 400 naming the field', async () => {
      const { sessionId } = await sendingRaw();
      await expectError(await client.send(sessionId, { type: 'registerClient', client: { ...CLIENT, id: '' } }), 400, /^message\.client\.id: /);
      await expectError(await client.send(sessionId, { type: 'teleport' }), 400, /^message\.type: /);
      await expectError(await client.send(sessionId, { type: 'unregisterClient' }), 400, /^message\.clientId: /);
    });

    it('refuses a server-to-client message with 400', async () => {
      const { sessionId } = await sendingRaw();
      const callClient = { type: 'callClient', requestId: 'r1', clientId: 'c1', method: 'GET', path: '/hello' };
      await expectError(await client.send(sessionId, callClient), 400, /^message\.type: callClient is a server-to-client message$/);
    });

    it('answers a handling error (catalog update for a client not on this session) with 400', async () => {
      const { sessionId } = await sendingRaw();
      const other = await client.register();
      const update = { type: 'updateClientCatalog', clientId: 'c1', paths: [] };
      await expectError(await client.send(sessionId, update), 400, /"c1" is not registered on this session/);
      expect(router.getClient('c1')?.paths).toHaveLength(2);
      expect((await client.send(other, update)).status).toBe(202);
      expect(router.getClient('c1')?.paths).toHaveLength(0);
    });

    it('refuses a body over the limit with 413, by Content-Length and by streamed bytes, and ends the session', async () => {
      await setUp();
      let sessionId = await client.register();
      const declared = await raw('POST', '/send', { 'x-mdp-session-id': sessionId, 'content-length': '5000' });
      await expectError(declared, 413, /exceeds 1024 bytes/);
      expect(declared.headers.connection).toBe('close');
      // Like a 1009 on the websocket, the session ends: its lost message cannot leave calls hanging.
      expect(router.sessionCount).toBe(0);
      expect(router.getClient('c1')).toBeUndefined();
      await expectEmpty(await client.poll(sessionId, 0), 404);

      sessionId = await client.register();
      const big = JSON.stringify({ message: { type: 'pong', pad: 'x'.repeat(2000) } });
      const streamed = await raw('POST', '/send', { 'x-mdp-session-id': sessionId }, [big.slice(0, 700), big.slice(700, 1400), big.slice(1400)]);
      await expectError(streamed, 413, /exceeds 1024 bytes/);
      expect(router.sessionCount).toBe(0);
      expect(router.clientCount).toBe(0);
    });
  });

  describe('GET /poll', () => {
    it('runs connect, register, poll, result and disconnect', async () => {
      await setUp();
      const sessionId = await client.register();
      const outcome = router.invoke('c1', 'GET', '/hello', { query: { q: 'x' } });
      const response = await client.poll(sessionId, 1000);
      expect(response.headers.get('content-type')).toBe('application/json');
      const body = (await response.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['message']);
      const message = body.message as Record<string, unknown>;
      expect(message).toMatchObject({ type: 'callClient', clientId: 'c1', path: '/hello', query: { q: 'x' } });
      await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 42 });
      expect(await outcome).toEqual({ ok: true, data: 42 });
      await expectEmpty(await client.disconnect(sessionId), 204);
      expect(transport.sessionCount).toBe(0);
    });

    it('delivers queued messages in order, each once, then answers 204', async () => {
      await setUp();
      const sessionId = await client.register();
      const outcomes = [1, 2, 3].map((i) => router.invoke('c1', 'GET', '/hello', { query: { i: String(i) } }));
      const polled = [];
      for (let i = 0; i < 3; i++) polled.push(await polledMessage(await client.poll(sessionId, 0)));
      expect(polled.map((message) => (message.query as { i: string }).i)).toEqual(['1', '2', '3']);
      await expectEmpty(await client.poll(sessionId, 0), 204);
      await router.close();
      await Promise.all(outcomes);
    });

    it('answers 404 with an empty body for a missing or unknown session', async () => {
      await setUp();
      await expectEmpty(await client.fetch('/poll?waitMs=0'), 404);
      await expectEmpty(await client.fetch('/poll?waitMs=0&sessionId=unknown'), 404);
      await expectEmpty(await client.fetch('/poll?waitMs=0', { headers: { 'x-mdp-session-id': 'unknown' } }), 404);
    });

    it('refuses a malformed request with 400', async () => {
      await setUp();
      const sessionId = await client.connect();
      await expectError(await client.fetch(`/poll?waitMs=0&sessionId=${sessionId}&sessionId=x`), 400, /sessionId/);
    });

    it('answers 204 with an empty body when nothing is queued, by header or query', async () => {
      await setUp();
      const sessionId = await client.connect();
      await expectEmpty(await client.poll(sessionId, 0), 204);
      await expectEmpty(await client.fetch('/poll?waitMs=0', { headers: { 'x-mdp-session-id': sessionId } }), 204);
    });

    it('answers HEAD with 405 rather than swallowing a message', async () => {
      await setUp();
      const sessionId = await client.register();
      const outcome = router.invoke('c1', 'GET', '/hello');
      const head = await client.fetch(`/poll?waitMs=0&sessionId=${sessionId}`, { method: 'HEAD' });
      expect(head.status).toBe(405);
      expect(head.headers.get('allow')).toBe('GET');
      expect((await client.poll(sessionId, 0)).status).toBe(200);
      await router.close();
      expect((await outcome).ok).toBe(false);
    });

    it('waits waitMs, or the configured time-out when waitMs is missing or invalid', async () => {
      // Heartbeat pings would answer a waiting poll; keep them out. How long a wait lasts is
      // measured with fake timers in poll.test.ts; here each adapter hands the routes its query.
      await setUp({ longPollTimeoutMs: 15 }, new Router({ heartbeatIntervalMs: 60_000, heartbeatTimeoutMs: 120_000 }));
      const sessionId = await client.connect();
      for (const [query, waitMs] of [
        ['&waitMs=10', 10],
        ['', 15],
        ['&waitMs=soon', 15],
        ['&waitMs=-1', 15],
      ] as const) {
        const started = logs.next('poll.start');
        const emptied = logs.next('poll.empty');
        await expectEmpty(await client.fetch(`/poll?sessionId=${sessionId}${query}`), 204);
        expect(await started).toMatchObject({ sessionId, waitMs });
        expect(await emptied).toMatchObject({ sessionId, reason: 'timeout' });
      }
    });

    it('answers a waiting poll when a message arrives', async () => {
      await setUp();
      const sessionId = await client.register();
      const started = logs.next('poll.start');
      const poll = client.poll(sessionId, 60_000);
      await started;
      const outcome = router.invoke('c1', 'GET', '/hello');
      expect((await polledMessage(await poll)).type).toBe('callClient');
      await router.close();
      await outcome;
    });

    it('answers the older poll with 204 when a newer one arrives', async () => {
      await setUp();
      const sessionId = await client.register();
      let started = logs.next('poll.start');
      const first = client.poll(sessionId, 60_000);
      await started;
      started = logs.next('poll.start');
      const second = client.poll(sessionId, 60_000);
      await started;
      await expectEmpty(await first, 204);
      const outcome = router.invoke('c1', 'GET', '/hello');
      expect((await polledMessage(await second)).type).toBe('callClient');
      await router.close();
      await outcome;
    });

    it('does not lose a callClient to a poll aborted before it arrived', async () => {
      await setUp();
      const sessionId = await client.register();
      const gone = logs.next('poll.abandoned');
      await abortedPoll(sessionId);
      await gone; // the server has seen the connection close
      const outcome = router.invoke('c1', 'GET', '/hello');
      const message = await polledMessage(await client.poll(sessionId, 1000));
      expect(message.type).toBe('callClient');
      await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'late but there' });
      expect(await outcome).toEqual({ ok: true, data: 'late but there' });
    });

    it('does not lose a callClient that arrives right as the poll is aborted', async () => {
      await setUp();
      const sessionId = await client.register();
      await abortedPoll(sessionId);
      // No waiting for the server to notice: the message races the connection close.
      const outcome = router.invoke('c1', 'GET', '/hello');
      const message = await polledMessage(await client.poll(sessionId, 1000));
      expect(message.type).toBe('callClient');
      await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 1 });
      expect(await outcome).toEqual({ ok: true, data: 1 });
    });

    it('puts a message back at the head when its response closes before it finished', async () => {
      // The message is larger than the default queue bound (8 MiB).
      await setUp({ maxQueuedBytes: 64 * 1024 * 1024 });
      const sessionId = await client.register();
      // The callClient carries the query twice: ~12 MB, far more than the loopback socket buffers
      // hold (send buffer at most 4 MB here), so the response cannot finish while the client does
      // not read.
      const big = 'x'.repeat(6 * 1024 * 1024);
      const outcomes = [router.invoke('c1', 'GET', '/hello', { query: { big } }), router.invoke('c1', 'GET', '/hello', { query: { i: '2' } })];
      const requeued = logs.next('poll.requeued');
      const socket = netConnect(port, '127.0.0.1');
      socket.write(`GET ${MOUNT}/poll?waitMs=0 HTTP/1.1\r\nHost: x\r\nx-mdp-session-id: ${sessionId}\r\n\r\n`);
      const head = await new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1', 0, 12))));
      expect(head).toBe('HTTP/1.1 200');
      socket.destroy();
      expect(await requeued).toMatchObject({ sessionId, type: 'callClient' });
      const again = await polledMessage(await client.poll(sessionId, 0));
      const next = await polledMessage(await client.poll(sessionId, 0));
      expect((again.query as { big: string }).big).toHaveLength(big.length);
      expect(next.query).toEqual({ i: '2' });
      await router.close();
      await Promise.all(outcomes);
    });
  });

  describe('POST /disconnect', () => {
    it('answers 204 for a known, unknown or missing session', async () => {
      await setUp();
      const sessionId = await client.connect();
      await expectEmpty(await client.disconnect(sessionId), 204);
      await expectEmpty(await client.disconnect(sessionId), 204);
      await expectEmpty(await post('/disconnect', undefined), 204);
    });

    it('refuses a malformed request with 400', async () => {
      await setUp();
      const sessionId = await client.connect();
      await expectError(await post(`/disconnect?sessionId=${sessionId}&sessionId=x`, undefined), 400, /sessionId/);
      expect(transport.sessionCount).toBe(1);
    });

    it('ends the session: poll and send answer 404, pending calls fail at once', async () => {
      await setUp();
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

  describe('sessions', () => {
    it('refreshes last-seen and replaces the transport auth on every send and poll', async () => {
      await setUp();
      const sessionId = await client.connect();
      const session = sessions.session(sessionId);
      session.lastSeen = 0;
      await client.poll(sessionId, 0, { headers: { authorization: 'Bearer p1' } });
      expect(session.lastSeen).toBeGreaterThan(0);
      expect(session.transportAuth).toMatchObject({ scheme: 'Bearer', token: 'p1' });
      session.lastSeen = 0;
      await client.send(sessionId, { type: 'pong' }, { 'x-mdp-auth-tenant': 't2' });
      expect(session.lastSeen).toBeGreaterThan(0);
      expect(session.transportAuth).toEqual({ headers: { 'x-mdp-auth-tenant': 't2' } });
      await client.poll(sessionId, 0);
      expect(session.transportAuth).toBeUndefined();
    });
  });

  describe('other requests', () => {
    it('answers 404 with an empty body for an unknown route or method under the mount point', async () => {
      await setUp();
      await expectEmpty(await client.fetch('/nope'), 404);
      await expectEmpty(await client.fetch('/poll/deeper'), 404);
      await expectEmpty(await client.fetch('/connect'), 404);
      await expectEmpty(await client.fetch('/poll', { method: 'POST' }), 404);
      await expectEmpty(await client.fetch('/send', { method: 'PUT', body: '{}' }), 404);
      expect(transport.sessionCount).toBe(0);
      // Outside the mount point the server's own answer stands.
      expect((await fetch(`http://127.0.0.1:${port}/elsewhere`)).status).toBe(418);
    });

    it('turns an unexpected error into a plain 500 that does not echo the message', async () => {
      await setUp({}, brokenRouter());
      const sessionId = await client.connect();
      const failed = logs.next('request.failed');
      const response = await client.send(sessionId, { type: 'pong' });
      expect(response.status).toBe(500);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(await response.text()).toBe('{"error":"Internal error"}');
      expect(await failed).toMatchObject({ path: '/send', error: { message: 'secret detail' } });
    });
  });
});

describe('Hono routes in process (app.request)', () => {
  let router: Router;
  let transport: HttpLoopTransport;
  let app: Hono;

  const setUp = (): void => {
    router = new Router();
    transport = createHttpLoopTransport(router, { maxBodyBytes: 1024 });
    app = createHttpLoopRoutes(transport);
  };

  afterEach(async () => {
    await transport.close();
    await router.close();
  });

  it('lists a client connected over https as secure, one over http as not', async () => {
    setUp();
    const client = loopClient((path, init) => app.request(path, init));
    for (const [url, id, secure] of [
      ['https://mdp.test/connect', 'tls', true],
      ['http://mdp.test/connect', 'plain', false],
    ] as const) {
      const response = await app.request(url, { method: 'POST', body: '{}' });
      const { sessionId } = (await response.json()) as { sessionId: string };
      expect((await client.send(sessionId, { type: 'registerClient', client: { ...CLIENT, id } })).status).toBe(202);
      expect(router.getClient(id)).toMatchObject({ sessionId, secure });
    }
  });

  it('serves the routes at the mount point of a server app and leaves CORS preflight to the app', async () => {
    setUp();
    const server = new Hono();
    server.use('/mdp/http-loop/*', cors({ origin: (origin) => origin, credentials: true }));
    server.route('/mdp/http-loop', app);
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

  it('lets a preflight go on to a CORS middleware added after the routes', async () => {
    setUp();
    const server = new Hono();
    server.route('/mdp/http-loop', app);
    server.options('*', (c) => c.body(null, 204, { 'access-control-allow-origin': '*' }));
    const preflight = await server.request('/mdp/http-loop/connect', { method: 'OPTIONS' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('refuses a transport that createHttpLoopTransport did not make', () => {
    setUp();
    expect(() => createHttpLoopRoutes({ ...transport })).toThrow(TypeError);
  });
});

describe('handleNode: extraHeaders', () => {
  let router: Router;
  let transport: HttpLoopTransport;
  let server: Server;
  let client: LoopClient;
  let logs: RecordingLogger;

  async function setUp(options: HttpLoopOptions, given: Router = new Router()): Promise<number> {
    router = given;
    logs = recordingLogger();
    transport = createHttpLoopTransport(router, { maxBodyBytes: 1024, logger: logs.logger, ...options });
    let port: number;
    ({ server, port } = await serveHandleNode(transport));
    client = loopClient((path, init) => fetch(`http://127.0.0.1:${port}${MOUNT}${path}`, init));
    return port;
  }

  afterEach(() => stopServing(transport, router, server));

  it('are merged into every answer, computed from the request, without replacing the framing', async () => {
    const origins: (string | undefined)[] = [];
    const port = await setUp({
      extraHeaders: (req) => {
        origins.push(req.headers.origin);
        return { 'access-control-allow-origin': req.headers.origin ?? '*', 'content-type': 'text/plain', 'content-length': '1' };
      },
    });
    const origin = { origin: 'http://app.test' };
    const sessionId = await client.connect({ headers: origin });
    const answers = [
      await client.send(sessionId, { type: 'pong' }, origin), // 202
      await client.send(sessionId, { type: 'teleport' }, origin), // 400
      await client.poll(sessionId, 0, { headers: origin }), // 204
      await client.poll('unknown', 0, { headers: origin }), // 404
      await client.fetch(`/poll?sessionId=${sessionId}`, { method: 'HEAD', headers: origin }), // 405
    ];
    expect(answers.map((response) => response.status)).toEqual([202, 400, 204, 404, 405]);
    for (const response of answers) expect(response.headers.get('access-control-allow-origin')).toBe('http://app.test');
    expect(answers[0]?.headers.get('content-type')).toBe('application/json');
    expect(await answers[0]?.text()).toBe('{"ok":true}');
    expect(await answers[3]?.text()).toBe('');
    const tooLarge = await rawRequest(port, 'POST', '/send', { ...origin, 'x-mdp-session-id': sessionId, 'content-length': '5000' });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers['access-control-allow-origin']).toBe('http://app.test');
    expect(origins.every((value) => value === 'http://app.test')).toBe(true);
  });

  it('are merged into a 500 too', async () => {
    await setUp({ extraHeaders: () => ({ 'x-extra': 'yes' }) }, brokenRouter());
    const sessionId = await client.connect();
    const response = await client.send(sessionId, { type: 'pong' });
    expect(response.status).toBe(500);
    expect(response.headers.get('x-extra')).toBe('yes');
  });

  it('are computed when a long poll is answered', async () => {
    let calls = 0;
    await setUp({
      extraHeaders: () => {
        calls += 1;
        return { 'x-extra': 'yes' };
      },
    });
    const sessionId = await client.register();
    calls = 0;
    const started = logs.next('poll.start');
    const poll = client.poll(sessionId, 60_000);
    await started;
    expect(calls).toBe(0);
    const outcome = router.invoke('c1', 'GET', '/hello');
    const response = await poll;
    expect(response.status).toBe(200);
    expect(response.headers.get('x-extra')).toBe('yes');
    expect(calls).toBe(1);
    await router.close();
    await outcome;
  });
});
