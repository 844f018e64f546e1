/** The HTTP loop on the real server, over real HTTP (SPEC §6). */
import { afterEach, describe, expect, it } from 'vitest';
import { descriptor, recordingLogger, skill, stopAll } from '@mdp/test-kit';
import { clientChange, registeredLoopClient, startServer, type TestServer } from './harness.js';

afterEach(stopAll);

const loop = (t: TestServer, path: string): string => `${t.http}/mdp/http-loop${path}`;

async function connect(t: TestServer, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(loop(t, '/connect'), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
  expect(res.status).toBe(200);
  const { sessionId } = (await res.json()) as { sessionId: string };
  expect(sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  return sessionId;
}

function send(t: TestServer, sessionId: string, message: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(loop(t, '/send'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId, ...headers },
    body: JSON.stringify({ message }),
  });
}

function poll(t: TestServer, query: string, init: RequestInit = {}): Promise<Response> {
  return fetch(loop(t, `/poll?${query}`), init);
}

describe('the seed polling flow', () => {
  it('connect → register → a skill read → poll gets callClient → result → read returns → disconnect → poll 404', async () => {
    const t = await startServer();
    const sessionId = await connect(t);
    const registered = await send(t, sessionId, { type: 'registerClient', client: descriptor('loop-1', [skill('/notes/skill.md')]) });
    expect(registered.status).toBe(202);
    expect(await registered.json()).toEqual({ ok: true });

    const read = fetch(`${t.http}/skills/loop-1/notes?topic=a`, { headers: { authorization: 'Bearer reader' } });
    const polled = await poll(t, `sessionId=${sessionId}&waitMs=5000`);
    expect(polled.status).toBe(200);
    const { message } = (await polled.json()) as { message: Record<string, unknown> };
    expect(message).toMatchObject({
      type: 'callClient',
      clientId: 'loop-1',
      method: 'GET',
      path: '/notes/skill.md',
      query: { topic: 'a' },
      kind: 'skill',
      name: '/notes/skill.md',
      args: { query: { topic: 'a' } },
      auth: { scheme: 'Bearer', token: 'reader' },
    });
    const answered = await send(t, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: '# Notes' });
    expect(answered.status).toBe(202);
    const res = await read;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('# Notes');

    // Field JS clients send no body (but a JSON content type) on disconnect.
    const bye = await fetch(loop(t, '/disconnect'), { method: 'POST', headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId } });
    expect(bye.status).toBe(204);
    const after = await poll(t, `sessionId=${sessionId}&waitMs=0`);
    expect(after.status).toBe(404);
    expect(await after.text()).toBe('');
    expect((await fetch(`${t.http}/skills/loop-1/notes`)).status).toBe(404);
  });

  it('accepts the session id by query on send and by header on poll; the header wins', async () => {
    const t = await startServer();
    const sessionId = await connect(t);
    const byQuery = await fetch(loop(t, `/send?sessionId=${sessionId}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: { type: 'ping', timestamp: 7 } }),
    });
    expect(byQuery.status).toBe(202);
    const byHeader = await poll(t, `sessionId=not-a-session&waitMs=1000`, { headers: { 'x-mdp-session-id': sessionId } });
    expect(byHeader.status).toBe(200);
    expect(await byHeader.json()).toEqual({ message: { type: 'pong', timestamp: 7 } });
  });

  it('answers 204 with an empty body when nothing arrives before waitMs', async () => {
    const t = await startServer();
    const sessionId = await connect(t);
    const res = await poll(t, `sessionId=${sessionId}&waitMs=50`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
  });

  it('queues several messages in order', async () => {
    const t = await startServer();
    const sessionId = await connect(t);
    for (const timestamp of [1, 2, 3]) expect((await send(t, sessionId, { type: 'ping', timestamp })).status).toBe(202);
    const got = [];
    for (let i = 0; i < 3; i++)
      got.push(((await (await poll(t, `sessionId=${sessionId}&waitMs=0`)).json()) as { message: { timestamp: number } }).message.timestamp);
    expect(got).toEqual([1, 2, 3]);
  });

  it('a newer poll answers the older waiting one with 204', async () => {
    const logs = recordingLogger();
    const t = await startServer({ logger: logs.logger });
    const sessionId = await connect(t);
    const waiting = logs.next('poll.start', { sessionId });
    const first = poll(t, `sessionId=${sessionId}&waitMs=10000`);
    await waiting;
    const second = poll(t, `sessionId=${sessionId}&waitMs=10000`);
    expect((await first).status).toBe(204);
    await send(t, sessionId, { type: 'ping', timestamp: 9 });
    expect((await second).status).toBe(200);
  });

  it('an aborted poll takes nothing: the next poll still receives the queued callClient', async () => {
    const logs = recordingLogger();
    const t = await startServer({ logger: logs.logger });
    const sessionId = await connect(t);
    await send(t, sessionId, { type: 'registerClient', client: descriptor('loop-2', [skill('/s/skill.md')]) });
    const controller = new AbortController();
    const waiting = logs.next('poll.start', { sessionId });
    const abandoned = poll(t, `sessionId=${sessionId}&waitMs=10000`, { signal: controller.signal }).catch((e: unknown) => e);
    await waiting;
    // The server notices the aborted request and lets go of the poll before the read below.
    const released = logs.next('poll.abandoned', { sessionId });
    controller.abort();
    await abandoned;
    await released;
    const read = fetch(`${t.http}/skills/loop-2/s`);
    const polled = await poll(t, `sessionId=${sessionId}&waitMs=5000`);
    expect(polled.status).toBe(200);
    const { message } = (await polled.json()) as { message: { type: string; requestId: string } };
    expect(message.type).toBe('callClient');
    await send(t, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'kept' });
    expect(await (await read).text()).toBe('kept');
  });
});

describe('HTTP loop errors', () => {
  it('404 with an empty body for a missing or unknown session on send and poll', async () => {
    const t = await startServer();
    for (const res of [
      await poll(t, 'waitMs=0'),
      await poll(t, 'sessionId=00000000-0000-0000-0000-000000000000&waitMs=0'),
      await send(t, 'nope', { type: 'ping', timestamp: 1 }),
      await fetch(loop(t, '/send'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":{"type":"ping","timestamp":1}}' }),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.text()).toBe('');
    }
  });

  it('400 {error} for invalid JSON, invalid messages, server-to-client types and handling errors', async () => {
    const t = await startServer();
    const sessionId = await connect(t);
    const headers = { 'content-type': 'application/json', 'x-mdp-session-id': sessionId };
    const bodies = [
      '{nope',
      '[]',
      JSON.stringify({}),
      JSON.stringify({ message: { type: 'registerClient', client: { id: 'x', name: 'x', paths: [{ type: 'skill', path: '/no-leaf' }] } } }),
      JSON.stringify({ message: { type: 'callClient', requestId: 'r', clientId: 'c', method: 'GET', path: '/a' } }),
      JSON.stringify({ message: { type: 'updateClientCatalog', clientId: 'not-mine', paths: [] } }),
    ];
    for (const body of bodies) {
      const res = await fetch(loop(t, '/send'), { method: 'POST', headers, body });
      expect(res.status, body).toBe(400);
      const json = (await res.json()) as { error: unknown };
      expect(typeof json.error, body).toBe('string');
    }
    // The session survives bad input.
    expect((await send(t, sessionId, { type: 'ping', timestamp: 1 })).status).toBe(202);
  });

  it('400 {error} for a connect body that is not a JSON object', async () => {
    const t = await startServer();
    for (const body of ['{nope', '[1]', '"x"']) {
      const res = await fetch(loop(t, '/connect'), { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status, body).toBe(400);
      expect(typeof ((await res.json()) as { error: unknown }).error).toBe('string');
    }
    const empty = await fetch(loop(t, '/connect'), { method: 'POST' });
    expect(empty.status).toBe(200);
  });

  it('413 {error} for a body over the size limit', async () => {
    const t = await startServer({ maxMessageBytes: 4096 });
    const sessionId = await connect(t);
    const res = await send(t, sessionId, { type: 'ping', timestamp: 1, pad: 'x'.repeat(10_000) });
    expect(res.status).toBe(413);
    expect(typeof ((await res.json()) as { error: unknown }).error).toBe('string');
  });

  it('disconnect of an unknown session is 204', async () => {
    const t = await startServer();
    const res = await fetch(loop(t, '/disconnect?sessionId=unknown'), { method: 'POST' });
    expect(res.status).toBe(204);
  });

  it('a silent session expires and its pending calls end at once', async () => {
    const t = await startServer({ heartbeatIntervalMs: 30, heartbeatTimeoutMs: 100, invocationTimeoutMs: 10_000 });
    const sessionId = await connect(t);
    await send(t, sessionId, { type: 'registerClient', client: descriptor('loop-3', [skill('/s/skill.md')]) });
    const res = await fetch(`${t.http}/skills/loop-3/s`);
    // Ended by expiry (502 transport_error), not by the 10 s invocation time-out (504).
    expect(res.status).toBe(502);
    expect((await poll(t, `sessionId=${sessionId}&waitMs=0`)).status).toBe(404);
  });
});

describe('CORS on the HTTP loop', () => {
  it('answers preflights with 204 and echoes the origin with credentials, for every page (SPEC §6)', async () => {
    const t = await startServer({ allowedOrigins: ['http://agent.test'] });
    const preflight = (origin: string) =>
      fetch(loop(t, '/poll'), {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'content-type, x-mdp-session-id' },
      });
    for (const origin of ['http://agent.test', 'http://localhost:5173', t.http]) {
      const pre = await preflight(origin);
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(origin);
      expect(pre.headers.get('access-control-allow-credentials'), origin).toBe('true');
      expect(pre.headers.get('access-control-allow-headers')).toContain('x-mdp-session-id');
    }
    // A page of another site is an MDP client too: its client sends with credentials: 'include',
    // so it gets them (the server just does not read its mdp_auth cookie: see auth.e2e).
    const foreign = await preflight('http://app.test');
    expect(foreign.status).toBe(204);
    expect(foreign.headers.get('access-control-allow-origin')).toBe('http://app.test');
    expect(foreign.headers.get('access-control-allow-credentials')).toBe('true');
    const res = await fetch(loop(t, '/connect'), { method: 'POST', headers: { origin: 'http://app.test' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://app.test');
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    const allowed = await fetch(loop(t, '/connect'), { method: 'POST', headers: { origin: 'http://agent.test' } });
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    const anonymous = await fetch(loop(t, '/connect'), { method: 'POST' });
    expect(anonymous.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('vanished sessions (--http-loop-idle-timeout-ms)', () => {
  it('a session that registered and never polls ends; its waiting read fails at once with 502 transport_error', async () => {
    const t = await startServer({ httpLoopIdleTimeoutMs: 300 });
    const sessionId = await connect(t);
    expect((await send(t, sessionId, { type: 'registerClient', client: descriptor('quiet', [skill('/s/skill.md')]) })).status).toBe(202);
    const gone = clientChange(t.server, 'quiet', false);
    const read = fetch(`${t.http}/skills/quiet/s`);
    await gone;
    const answer = await read;
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ error: { code: 'transport_error' } });
    expect((await poll(t, `sessionId=${sessionId}&waitMs=0`)).status).toBe(404);
  });

  it('a client whose handler takes longer than the idle time-out is not dropped: it keeps polling', async () => {
    const t = await startServer({ httpLoopIdleTimeoutMs: 200 });
    const client = await registeredLoopClient(t, descriptor('slow', [skill('/s/skill.md')]));
    let release: (() => void) | undefined;
    const started = new Promise<void>((resolve) => {
      client.handler = () =>
        new Promise<string>((done) => {
          release = () => done('# slow');
          resolve();
        });
    });
    const read = fetch(`${t.http}/skills/slow/s`);
    await started;
    // Hold the handler until a session that never polls, opened after it started, has been dropped:
    // the idle time-out has then passed for both, and only the quiet one went.
    const control = await connect(t);
    expect((await send(t, control, { type: 'registerClient', client: descriptor('control', [skill('/s/skill.md')]) })).status).toBe(202);
    await clientChange(t.server, 'control', false);
    expect(t.server.router.getClient('slow')).toBeDefined();
    release!();
    const answer = await read;
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('# slow');
    expect(t.server.router.getClient('slow')).toBeDefined();
  });
});
