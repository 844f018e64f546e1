/**
 * What the HTTP loop refuses (in-process with the Hono routes' `app.request`, so every request has the same unknown
 * address): calls after connect from anyone but the principal that connected (401), another
 * principal's client id (403), catalog changes over the rate (429), catalogs over the byte caps
 * (413) or the server's total (503), clients over the per-address cap (429), sessions over the caps (503),
 * queues over their bounds (the session ends), and queued calls whose callers left.
 */
import type { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Router, createAuthGate, createTokenPolicy, type RouterOptions } from '@mdp/core';
import { LOOP_CLIENT as CLIENT, loopClient, polledMessage, watchSessions, type LoopClient, type SessionWatch } from '@mdp/test-kit';
import { createHttpLoopRoutes } from '../src/hono.js';
import { HTTP_LOOP_DEFAULTS, createHttpLoopTransport, type HttpLoopOptions, type HttpLoopTransport } from '../src/index.js';

let router: Router;
let sessions: SessionWatch;
let transport: HttpLoopTransport;
let app: Hono;
let client: LoopClient;

function setUp(options: HttpLoopOptions = {}, routerOptions: RouterOptions = {}): void {
  router = new Router(routerOptions);
  sessions = watchSessions(router);
  transport = createHttpLoopTransport(router, options);
  app = createHttpLoopRoutes(transport);
  client = loopClient((path, init) => app.request(path, init));
}

afterEach(async () => {
  await transport.close();
  await router.close();
});

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function errorOf(response: Response): Promise<string> {
  return ((await response.json()) as { error: string }).error;
}

describe('under an auth policy, a session id alone is no credential', () => {
  const gate = createAuthGate(createTokenPolicy(['one', 'two']));
  const policy: HttpLoopOptions = { extractAuth: gate.extract, authorize: gate.allows, principalOf: gate.principalOf };

  async function owned(): Promise<string> {
    const sessionId = await client.connect({ headers: bearer('one') });
    const response = await client.send(sessionId, { type: 'registerClient', client: CLIENT }, bearer('one'));
    expect(response.status).toBe(202);
    return sessionId;
  }

  it.each([
    ['no token', {}],
    ['a wrong token', bearer('nope')],
    ["another principal's valid token", bearer('two')],
  ])('refuses send, poll and disconnect with %s (401) and leaves the session as it was', async (_label, headers) => {
    setUp(policy);
    const sessionId = await owned();
    const session = sessions.session(sessionId);
    const auth = session.transportAuth;
    const seen = session.lastSeen;
    const call = router.invoke('c1', 'GET', '/hello', { auth: { token: 'reader' } });

    const forged = [
      await client.send(sessionId, { type: 'callClientResult', requestId: 'x', ok: true }, headers),
      await client.poll(sessionId, 0, { headers }),
      await app.request('/disconnect', { method: 'POST', headers: { ...headers, 'x-mdp-session-id': sessionId } }),
    ];
    for (const response of forged) {
      expect(response.status).toBe(401);
      expect(await errorOf(response)).toBe('Unauthorized');
    }
    expect(session.closed).toBe(false);
    expect(session.transportAuth).toBe(auth);
    expect(session.lastSeen).toBe(seen);

    // The owner still gets the call (with the reader's credential) and answers it.
    const message = await polledMessage(await client.poll(sessionId, 0, { headers: bearer('one') }));
    expect(message).toMatchObject({ type: 'callClient', auth: { token: 'reader' } });
    expect((await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'real' }, bearer('one'))).status).toBe(202);
    expect(await call).toEqual({ ok: true, data: 'real' });
  });

  it('refreshes the transport auth from each request of the same principal', async () => {
    setUp(policy);
    const sessionId = await owned();
    await client.poll(sessionId, 0, { headers: { ...bearer('one'), 'x-mdp-auth-tab': '2' } });
    expect(sessions.session(sessionId).transportAuth).toMatchObject({ token: 'one', headers: { 'x-mdp-auth-tab': '2' } });
  });

  it('answers an unknown session 401 without a credential and 404 with one', async () => {
    setUp(policy);
    expect((await client.poll('00000000-0000-4000-8000-000000000000', 0)).status).toBe(401);
    expect((await client.poll('00000000-0000-4000-8000-000000000000', 0, { headers: bearer('two') })).status).toBe(404);
  });

  it("refuses another principal's registerClient for a held id with 403, and lets the same principal replace it", async () => {
    setUp(policy);
    const first = await owned();
    const intruder = await client.connect({ headers: bearer('two') });
    const refused = await client.send(intruder, { type: 'registerClient', client: CLIENT }, bearer('two'));
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toBe('Client id held by another principal');
    expect(router.getClient('c1')?.sessionId).toBe(first);

    const again = await client.connect({ headers: bearer('one') });
    expect((await client.send(again, { type: 'registerClient', client: CLIENT }, bearer('one'))).status).toBe(202);
    expect(router.getClient('c1')?.sessionId).toBe(again);
    expect((await client.poll(first, 0, { headers: bearer('one') })).status).toBe(404);
  });
});

