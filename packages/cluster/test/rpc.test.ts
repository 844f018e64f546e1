/** Cluster RPC without sockets: serving requests (params checked, only a leader answers) and waiting for answers. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Router, createLocalHost, createTenancy, silentLogger, type HostApi } from '@mdp/core';
import { UNSENDABLE_DATA_ERROR, type ClusterMessage } from '@mdp/protocol';
import { descriptor, endpoint, manualClock, recordingLogger, settle, type LogRecord, type ManualClock } from '@mdp/test-kit';
import { TimerSet } from '../src/clock.js';
import { ClusterRpc, callParams, decodeResult, listParams, serveRpc, type RpcBody } from '../src/rpc.js';
import { attachClient, scriptedClient, skillClient } from './harness.js';

let router: Router;
let host: HostApi;

beforeEach(() => {
  router = new Router({ invocationTimeoutMs: 1000 });
  host = createLocalHost(router);
});

afterEach(async () => {
  await router.close();
});

describe('serveRpc', () => {
  it('answers a forwarded request for the caller it names (viewer), under tenancy by principal', async () => {
    const tenant = createLocalHost(router, { tenancy: createTenancy({ mode: 'principal' }) });
    const mine = router.openSession({ kind: 'fake', send: () => undefined, close: () => undefined }, undefined, 'token:a');
    mine.handle({ type: 'registerClient', client: { id: 'mine', name: 'Mine', paths: [] } });
    attachClient(router, skillClient('docs'));
    const ids = (answer: Awaited<ReturnType<typeof serveRpc>>) =>
      answer.ok ? (answer.result as { clients: { id: string }[] }).clients.map((c) => c.id) : answer.error;
    expect(ids(await serveRpc(tenant, { method: 'listClients', params: listParams({ limit: 10 }, { viewer: { principal: 'token:a' } }) }, true))).toEqual([
      'mine',
    ]);
    expect(ids(await serveRpc(tenant, { method: 'listClients', params: listParams({}, { viewer: { principal: 'token:b' } }) }, true))).toEqual([]);
    // No viewer: the member itself.
    expect(ids(await serveRpc(tenant, { method: 'listClients', params: { limit: 10 } }, true))).toEqual(['docs', 'mine']);
    const call = callParams({ clientId: 'docs', method: 'GET', path: '/docs/review/skill.md' }, { viewer: { principal: 'token:a' } });
    expect(call).toMatchObject({ viewer: { principal: 'token:a' } });
    expect(await serveRpc(tenant, { method: 'callPath', params: call }, true)).toEqual({
      ok: true,
      result: { ok: false, source: 'server', error: { code: 'not_found', message: 'No client "docs" is connected' } },
    });
    expect(await serveRpc(tenant, { method: 'listPaths', params: listParams({ clientId: 'docs' }, { viewer: { principal: 'token:a' } }) }, true)).toMatchObject(
      {
        ok: false,
        error: { code: 'not_found' },
      },
    );
    expect(callParams({ clientId: 'x' }, { viewer: { principal: undefined } })).toEqual({ clientId: 'x', viewer: {} });
    expect(await serveRpc(tenant, { method: 'listClients', params: { viewer: { principal: 7 } } }, true)).toMatchObject({
      ok: false,
      error: { code: 'bad_request' },
    });
    expect(await serveRpc(tenant, { method: 'callPath', params: { ...call, viewer: 'token:a' } }, true)).toMatchObject({
      ok: false,
      error: { code: 'bad_request' },
    });
  });

  it('answers the four methods like the host, with params as in SPEC §12', async () => {
    attachClient(router, skillClient('docs'));
    expect(await serveRpc(host, { method: 'listClients' }, true)).toEqual({ ok: true, result: await host.listClients() });
    expect(await serveRpc(host, { method: 'listClients', params: { search: 'nothing' } }, true)).toEqual({ ok: true, result: { clients: [] } });
    expect(await serveRpc(host, { method: 'listPaths', params: { clientId: 'docs', depth: 2 } }, true)).toEqual({
      ok: true,
      result: await host.listPaths({ clientId: 'docs', depth: 2 }),
    });
    expect(await serveRpc(host, { method: 'callPath', params: { clientId: 'docs', method: 'GET', path: '/docs/review/skill.md' } }, true)).toEqual({
      ok: true,
      result: { ok: true, data: 'content of /docs/review/skill.md' },
    });
    expect(await serveRpc(host, { method: 'callPaths', params: { method: 'GET', path: '/docs/review/skill.md' } }, true)).toEqual({
      ok: true,
      result: { results: [{ clientId: 'docs', ok: true, data: 'content of /docs/review/skill.md' }] },
    });
  });

  it('answers a listing that names a limit or a cursor with one page, within what a frame carries', async () => {
    for (let i = 0; i < 30; i++) attachClient(router, { ...skillClient(`c${String(i).padStart(2, '0')}`), description: 'd'.repeat(500) });
    const maxPageBytes = 16 * 1024;
    const ids: string[] = [];
    let pages = 0;
    let cursor: string | undefined;
    do {
      const answer = await serveRpc(
        host,
        { method: 'listClients', params: cursor === undefined ? { limit: 1000 } : { limit: 1000, cursor } },
        true,
        maxPageBytes,
      );
      if (!answer.ok) throw new Error(answer.error.message);
      const page = answer.result as { clients: Array<{ id: string }>; nextCursor?: string };
      expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThanOrEqual(maxPageBytes);
      ids.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(ids).toEqual(Array.from({ length: 30 }, (_, i) => `c${String(i).padStart(2, '0')}`));
    expect(pages).toBeGreaterThan(1);
  });

  it('lists an item larger than a frame in its short form, so the walk goes on', async () => {
    const long = 'd'.repeat(10_000);
    attachClient(router, {
      ...skillClient('big'),
      description: long,
      paths: [1, 2].map((n) => ({ type: 'skill', path: `/s${n}/skill.md`, description: long })),
    });
    attachClient(router, skillClient('small'));
    const answer = await serveRpc(host, { method: 'listClients', params: { limit: 10 } }, true, 16 * 1024);
    expect(answer).toMatchObject({ ok: true, result: { clients: [{ id: 'big', paths: [], truncated: true }, { id: 'small' }] } });
  });

  it('answers a listing without limit or cursor (an earlier follower) whole, gathered page by page', async () => {
    for (let i = 0; i < 1200; i++) attachClient(router, skillClient(`c${i}`));
    const answer = await serveRpc(host, { method: 'listPaths', params: { search: 'review' } }, true);
    expect(answer).toMatchObject({ ok: true });
    const result = (answer as { result: { paths: unknown[]; nextCursor?: string } }).result;
    expect(result.paths).toHaveLength(1200);
    expect(result.nextCursor).toBeUndefined();
    // Past one frame, it says to ask in pages.
    expect(await serveRpc(host, { method: 'listClients' }, true, 64 * 1024)).toEqual({
      ok: false,
      error: { code: 'transport_error', message: expect.stringContaining('ask for it in pages (limit, cursor)') },
    });
  });

  it('refuses a cursor it did not make', async () => {
    expect(await serveRpc(host, { method: 'listPaths', params: { cursor: 'x' } }, true)).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^cursor: /) },
    });
  });

  it('only a leader answers: another member says not_ready', async () => {
    expect(await serveRpc(host, { method: 'listClients' }, false)).toMatchObject({ ok: false, error: { code: 'not_ready' } });
  });

  it.each([
    ['listClients', { search: 7 }, /^search: /],
    ['listPaths', { depth: 0 }, /^depth: /],
    ['listPaths', { limit: 0 }, /^limit: /],
    ['listClients', { limit: 5000 }, /^limit: /],
    ['listClients', { cursor: '' }, /^cursor: /],
    ['listPaths', 'all', /object/i],
    ['callPath', undefined, /object/i],
    ['callPath', { clientId: '', method: 'GET', path: '/a' }, /^clientId: /],
    ['callPath', { clientId: 'c', method: 'FETCH', path: '/a' }, /^method: /],
    ['callPath', { clientId: 'c', method: 'GET', path: '/a/../b' }, /^path: /],
    ['callPath', { clientId: 'c', method: 'GET', path: '/a', timeoutMs: -5 }, /^timeoutMs: /],
    ['callPaths', { clientIds: [], method: 'GET', path: '/a' }, /^clientIds: /],
    ['callPaths', { method: 'GET', path: '/a', timeoutMs: 1.5 }, /^timeoutMs: /],
  ])('%s with params %j is a bad request naming the field', async (method, params, message) => {
    const answer = await serveRpc(host, { method, params }, true);
    expect(answer).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(!answer.ok && answer.error.message).toMatch(message);
  });

  it('refuses an unknown method', async () => {
    expect(await serveRpc(host, { method: 'dropTables' }, true)).toEqual({
      ok: false,
      error: { code: 'bad_request', message: 'Unknown cluster RPC method "dropTables"' },
    });
  });

  it("gives a call the caller's time-out", async () => {
    router
      .openSession({ kind: 'test', wantsPing: false, send: () => undefined, close: () => undefined })
      .handle({ type: 'registerClient', client: skillClient('mute') });
    const answer = serveRpc(host, { method: 'callPath', params: { clientId: 'mute', method: 'GET', path: '/docs/review/skill.md', timeoutMs: 20 } }, true);
    expect(await answer).toMatchObject({
      ok: true,
      result: { ok: false, source: 'server', error: { code: 'timeout', message: expect.stringContaining('20 ms') } },
    });
  });

  it('a failure of the host becomes its error, and an unknown one never leaks its message', async () => {
    expect(await serveRpc(host, { method: 'listPaths', params: { clientId: 'nobody' } }, true)).toMatchObject({ ok: false, error: { code: 'not_found' } });
    const broken: HostApi = { ...host, listClients: () => Promise.reject(new Error('secret detail')) };
    expect(await serveRpc(broken, { method: 'listClients' }, true)).toEqual({ ok: false, error: { code: 'handler_error', message: 'Internal error' } });
  });
});

describe('decodeResult', () => {
  it('takes the shapes of the four results and nothing else', () => {
    expect(decodeResult('listClients', { clients: [{ id: 'a', name: 'A', paths: [] }] })).toEqual({ clients: [{ id: 'a', name: 'A', paths: [] }] });
    expect(decodeResult('listClients', [{ id: 'a' }])).toBeUndefined();
    expect(decodeResult('listClients', { clients: [{ name: 'no id' }] })).toBeUndefined();
    expect(decodeResult('listPaths', { paths: [{ clientId: 'a', path: '/x', type: 'skill' }] })).toBeDefined();
    expect(decodeResult('listPaths', { paths: [{ path: '/x' }] })).toBeUndefined();
    expect(decodeResult('callPath', { ok: true })).toEqual({ ok: true });
    expect(decodeResult('callPath', { ok: false, error: { code: 'timeout', message: 'late' }, source: 'server' })).toBeDefined();
    expect(decodeResult('callPath', { ok: false })).toBeUndefined();
    expect(decodeResult('callPath', { ok: false, error: { code: 'x', message: 'm' }, source: 'elsewhere' })).toBeUndefined();
    expect(
      decodeResult('callPaths', {
        results: [
          { clientId: 'a', ok: true, data: 1 },
          { clientId: 'b', ok: false, error: { code: 'x', message: 'm' } },
        ],
      }),
    ).toBeDefined();
    expect(decodeResult('callPaths', { results: [{ ok: true }] })).toBeUndefined();
  });
});

describe('ClusterRpc', () => {
  let clock: ManualClock;
  let timers: TimerSet;
  let _logs: LogRecord[];
  let frames: { to: string; body: RpcBody }[];
  let sendable: boolean;
  let leads: boolean;
  let rpc: ClusterRpc;

  const frame = (body: RpcBody, serverId = 'L'): ClusterMessage => ({ ...body, clusterId: 'c', serverId, term: 1, timestamp: 1 }) as ClusterMessage;

  beforeEach(() => {
    clock = manualClock();
    timers = new TimerSet(clock);
    const recorded = recordingLogger();
    _logs = recorded.records;
    frames = [];
    sendable = true;
    leads = true;
    rpc = new ClusterRpc({
      host,
      leads: () => leads,
      timers,
      logger: recorded.logger,
      send: (to, body) => {
        if (!sendable) return false;
        // As the link does: a body that JSON cannot carry is not sent.
        try {
          JSON.stringify(body);
        } catch {
          return false;
        }
        frames.push({ to, body });
        return true;
      },
    });
  });

  afterEach(() => {
    rpc.close();
    expect(timers.size).toBe(0);
  });

  it('sends a request and resolves with the answer from the peer it asked', async () => {
    const pending = rpc.request('L', 'listPaths', { depth: 2 }, 1000);
    const sent = frames[0];
    expect(sent).toMatchObject({ to: 'L', body: { type: 'clusterRpcRequest', method: 'listPaths', params: { depth: 2 } } });
    const requestId = (sent!.body as { requestId: string }).requestId;
    // Another peer answering that id is ignored.
    expect(rpc.receive('M', frame({ type: 'clusterRpcResponse', requestId, ok: true, result: 'forged' }, 'M'))).toBe(true);
    rpc.receive('L', frame({ type: 'clusterRpcResponse', requestId, ok: false, error: { code: 'not_found', message: 'no' } }));
    expect(await pending).toEqual({ kind: 'answer', ok: false, error: { code: 'not_found', message: 'no' } });
    expect(timers.size).toBe(0);
  });

  it('ends a request that could not be sent, timed out, lost its link, or was pending at close', async () => {
    sendable = false;
    expect(await rpc.request('L', 'listClients', undefined, 1000)).toEqual({ kind: 'unsent' });
    sendable = true;
    const late = rpc.request('L', 'listClients', undefined, 1000);
    clock.advance(1000);
    expect(await late).toEqual({ kind: 'timeout', timeoutMs: 1000 });
    const lost = rpc.request('L', 'listClients', undefined, 1000);
    const other = rpc.request('M', 'listClients', undefined, 1000);
    rpc.failPeer('L');
    expect(await lost).toEqual({ kind: 'lost' });
    rpc.close();
    expect(await other).toEqual({ kind: 'closed' });
    // A late answer to an ended request changes nothing.
    expect(rpc.receive('L', frame({ type: 'clusterRpcResponse', requestId: 'gone', ok: true }))).toBe(true);
  });

  it('a request whose caller goes away ends at once as aborted, and the peer is told to end it', async () => {
    const caller = new AbortController();
    const asked = rpc.request('L', 'callPath', { clientId: 'slow', method: 'GET', path: '/x' }, 600_000, caller.signal);
    const requestId = (frames[0]!.body as { requestId: string }).requestId;
    caller.abort();
    expect(await asked).toEqual({ kind: 'aborted' });
    expect(frames[1]).toMatchObject({ to: 'L', body: { type: 'clusterRpcRequest', method: 'cancelCall', params: { requestId } } });
    // Its time-out timer went with it; a late answer changes nothing.
    expect(timers.size).toBe(0);
    rpc.receive('L', frame({ type: 'clusterRpcResponse', requestId, ok: true, result: { ok: true } }));
    // A caller gone before the request is sent: nothing is sent.
    const gone = new AbortController();
    gone.abort();
    expect(await rpc.request('L', 'callPath', {}, 1000, gone.signal)).toEqual({ kind: 'aborted' });
    expect(frames).toHaveLength(2);
  });

  it("ends a call it serves when its asker cancels it (the client's pending slot is freed), and answers nothing", async () => {
    scriptedClient(router, descriptor('silent', [endpoint('/wait', 'GET')]), () => undefined);
    const call = (requestId: string) =>
      frame(
        { type: 'clusterRpcRequest', requestId, method: 'callPath', params: { clientId: 'silent', method: 'GET', path: '/wait', timeoutMs: 600_000 } },
        'F',
      );
    const cancel = (requestId: string, from: string) =>
      frame({ type: 'clusterRpcRequest', requestId: `c-${requestId}`, method: 'cancelCall', params: { requestId } }, from);
    rpc.receive('F', call('r7'));
    await settle();
    expect(router.pendingCount).toBe(1);
    expect(rpc.served).toBe(1);
    // Another peer cannot end it, nor can an unknown id or a malformed cancel.
    rpc.receive('M', cancel('r7', 'M'));
    rpc.receive('F', cancel('r8', 'F'));
    rpc.receive('F', frame({ type: 'clusterRpcRequest', requestId: 'c-bad', method: 'cancelCall', params: { requestId: 7 } }, 'F'));
    await settle();
    expect(router.pendingCount).toBe(1);
    rpc.receive('F', cancel('r7', 'F'));
    await settle();
    expect(router.pendingCount).toBe(0);
    expect(rpc.served).toBe(0);
    // No answer to the call nor to the cancels: the asker waits for none.
    expect(frames).toEqual([]);
  });

  it('serves a request from a peer while leading, and not_ready while not', async () => {
    attachClient(router, skillClient('docs'));
    expect(rpc.receive('F', frame({ type: 'clusterRpcRequest', requestId: 'r1', method: 'listClients' }, 'F'))).toBe(true);
    await settle();
    expect(frames.at(-1)).toMatchObject({ to: 'F', body: { type: 'clusterRpcResponse', requestId: 'r1', ok: true, result: { clients: [{ id: 'docs' }] } } });
    leads = false;
    rpc.receive('F', frame({ type: 'clusterRpcRequest', requestId: 'r2', method: 'listClients' }, 'F'));
    await settle();
    expect(frames.at(-1)).toMatchObject({ body: { requestId: 'r2', ok: false, error: { code: 'not_ready' } } });
  });

  it('answers a result that cannot be sent with an error, so the asker does not wait for its time-out', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    attachClient(router, skillClient('loop'), () => cyclic);
    rpc.receive(
      'F',
      frame(
        { type: 'clusterRpcRequest', requestId: 'r3', method: 'callPath', params: { clientId: 'loop', method: 'GET', path: '/docs/review/skill.md' } },
        'F',
      ),
    );
    for (let i = 0; i < 5 && frames.length === 0; i += 1) await settle();
    expect(frames).toEqual([{ to: 'F', body: { type: 'clusterRpcResponse', requestId: 'r3', ok: false, error: UNSENDABLE_DATA_ERROR } }]);
  });

  it("answers a peer whose link is behind with the link's refusal before any work, and its listings one after the other", async () => {
    attachClient(router, skillClient('docs'));
    let listed = 0;
    const counting: HostApi = { ...host, listPaths: (request) => (listed++, host.listPaths(request)) };
    const behind = { code: 'not_ready' as const, message: 'behind', details: { retryAfterMs: 1000 } };
    const answers: RpcBody[] = [];
    // The link is behind once two answers went out on it.
    const served = new ClusterRpc({
      host: counting,
      leads: () => true,
      timers,
      logger: silentLogger,
      send: (_to, body) => (answers.push(body), true),
      refusal: () => (answers.length >= 2 ? behind : undefined),
    });
    // Five listings read at once: each waits for the one before it, so only two are made.
    for (let i = 0; i < 5; i++) served.receive('F', frame({ type: 'clusterRpcRequest', requestId: `p${i}`, method: 'listPaths' }, 'F'));
    for (let i = 0; i < 20 && answers.length < 5; i += 1) await settle();
    expect(answers.map((body) => (body as { ok: boolean }).ok)).toEqual([true, true, false, false, false]);
    expect(answers[4]).toMatchObject({ requestId: 'p4', ok: false, error: behind });
    expect(listed).toBe(2);
    // A call is refused the same way, without reaching its client.
    served.receive(
      'F',
      frame(
        { type: 'clusterRpcRequest', requestId: 'c1', method: 'callPath', params: { clientId: 'docs', method: 'GET', path: '/docs/review/skill.md' } },
        'F',
      ),
    );
    for (let i = 0; i < 20 && answers.length < 6; i += 1) await settle();
    expect(answers[5]).toMatchObject({ requestId: 'c1', ok: false, error: behind });
    served.close();
  });

  it('leaves other cluster messages alone', () => {
    expect(rpc.receive('L', { type: 'clusterLeaderResign', clusterId: 'c', serverId: 'L', term: 2, timestamp: 1, leaderId: 'L' })).toBe(false);
  });
});
