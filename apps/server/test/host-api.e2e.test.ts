/**
 * The host API on the real server over real HTTP (SPEC §12), with clients over the websocket and
 * the HTTP loop: every status of the mapping, with and without an auth policy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PathDescriptor } from '@mdp/protocol';
import { ClientFailure, NO_ANSWER, descriptor, endpoint, recordingLogger, skill, stopAll } from '@mdp/test-kit';
import { clientChange, registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';

afterEach(stopAll);

const CATALOG: PathDescriptor[] = [
  endpoint('/page/click', 'POST', { description: 'Click on the page' }),
  endpoint('/status'),
  skill('/docs/skill.md'),
  skill('/docs/deep/skill.md'),
];

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

function call(t: TestServer, body: unknown, headers: Record<string, string> = {}, path = '/mdp/call'): Promise<Response> {
  return fetch(`${t.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

describe('host API without an auth policy', () => {
  it('lists clients of both transports and their paths, progressively', async () => {
    const t = await startServer();
    await registeredClient(t, descriptor('app', CATALOG));
    await registeredLoopClient(t, descriptor('loop', [endpoint('/status')]));

    const clients = await json(await fetch(`${t.http}/mdp/clients`));
    expect(clients.clients).toEqual([
      expect.objectContaining({ id: 'app', status: 'online', connection: { mode: 'ws', secure: false, authSource: 'none' }, aliases: [] }),
      expect.objectContaining({ id: 'loop', status: 'online', connection: { mode: 'http-loop', secure: false, authSource: 'none' } }),
    ]);
    const searched = await json(await fetch(`${t.http}/mdp/clients?search=CLICK`));
    expect((searched.clients as Array<{ id: string }>).map((c) => c.id)).toEqual(['app']);

    const first = await json(await fetch(`${t.http}/mdp/paths?clientId=app`));
    // By path (then method): the listing order.
    expect((first.paths as Array<{ path: string }>).map((p) => p.path)).toEqual(['/docs/skill.md', '/page/click', '/status']);
    const deep = await json(await fetch(`${t.http}/mdp/paths?clientId=app&depth=2`));
    expect((deep.paths as Array<{ path: string; clientName: string }>).map((p) => p.path)).toContain('/docs/deep/skill.md');
    const status = await json(await fetch(`${t.http}/mdp/paths?search=status`));
    expect(status.paths).toEqual([
      { type: 'endpoint', path: '/status', method: 'GET', clientId: 'app', clientName: 'Client app' },
      { type: 'endpoint', path: '/status', method: 'GET', clientId: 'loop', clientName: 'Client loop' },
    ]);
    const unknown = await fetch(`${t.http}/mdp/paths?clientId=ghost`);
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toEqual({ error: { code: 'not_found', message: 'No client "ghost" is connected' } });
  });

  it('pages listings with limit and cursor; a bad limit or cursor is a 400 naming it', async () => {
    const t = await startServer();
    for (const id of ['c', 'a', 'b']) await registeredClient(t, descriptor(id, [endpoint('/x')]));
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await json(await fetch(`${t.http}/mdp/clients?limit=1${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`));
      ids.push(...(page.clients as Array<{ id: string }>).map((c) => c.id));
      cursor = page.nextCursor as string | undefined;
    } while (cursor !== undefined);
    expect(ids).toEqual(['a', 'b', 'c']);
    for (const [query, field] of [
      ['/mdp/clients?limit=0', 'limit'],
      ['/mdp/paths?limit=many', 'limit'],
      ['/mdp/paths?cursor=bogus', 'cursor'],
      ['/mdp/clients?cursor=%00', 'cursor'],
    ] as const) {
      const res = await fetch(`${t.http}${query}`);
      expect(res.status, query).toBe(400);
      expect(await json(res)).toEqual({ error: { code: 'bad_request', message: expect.stringMatching(new RegExp(`^${field}: `)) } });
    }
  });

  it('calls an endpoint with a body and query, over the websocket and the HTTP loop', async () => {
    const t = await startServer();
    const ws = await registeredClient(t, descriptor('app', CATALOG));
    ws.handler = (c) => ({ got: c.body, query: c.query, path: c.path, method: c.method });
    const loop = await registeredLoopClient(t, descriptor('loop', [endpoint('/items/:id', 'PUT')]));
    loop.handler = (c) => ({ params: c.params, body: c.body });

    const res = await call(t, { clientId: 'app', method: 'POST', path: '/page/click', body: { x: 3, y: 4 }, query: { button: 'left' } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ ok: true, data: { got: { x: 3, y: 4 }, query: { button: 'left' }, path: '/page/click', method: 'POST' } });

    const viaLoop = await call(t, { clientId: 'loop', method: 'PUT', path: '/items/42', body: 'new' });
    expect(await json(viaLoop)).toEqual({ ok: true, data: { params: { id: '42' }, body: 'new' } });
  });

  it('maps every failure to its status: 404, 502 client error, 504 time-out, 502 client gone, 400, 413', async () => {
    const t = await startServer({ invocationTimeoutMs: 300, maxMessageBytes: 4096 });
    const app = await registeredClient(t, descriptor('app', CATALOG));

    const unknownClient = await call(t, { clientId: 'ghost', method: 'GET', path: '/status' });
    expect(unknownClient.status).toBe(404);
    expect(await json(unknownClient)).toMatchObject({ ok: false, error: { code: 'not_found' }, source: 'server' });
    expect((await call(t, { clientId: 'app', method: 'GET', path: '/nope' })).status).toBe(404);
    expect((await call(t, { clientId: 'app', method: 'DELETE', path: '/status' })).status).toBe(404);

    app.handler = () => new ClientFailure({ code: 'handler_error', message: 'the page said no' });
    const failed = await call(t, { clientId: 'app', method: 'GET', path: '/status' });
    expect(failed.status).toBe(502);
    expect(await json(failed)).toEqual({ ok: false, error: { code: 'handler_error', message: 'the page said no' }, source: 'client' });

    app.handler = () => NO_ANSWER;
    const late = await call(t, { clientId: 'app', method: 'GET', path: '/status' });
    expect(late.status).toBe(504);
    expect(await json(late)).toMatchObject({ ok: false, error: { code: 'timeout' } });

    const gone = call(t, { clientId: 'app', method: 'GET', path: '/status' });
    await app.next((m) => m.type === 'callClient');
    await app.close();
    const goneRes = await gone;
    expect(goneRes.status).toBe(502);
    expect(await json(goneRes)).toMatchObject({ ok: false, error: { code: 'transport_error' } });

    const bad = await call(t, { clientId: 'app', method: 'GET', path: 'status' });
    expect(bad.status).toBe(400);
    expect(await json(bad)).toEqual({ error: { code: 'bad_request', message: 'path: path must start with "/"' } });
    const big = await call(t, { clientId: 'app', method: 'POST', path: '/page/click', body: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
  });

  it('calls a path on many clients, and answers 404 when none has it', async () => {
    const t = await startServer();
    const a = await registeredClient(t, descriptor('a', [endpoint('/status')]));
    a.handler = () => 'a fine';
    const b = await registeredLoopClient(t, descriptor('b', [endpoint('/status')]));
    b.handler = () => new ClientFailure({ code: 'handler_error', message: 'b down' });
    await registeredClient(t, descriptor('c', [endpoint('/other')]));

    const res = await call(t, { method: 'GET', path: '/status' }, {}, '/mdp/call-many');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      results: [
        { clientId: 'a', ok: true, data: 'a fine' },
        { clientId: 'b', ok: false, error: { code: 'handler_error', message: 'b down' }, source: 'client' },
      ],
    });
    const chosen = await json(await call(t, { clientIds: ['c', 'a'], method: 'GET', path: '/status' }, {}, '/mdp/call-many'));
    expect((chosen.results as Array<{ clientId: string; ok: boolean }>).map((r) => [r.clientId, r.ok])).toEqual([
      ['c', false],
      ['a', true],
    ]);
    expect((await call(t, { method: 'GET', path: '/nobody' }, {}, '/mdp/call-many')).status).toBe(404);
  });

  it('call-many: refuses a repeated id, and a body copied to more clients than the fan-out budget allows', async () => {
    const t = await startServer({ maxMessageBytes: 100_000 });
    const app = await registeredClient(t, descriptor('app', [endpoint('/x', 'POST')]));
    const repeated = await call(t, { clientIds: ['app', 'app'], method: 'POST', path: '/x', body: 'x' }, {}, '/mdp/call-many');
    expect([repeated.status, await json(repeated)]).toEqual([400, { error: { code: 'bad_request', message: 'clientIds: must not name a client twice' } }]);
    // 90 kB copied to 5 clients is more than 4 × the 100 kB body limit.
    const ids = ['app', 'b', 'c', 'd', 'e'];
    const wide = await call(t, { clientIds: ids, method: 'POST', path: '/x', body: 'x'.repeat(90_000) }, {}, '/mdp/call-many');
    expect(wide.status).toBe(400);
    expect(await json(wide)).toMatchObject({ error: { code: 'bad_request', details: { clients: 5, maxTargets: 4 } } });
    expect(app.calls).toHaveLength(0);
    // Within the budget it goes through.
    const narrow = await call(t, { clientIds: ids.slice(0, 4), method: 'POST', path: '/x', body: 'x'.repeat(90_000) }, {}, '/mdp/call-many');
    expect(narrow.status).toBe(200);
    expect(app.calls).toHaveLength(1);
  });

  it('cancels the call when the HTTP caller goes away', async () => {
    const logs = recordingLogger({ level: 'info' });
    const t = await startServer({ logger: logs.logger, accessLog: true });
    const app = await registeredClient(t, descriptor('app', CATALOG));
    app.handler = () => NO_ANSWER;
    const controller = new AbortController();
    const sent = app.next((m) => m.type === 'callClient');
    const abandoned = fetch(`${t.http}/mdp/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'app', method: 'GET', path: '/status' }),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await sent;
    expect(t.server.router.pendingCount).toBe(1);
    controller.abort();
    expect(await abandoned).toBe('aborted');
    // The call ended (its access line is written as it ends), and nothing is left pending.
    expect(await logs.seen('call', { clientId: 'app', path: '/status' })).toMatchObject({ route: 'host' });
    expect(t.server.router.pendingCount).toBe(0);
  });

  it('answers CORS for browser callers and 405 for the wrong method', async () => {
    const t = await startServer();
    const res = await fetch(`${t.http}/mdp/clients`, { headers: { origin: 'http://localhost:5173' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    const preflight = await fetch(`${t.http}/mdp/call`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    const wrong = await fetch(`${t.http}/mdp/call`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST, OPTIONS');
  });
});

describe('host API under an auth policy', () => {
  it("refuses callers without an accepted token with 401 and never forwards the caller's credential to the client", async () => {
    const t = await startServer({ authTokens: ['reader-token', 'client-token'] });
    const app = await registeredClient(t, descriptor('app', CATALOG), { authorization: 'Bearer client-token' });
    app.handler = (c) => ({ token: c.auth?.token ?? null });

    for (const res of [
      await fetch(`${t.http}/mdp/clients`),
      await fetch(`${t.http}/mdp/paths`, { headers: { authorization: 'Bearer wrong' } }),
      await call(t, { clientId: 'app', method: 'GET', path: '/status' }),
      await call(t, { method: 'GET', path: '/status' }, { authorization: 'Bearer wrong' }, '/mdp/call-many'),
    ]) {
      expect(res.status).toBe(401);
      expect(await json(res)).toEqual({ error: { code: 'unauthorized', message: 'Unauthorized' } });
    }
    expect(app.calls).toHaveLength(0);

    const ok = await call(t, { clientId: 'app', method: 'GET', path: '/status' }, { authorization: 'Bearer reader-token' });
    expect(ok.status).toBe(200);
    // The token opened the call; it is the caller's key to this server, not the client's to hold.
    expect(await json(ok)).toEqual({ ok: true, data: { token: null } });
    // A credential the caller names for the client in the body goes as given.
    const named = await call(t, { clientId: 'app', method: 'GET', path: '/status', auth: { token: 'for-app' } }, { authorization: 'Bearer reader-token' });
    expect(await json(named)).toEqual({ ok: true, data: { token: 'for-app' } });
    const listed = await fetch(`${t.http}/mdp/clients`, { headers: { authorization: 'Bearer reader-token' } });
    expect(listed.status).toBe(200);
    await clientChange(t.server, 'app', true);
  });
});