describe('catalog rate', () => {
  it('answers 429 with Retry-After and keeps the session', async () => {
    setUp({}, { maxCatalogUpdatesPerMinute: 1 });
    const sessionId = await client.register();
    const response = await client.send(sessionId, { type: 'updateClientCatalog', clientId: 'c1', paths: [] });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('60');
    expect(await errorOf(response)).toMatch(/^Catalog changes over the limit of 1 per minute; retry in \d+ ms$/);
    expect(router.getClient('c1')?.paths).toEqual(CLIENT.paths);
  });
});

describe('catalog byte caps', () => {
  it('answer 413 naming the cap for a description, a schema or a catalog over it, keep the session and the old catalog', async () => {
    setUp({}, { maxDescriptionLength: 20, maxSchemaLength: 40, maxCatalogBytes: 400 });
    const sessionId = await client.register();
    const cases: Array<[unknown, string]> = [
      [
        { type: 'registerClient', client: { ...CLIENT, description: 'd'.repeat(21) } },
        'client.description is 21 characters long; at most 20 are allowed (maxDescriptionLength)',
      ],
      [
        { type: 'updateClientCatalog', clientId: 'c1', paths: [{ type: 'endpoint', method: 'POST', path: '/a', inputSchema: { d: 'x'.repeat(40) } }] },
        'paths[0].inputSchema is over 40 characters as JSON (maxSchemaLength)',
      ],
      [
        { type: 'updateClientCatalog', clientId: 'c1', paths: Array.from({ length: 20 }, (_, i) => ({ type: 'skill', path: `/s${i}/skill.md` })) },
        'Catalog is over 400 bytes as JSON (maxCatalogBytes)',
      ],
    ];
    for (const [message, error] of cases) {
      const response = await client.send(sessionId, message);
      expect(response.status).toBe(413);
      expect(response.headers.get('retry-after')).toBeNull();
      expect(await errorOf(response)).toBe(error);
    }
    expect(router.getClient('c1')?.descriptor).toEqual(CLIENT);
    // The session goes on: its client is served and may send a catalog within the caps.
    expect((await client.send(sessionId, { type: 'updateClientCatalog', clientId: 'c1', paths: [] })).status).toBe(202);
  });

  it('answers 503 with Retry-After for a catalog past the total of all catalogs', async () => {
    const bytes = Buffer.byteLength(JSON.stringify(CLIENT));
    setUp({}, { maxTotalCatalogBytes: bytes });
    await client.register();
    const other = await client.connect();
    const response = await client.send(other, { type: 'registerClient', client: { ...CLIENT, id: 'c2' } });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await errorOf(response)).toBe(`Catalogs here hold ${bytes} bytes; ${bytes} more would pass maxTotalCatalogBytes (${bytes}); try again later`);
    expect(router.hasClient('c2')).toBe(false);
  });
});

describe('clients per address', () => {
  /** The routes as a request from `address` reaches them (Hono's node server hands over the socket). */
  const from = (address: string) => loopClient((path, init) => app.request(path, init, { incoming: { socket: { remoteAddress: address } } }));

  it('answer 429 naming the cap past maxClientsPerAddress, keep the session, and take it once a client leaves', async () => {
    setUp({}, { maxClientsPerAddress: 2 });
    const a = from('10.0.0.1');
    const first = await a.register({ ...CLIENT, id: 'a1' });
    await a.register({ ...CLIENT, id: 'a2' });
    const third = await a.connect();
    const refused = await a.send(third, { type: 'registerClient', client: { ...CLIENT, id: 'a3' } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(await errorOf(refused)).toBe('Too many clients from this address (maxClientsPerAddress 2)');
    // Another address is not concerned.
    await from('10.0.0.2').register({ ...CLIENT, id: 'b1' });
    expect((await a.disconnect(first)).status).toBe(204);
    expect((await a.send(third, { type: 'registerClient', client: { ...CLIENT, id: 'a3' } })).status).toBe(202);
    expect(router.hasClient('a3')).toBe(true);
  });
});

describe('session caps', () => {
  it('answer 503 with Retry-After past the per-address cap, and connect again once one leaves', async () => {
    setUp({ maxSessions: 10, maxSessionsPerAddress: 2 });
    const first = await client.connect();
    await client.register();
    const refused = await app.request('/connect', { method: 'POST' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await errorOf(refused)).toBe('Too many HTTP loop sessions from this address (limit 2); try again later');
    // The sessions already there are served meanwhile.
    expect((await client.poll(first, 0)).status).toBe(204);
    expect((await client.disconnect(first)).status).toBe(204);
    await client.connect();
    expect(transport.sessionCount).toBe(2);
  });

  it('answer 503 past the total cap, and count a session core closed as gone', async () => {
    setUp({ maxSessions: 2, maxSessionsPerAddress: 5 });
    const older = await client.register();
    const newer = await client.connect();
    expect(await errorOf(await app.request('/connect', { method: 'POST' }))).toBe('Too many HTTP loop sessions (limit 2); try again later');
    // The newer session registers c1 and replaces the older: core closed it, which freed its place.
    expect((await client.send(newer, { type: 'registerClient', client: CLIENT })).status).toBe(202);
    expect((await client.poll(older, 0)).status).toBe(404);
    await client.connect();
    expect(transport.sessionCount).toBe(2);
  });

  it('have documented defaults', () => {
    expect(HTTP_LOOP_DEFAULTS).toEqual({
      longPollTimeoutMs: 25_000,
      maxBodyBytes: 1_048_576,
      maxSessions: 10_000,
      maxSessionsPerAddress: 2_000,
      maxQueuedMessages: 10_000,
      maxQueuedBytes: 8 * 1024 * 1024,
      idleTimeoutMs: 10_000,
    });
  });
});

describe('queue bounds', () => {
  it('refuse a call the full queue cannot take at once (not_ready, retry hint) and keep the session', async () => {
    setUp({ maxQueuedMessages: 3 });
    const sessionId = await client.register();
    const calls = Array.from({ length: 4 }, () => router.invoke('c1', 'GET', '/hello'));
    expect(await calls[3]).toEqual({
      ok: false,
      source: 'server',
      error: {
        code: 'not_ready',
        message: expect.stringMatching(
          /^HTTP loop queue full \(3 messages, \d+ bytes waiting; at most 3 messages, \d+ bytes\): the client is behind; try again later$/,
        ),
        details: { retryAfterMs: 1000 },
      },
    });
    expect(router.hasClient('c1')).toBe(true);
    // The client polls and answers the three it was given.
    for (let i = 0; i < 3; i++) {
      const message = await polledMessage(await client.poll(sessionId, 0));
      await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: i });
    }
    expect(await Promise.all(calls.slice(0, 3))).toEqual([0, 1, 2].map((data) => ({ ok: true, data })));
  });

  it('never deliver a queued call whose caller went away', async () => {
    setUp();
    const sessionId = await client.register();
    const controller = new AbortController();
    const gone = router.invoke('c1', 'GET', '/hello', { signal: controller.signal });
    const kept = router.invoke('c1', 'GET', '/hello', { query: { kept: '1' } });
    controller.abort();
    expect(await gone).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    const message = await polledMessage(await client.poll(sessionId, 0));
    expect(message.query).toEqual({ kept: '1' });
    expect((await client.poll(sessionId, 0)).status).toBe(204);
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true });
    expect(await kept).toEqual({ ok: true });
  });
});

describe('options', () => {
  it('refuses invalid limits', () => {
    const router = new Router();
    expect(() => createHttpLoopTransport(router, { longPollTimeoutMs: -1 })).toThrow(RangeError);
    expect(() => createHttpLoopTransport(router, { maxBodyBytes: 0 })).toThrow(RangeError);
  });
});
