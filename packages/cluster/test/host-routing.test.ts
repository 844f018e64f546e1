/**
 * The host API of a cluster member with fake links and a manual clock: a real router stands for the
 * leader, and the fake RPC serves each request from it as the leader's node would (or fails it the
 * ways a link can), so every route, wait, retry and error is checked without sockets or sleeps.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MdpError, Router, createLocalHost, createTenancy, type HostApi, type Session } from '@mdp/core';
import type { ClientDescriptor, ListedClient } from '@mdp/protocol';
import { manualClock, recordingLogger, settle, type LogRecord, type ManualClock, type Reply } from '@mdp/test-kit';
import { TimerSet } from '../src/clock.js';
import { RETRY_MS, createClusterHost, routeOf, type ClusterHost, type Route } from '../src/host-routing.js';
import { catalogDigest } from '../src/host-watch.js';
import { serveRpc, type RpcMethod, type RpcOutcome } from '../src/rpc.js';
import { scriptedClient } from './harness.js';

const WAIT_MS = 5000;
const POLL_MS = 1000;
const SETTLE_MS = 2000;

/** How the fake link treats the next requests. */
type Mode = 'serve' | 'unsent' | 'lost' | 'timeout' | 'not-leader' | 'hang' | { readonly answer: RpcOutcome };

interface Sent {
  readonly leaderId: string;
  readonly method: RpcMethod;
  readonly params: unknown;
  readonly timeoutMs: number;
  /** For a hanging request: end it. */
  readonly end: (outcome: RpcOutcome) => void;
}

class FakeRpc {
  mode: Mode = 'serve';
  readonly sent: Sent[] = [];

  constructor(private readonly leaders: Map<string, HostApi>) {}

  request(leaderId: string, method: RpcMethod, params: unknown, timeoutMs: number): Promise<RpcOutcome> {
    return new Promise((resolve) => {
      this.sent.push({ leaderId, method, params, timeoutMs, end: resolve });
      const mode = this.mode;
      if (mode === 'hang') return;
      if (mode === 'serve') {
        const host = this.leaders.get(leaderId);
        if (!host) return resolve({ kind: 'unsent' });
        // Through JSON, as over a socket.
        void serveRpc(host, { method, params: params === undefined ? undefined : JSON.parse(JSON.stringify(params)) }, true).then((answer) =>
          resolve(JSON.parse(JSON.stringify({ kind: 'answer', ...answer })) as RpcOutcome),
        );
        return;
      }
      if (mode === 'unsent' || mode === 'lost' || mode === 'timeout') return resolve(mode === 'timeout' ? { kind: 'timeout', timeoutMs } : { kind: mode });
      if (mode === 'not-leader') return resolve({ kind: 'answer', ok: false, error: { code: 'not_ready', message: 'not the leader' } });
      resolve(mode.answer);
    });
  }

  methods(): RpcMethod[] {
    return this.sent.map((s) => s.method);
  }
}

/** A client on `router` that answers each call with `reply(path)` (never, for undefined). */
function attach(router: Router, descriptor: ClientDescriptor, reply: (path: string) => Reply = (p) => ({ ok: true, data: `from ${p}` })): Session {
  return scriptedClient(router, descriptor, reply).session;
}

const app = (id: string, extra: Partial<ClientDescriptor> = {}): ClientDescriptor => ({
  id,
  name: `app ${id}`,
  paths: [
    { type: 'endpoint', method: 'POST', path: '/page/click', description: 'click' },
    { type: 'skill', path: '/docs/deep/skill.md' },
  ],
  ...extra,
});

/** Let promises and queued microtasks run (real turns of the loop: the manual clock drives only the host's timers). */
const flush = (): Promise<void> => settle();

let clock: ManualClock;
let timers: TimerSet;
let local: Router;
let leaderRouter: Router;
let otherRouter: Router;
let rpc: FakeRpc;
let route: Route;
let routeListeners: Set<() => void>;
let logs: LogRecord[];
let host: ClusterHost;

function setRoute(next: Route): void {
  route = next;
  for (const listener of [...routeListeners]) listener();
}

/** The server ids of the cluster these hosts answer in: mirrors of these alias their bare ids. */
const CLUSTER = { isServerId: (id: string) => ['A', 'B', 'L', 'M'].includes(id) };

/** Settle mirrors: move past the window after the last change of route. */
const pastSettle = (): void => clock.advance(SETTLE_MS);

beforeEach(() => {
  clock = manualClock();
  timers = new TimerSet(clock);
  local = new Router();
  leaderRouter = new Router();
  otherRouter = new Router();
  rpc = new FakeRpc(
    new Map([
      ['L', createLocalHost(leaderRouter, CLUSTER)],
      ['M', createLocalHost(otherRouter, CLUSTER)],
    ]),
  );
  route = { kind: 'leader', id: 'L' };
  routeListeners = new Set();
  const recorded = recordingLogger();
  logs = recorded.records;
  host = createClusterHost(
    {
      local: createLocalHost(local, CLUSTER),
      route: () => route,
      onRouteChange: (listener) => {
        routeListeners.add(listener);
        return () => routeListeners.delete(listener);
      },
      rpc,
      clock,
      timers,
      logger: recorded.logger,
    },
    { waitMs: WAIT_MS, pollMs: POLL_MS, settleMs: SETTLE_MS },
  );
  pastSettle();
});

afterEach(async () => {
  host.close();
  expect(timers.size, 'timers left after close').toBe(0);
  expect(routeListeners.size).toBe(0);
  await Promise.all([local.close(), leaderRouter.close(), otherRouter.close()]);
});

describe('routes', () => {
  it('local before start and while leading; the leader while it is linked; none otherwise, unless alone', () => {
    const linked = (id: string) => id === 'L';
    expect(routeOf(undefined, 'me', linked, false)).toEqual({ kind: 'local' });
    expect(routeOf({ role: 'leader', term: 3, leaderId: 'me', leaderUrl: 'ws://me' }, 'me', linked, false)).toEqual({ kind: 'local' });
    expect(routeOf({ role: 'follower', term: 3, leaderId: 'L', leaderUrl: 'ws://l' }, 'me', linked, false)).toEqual({ kind: 'leader', id: 'L' });
    expect(routeOf({ role: 'follower', term: 3, leaderId: 'M', leaderUrl: 'ws://m' }, 'me', linked, false)).toEqual({ kind: 'none' });
    expect(routeOf({ role: 'candidate', term: 4, leaderId: undefined, leaderUrl: undefined }, 'me', linked, false)).toEqual({ kind: 'none' });
    expect(routeOf({ role: 'follower', term: 4, leaderId: 'me', leaderUrl: 'ws://me' }, 'me', () => true, false)).toEqual({ kind: 'none' });
    // A node that knows no other member has nobody to wait for.
    expect(routeOf({ role: 'follower', term: 0, leaderId: undefined, leaderUrl: undefined }, 'me', linked, true)).toEqual({ kind: 'local' });
    expect(routeOf({ role: 'follower', term: 3, leaderId: 'L', leaderUrl: 'ws://l' }, 'me', linked, true)).toEqual({ kind: 'leader', id: 'L' });
  });
});

describe('through the leader', () => {
  it('carries who asked to the leader, whose tenancy answers for that caller', async () => {
    const tenant = createLocalHost(leaderRouter, { ...CLUSTER, tenancy: createTenancy({ mode: 'principal' }) });
    rpc = new FakeRpc(new Map([['L', tenant]]));
    host.close();
    host = createClusterHost(
      {
        local: createLocalHost(local, CLUSTER),
        route: () => route,
        onRouteChange: () => () => undefined,
        rpc,
        clock,
        timers,
        logger: recordingLogger().logger,
      },
      { waitMs: WAIT_MS, pollMs: POLL_MS, settleMs: SETTLE_MS },
    );
    pastSettle();
    const mine = leaderRouter.openSession({ kind: 'fake', send: () => undefined, close: () => undefined }, undefined, 'token:a');
    mine.handle({ type: 'registerClient', client: app('mine') });
    attach(leaderRouter, app('theirs'));
    const viewer = { principal: 'token:a' };
    expect((await host.listClients({}, { viewer })).clients.map((c) => c.id)).toEqual(['mine']);
    expect((await host.listPaths({}, { viewer })).paths.map((p) => p.clientId)).toEqual(['mine']);
    expect(await host.callPath({ clientId: 'theirs', method: 'POST', path: '/page/click' }, { viewer })).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    await expect(host.callPaths({ method: 'POST', path: '/page/click', clientIds: ['theirs'] }, { viewer })).resolves.toMatchObject({
      results: [{ ok: false, error: { code: 'not_found' } }],
    });
    expect(rpc.sent.map((s) => (s.params as { viewer?: unknown }).viewer)).toEqual([viewer, viewer, viewer, viewer]);
    // The member itself (no viewer) sees every client.
    expect((await host.listClients()).clients.map((c) => c.id)).toEqual(['mine', 'theirs']);
  });

  it('answers all four requests with what the leader answers locally, search and depth included', async () => {
    attach(leaderRouter, app('editor', { description: 'The Editor' }));
    attach(leaderRouter, app('browser'));
    const there = createLocalHost(leaderRouter, CLUSTER);
    expect(await host.listClients()).toEqual(await there.listClients());
    expect((await host.listClients({ search: 'EDITOR' })).clients.map((c) => c.id)).toEqual(['editor']);
    expect(await host.listPaths({ clientId: 'browser', depth: 2 })).toEqual(await there.listPaths({ clientId: 'browser', depth: 2 }));
    expect((await host.listPaths()).paths.map((p) => p.path)).toEqual(['/page/click', '/page/click']);
    expect((await host.listPaths({ search: 'deep' })).paths.map((p) => `${p.clientId}${p.path}`)).toEqual([
      'browser/docs/deep/skill.md',
      'editor/docs/deep/skill.md',
    ]);
    expect(await host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click', body: { x: 1 } })).toEqual({ ok: true, data: 'from /page/click' });
    expect(await host.callPaths({ method: 'POST', path: '/page/click' })).toEqual({
      results: [
        { clientId: 'editor', ok: true, data: 'from /page/click' },
        { clientId: 'browser', ok: true, data: 'from /page/click' },
      ],
    });
    expect(rpc.methods()).toEqual(['listClients', 'listClients', 'listPaths', 'listPaths', 'listPaths', 'callPath', 'callPaths']);
    expect(rpc.sent.every((s) => s.leaderId === 'L')).toBe(true);
    // Always with a limit, so that the leader pages.
    expect(rpc.sent[2]?.params).toEqual({ clientId: 'browser', depth: 2, limit: 100 });
  });

  it('asks the leader for one page at a time, passing its cursor on', async () => {
    for (const id of ['e', 'a', 'd', 'c', 'b']) attach(leaderRouter, app(id));
    const ids: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await host.listClients({ limit: 2, cursor });
      ids.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(pages).toBe(3);
    expect(rpc.sent.map((s) => s.params)).toEqual([{ limit: 2 }, { limit: 2, cursor: expect.any(String) }, { limit: 2, cursor: expect.any(String) }]);
    // A cursor the leader did not make is refused there: 400 for the caller.
    await expect(host.listPaths({ cursor: 'nonsense' })).rejects.toMatchObject({ code: 'bad_request', message: expect.stringMatching(/^cursor: /) });
  });

  it('takes the whole listing of an earlier leader, which ignores limit, as the last page', async () => {
    const whole = {
      clients: [
        {
          id: 'x',
          name: 'X',
          paths: [],
          status: 'online',
          connectedAt: 't',
          lastSeenAt: 't',
          connection: { mode: 'ws', secure: false, authSource: 'none' },
          aliases: [],
        },
      ],
    };
    rpc.mode = { answer: { kind: 'answer', ok: true, result: whole } };
    expect(await host.listClients({ limit: 1 })).toEqual(whole);
  });

  it("sends a call's own time-out along, and waits for the leader's answer at least that long", async () => {
    attach(leaderRouter, app('editor'));
    await host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click' }, { timeoutMs: 9000 });
    await host.callPaths({ clientIds: ['editor'], method: 'POST', path: '/page/click' }, { timeoutMs: 100 });
    expect(rpc.sent.map((s) => [s.params, s.timeoutMs])).toEqual([
      [{ clientId: 'editor', method: 'POST', path: '/page/click', timeoutMs: 9000 }, 10_000],
      [{ clientIds: ['editor'], method: 'POST', path: '/page/click', timeoutMs: 100 }, WAIT_MS],
    ]);
  });

  it("sends a call-many's fan-out bound along: the leader refuses to call more clients", async () => {
    attach(leaderRouter, app('editor'));
    attach(leaderRouter, app('browser'));
    await expect(host.callPaths({ method: 'POST', path: '/page/click', body: 'x' }, { maxTargets: 1 })).rejects.toMatchObject({
      code: 'bad_request',
      details: { clients: 2, maxTargets: 1 },
    });
    expect(rpc.sent.map((s) => s.params)).toEqual([{ method: 'POST', path: '/page/click', body: 'x', maxTargets: 1 }]);
    expect((await host.callPaths({ method: 'POST', path: '/page/click' }, { maxTargets: 2 })).results).toHaveLength(2);
  });

  it('maps failures the way the local host does', async () => {
    attach(leaderRouter, app('broken'), () => ({ ok: false, error: { code: 'handler_error', message: 'it broke', details: { line: 3 } } }));
    const there = createLocalHost(leaderRouter, CLUSTER);
    const unknown = { clientId: 'nobody', method: 'GET', path: '/x' } as const;
    expect(await host.callPath(unknown)).toEqual(await there.callPath(unknown));
    expect(await host.callPath(unknown)).toMatchObject({ ok: false, source: 'server', error: { code: 'not_found' } });
    const failing = { clientId: 'broken', method: 'POST', path: '/page/click' } as const;
    expect(await host.callPath(failing)).toEqual({ ok: false, source: 'client', error: { code: 'handler_error', message: 'it broke', details: { line: 3 } } });
    const gone = await host.listPaths({ clientId: 'nobody' }).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(MdpError);
    expect(gone).toMatchObject({ code: 'not_found' });
    await expect(host.callPaths({ method: 'DELETE', path: '/nothing' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('an ambiguous bare id is not_found with the candidates, as locally', async () => {
    attach(leaderRouter, app('A.hello', { metadata: { mdpProxy: { serverId: 'A', clientId: 'hello' } } }));
    attach(leaderRouter, app('B.hello', { metadata: { mdpProxy: { serverId: 'B', clientId: 'hello' } } }));
    const failure = await host.listPaths({ clientId: 'hello' }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'not_found', details: { candidates: ['A.hello', 'B.hello'] } });
  });

  it('a time-out, a link lost during a call, and an answer of the wrong shape', async () => {
    rpc.mode = 'timeout';
    expect(await host.callPath({ clientId: 'x', method: 'GET', path: '/a' })).toMatchObject({ ok: false, source: 'server', error: { code: 'timeout' } });
    await expect(host.listClients()).rejects.toMatchObject({ code: 'timeout' });
    rpc.mode = 'lost';
    // A call may have run before the link went: it is not sent again.
    expect(await host.callPath({ clientId: 'x', method: 'POST', path: '/a' })).toEqual({
      ok: false,
      source: 'server',
      error: { code: 'transport_error', message: 'The link to the leader closed before it answered' },
    });
    await expect(host.callPaths({ method: 'POST', path: '/a' })).rejects.toMatchObject({ code: 'transport_error' });
    expect(rpc.methods().filter((m) => m === 'callPath' || m === 'callPaths')).toHaveLength(3);
    rpc.mode = { answer: { kind: 'answer', ok: true, result: { clients: 'many' } } };
    await expect(host.listClients()).rejects.toMatchObject({ code: 'handler_error' });
    rpc.mode = { answer: { kind: 'answer', ok: true, result: { ok: 'yes' } } };
    expect(await host.callPath({ clientId: 'x', method: 'GET', path: '/a' })).toMatchObject({ ok: false, error: { code: 'handler_error' } });
  });

  it('a listing whose link is lost is asked again of the next leader', async () => {
    attach(otherRouter, app('seen-by-m'));
    rpc.mode = 'lost';
    const listing = host.listClients();
    await flush();
    rpc.mode = 'serve';
    setRoute({ kind: 'leader', id: 'M' });
    expect((await listing).clients.map((c) => c.id)).toEqual(['seen-by-m']);
    expect(rpc.sent.map((s) => s.leaderId)).toEqual(['L', 'M']);
  });
});

describe('while no leader can be asked', () => {
  it('waits for the next leader, then asks it', async () => {
    attach(otherRouter, app('editor'));
    setRoute({ kind: 'none' });
    const call = host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click' });
    clock.advance(WAIT_MS - 1);
    await flush();
    expect(rpc.sent).toHaveLength(0);
    setRoute({ kind: 'leader', id: 'M' });
    expect(await call).toEqual({ ok: true, data: 'from /page/click' });
  });

  it('answers locally when this node became the leader', async () => {
    attach(local, app('mine'));
    setRoute({ kind: 'none' });
    const listing = host.listClients();
    await flush();
    setRoute({ kind: 'local' });
    expect((await listing).clients.map((c) => c.id)).toEqual(['mine']);
    expect(rpc.sent).toHaveLength(0);
  });

  it('when no leader comes in time, answers from this node alone, and at once until a leader is found', async () => {
    attach(local, app('mine'));
    setRoute({ kind: 'none' });
    const call = host.callPath({ clientId: 'mine', method: 'POST', path: '/page/click' });
    const listing = host.listClients();
    await flush();
    clock.advance(WAIT_MS);
    expect(await call).toEqual({ ok: true, data: 'from /page/click' });
    expect((await listing).clients.map((c) => c.id)).toEqual(['mine']);
    expect(logs.filter((l) => l.event === 'cluster.host_leaderless')).toHaveLength(1);
    // No more waiting while the cluster has no leader.
    expect((await host.listPaths({ clientId: 'mine' })).paths).toHaveLength(1);
    expect(rpc.sent).toHaveLength(0);
    // A leader again: it answers.
    attach(otherRouter, app('theirs'));
    setRoute({ kind: 'leader', id: 'M' });
    expect((await host.listClients()).clients.map((c) => c.id)).toEqual(['theirs']);
    // And a new leaderless spell waits again.
    setRoute({ kind: 'none' });
    const waiting = host.listClients();
    await flush();
    expect(rpc.sent).toHaveLength(1);
    setRoute({ kind: 'leader', id: 'M' });
    expect((await waiting).clients.map((c) => c.id)).toEqual(['theirs']);
  });

  it('a leader that does not answer in time is a time-out, not a reason to answer alone', async () => {
    rpc.mode = 'unsent';
    const listing = host.listClients().catch((e: unknown) => e);
    await flush();
    clock.advance(WAIT_MS);
    expect(await listing).toMatchObject({ code: 'not_ready', message: 'No link to the leader' });
  });

  it('a request that could not be sent, or reached a node that no longer leads, waits for the route to change', async () => {
    attach(otherRouter, app('editor'));
    for (const mode of ['unsent', 'not-leader'] as const) {
      rpc.mode = mode;
      const call = host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click' });
      await flush();
      expect(rpc.sent.at(-1)?.leaderId).toBe('L');
      rpc.mode = 'serve';
      setRoute({ kind: 'leader', id: 'M' });
      expect(await call).toEqual({ ok: true, data: 'from /page/click' });
      setRoute({ kind: 'leader', id: 'L' });
    }
  });

  it('a leader that changed while it was being asked is asked again at once', async () => {
    attach(otherRouter, app('editor'));
    rpc.mode = 'hang';
    const call = host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click' });
    await flush();
    rpc.mode = 'serve';
    setRoute({ kind: 'leader', id: 'M' });
    rpc.sent[0]?.end({ kind: 'answer', ok: false, error: { code: 'not_ready', message: 'not the leader' } });
    expect(await call).toEqual({ ok: true, data: 'from /page/click' });
    expect(rpc.sent.map((s) => s.leaderId)).toEqual(['L', 'M']);
  });

  it('a leader whose link to us is behind answers not_ready with a retry hint: that is the answer, not a missing leader', async () => {
    attach(otherRouter, app('editor'));
    const behind = { code: 'not_ready' as const, message: 'The link is behind', details: { retryAfterMs: 1000 } };
    rpc.mode = { answer: { kind: 'answer', ok: false, error: behind } };
    expect(await host.callPath({ clientId: 'editor', method: 'POST', path: '/page/click' })).toMatchObject({ ok: false, error: behind });
    await expect(host.listClients()).rejects.toMatchObject({ code: 'not_ready', details: { retryAfterMs: 1000 } });
    // Asked once each, at once: no wait for another leader.
    expect(rpc.sent.map((s) => s.leaderId)).toEqual(['L', 'L']);
  });

  it('a caller that goes away stops waiting, as a local call would end', async () => {
    setRoute({ kind: 'none' });
    const controller = new AbortController();
    const call = host.callPath({ clientId: 'x', method: 'GET', path: '/a' }, { signal: controller.signal });
    await flush();
    controller.abort();
    expect(await call).toEqual({ ok: false, source: 'server', error: { code: 'transport_error', message: 'The caller went away before the client answered' } });
    // Also while the leader is working on it.
    setRoute({ kind: 'leader', id: 'L' });
    rpc.mode = 'hang';
    const again = new AbortController();
    const pending = host.callPath({ clientId: 'x', method: 'GET', path: '/a' }, { signal: again.signal });
    await flush();
    again.abort();
    expect(await pending).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    rpc.sent.at(-1)?.end({ kind: 'closed' });
  });

  it('close ends every wait with not_ready', async () => {
    setRoute({ kind: 'none' });
    const call = host.callPath({ clientId: 'x', method: 'GET', path: '/a' });
    const listing = host.listClients().catch((e: unknown) => e);
    await flush();
    host.close();
    expect(await call).toEqual({ ok: false, source: 'server', error: { code: 'not_ready', message: 'Cluster node closed' } });
    expect(await listing).toMatchObject({ code: 'not_ready' });
    expect(await host.callPath({ clientId: 'x', method: 'GET', path: '/a' })).toMatchObject({ error: { code: 'not_ready' } });
  });
});

describe('right after a change of leader', () => {
  it('asks again while mirrors settle, so a listed id keeps working once its mirror arrives', async () => {
    setRoute({ kind: 'leader', id: 'M' });
    const call = host.callPath({ clientId: 'hello', method: 'POST', path: '/page/click' });
    await flush();
    clock.advance(RETRY_MS);
    await flush();
    // The client's own server mirrors it into the new leader under its prefix.
    attach(otherRouter, app('A.hello', { metadata: { mdpProxy: { serverId: 'A', clientId: 'hello' } } }));
    clock.advance(RETRY_MS);
    expect(await call).toEqual({ ok: true, data: 'from /page/click' });
    expect(rpc.sent.filter((s) => s.method === 'callPath').length).toBeGreaterThanOrEqual(2);
  });

  it('after the settle time, not_found is final at once', async () => {
    setRoute({ kind: 'leader', id: 'M' });
    const call = host.callPath({ clientId: 'nobody', method: 'GET', path: '/a' });
    for (let t = 0; t < SETTLE_MS; t += RETRY_MS) {
      await flush();
      clock.advance(RETRY_MS);
    }
    expect(await call).toMatchObject({ ok: false, error: { code: 'not_found' } });
    const asked = rpc.sent.length;
    expect(await host.callPath({ clientId: 'nobody', method: 'GET', path: '/a' })).toMatchObject({ error: { code: 'not_found' } });
    expect(rpc.sent.length).toBe(asked + 1);
  });

  it('the same holds when this node became the leader (its own router answers)', async () => {
    setRoute({ kind: 'local' });
    const call = host.listPaths({ clientId: 'hello' });
    await flush();
    attach(local, app('B.hello', { metadata: { mdpProxy: { serverId: 'B', clientId: 'hello' } } }));
    clock.advance(RETRY_MS);
    expect((await call).paths).toHaveLength(1);
  });
});

describe('onChange', () => {
  it('sets no timer while nobody listens, polls the leader while someone does, and stops after the last unsubscribe', async () => {
    expect(timers.size).toBe(0);
    let fired = 0;
    const off = host.onChange(() => (fired += 1));
    const off2 = host.onChange(() => undefined);
    expect(timers.size).toBe(1);
    clock.advance(POLL_MS);
    await flush();
    expect(rpc.methods()).toEqual(['listClients']);
    // The first listing fires: it may show a change made since the subscription.
    expect(fired).toBe(1);
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(1);
    off();
    off();
    expect(timers.size).toBe(1);
    off2();
    expect(timers.size).toBe(0);
    clock.advance(10 * POLL_MS);
    expect(rpc.sent).toHaveLength(2);
  });

  it('fires when the catalog on the leader changes, not when only times do', async () => {
    let fired = -1; // the first listing
    host.onChange(() => (fired += 1));
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(0);
    const session = attach(leaderRouter, app('editor'));
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(1);
    session.handle({ type: 'ping', timestamp: 1 } as never);
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(1);
    session.handle({ type: 'updateClientCatalog', clientId: 'editor', paths: [{ type: 'skill', path: '/new/skill.md' }] });
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(2);
    session.end();
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(3);
  });

  it('fires on a change of leader, and once more on the first listing of the new one', async () => {
    let fired = -1; // the first listing
    host.onChange(() => (fired += 1));
    clock.advance(POLL_MS);
    await flush();
    setRoute({ kind: 'none' });
    expect(fired).toBe(0);
    setRoute({ kind: 'leader', id: 'M' });
    expect(fired).toBe(1);
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(2);
    clock.advance(POLL_MS);
    await flush();
    expect(fired).toBe(2);
  });

  it('while this node leads, hears the router, with no timer', async () => {
    setRoute({ kind: 'local' });
    let fired = 0;
    host.onChange(() => (fired += 1));
    expect(timers.size).toBe(0);
    attach(local, app('mine'));
    expect(fired).toBe(1);
    setRoute({ kind: 'leader', id: 'L' });
    expect(fired).toBe(2);
    expect(timers.size).toBe(1);
    // The router's events are not this node's catalog while another leads.
    attach(local, app('also-mine'));
    expect(fired).toBe(2);
  });

  it('a listener that throws is logged and does not stop the others', async () => {
    let fired = 0;
    host.onChange(() => {
      throw new Error('boom');
    });
    host.onChange(() => (fired += 1));
    setRoute({ kind: 'leader', id: 'M' });
    expect(fired).toBe(1);
    expect(logs.some((l) => l.event === 'cluster.host_listener_failed')).toBe(true);
  });

  it("polls every page of the leader's listing, one request at a time, and hears a change on any page", async () => {
    const sessions = Array.from({ length: 1500 }, (_, i) => attach(leaderRouter, app(`c${String(i).padStart(4, '0')}`)));
    let fired = -1; // the first listing
    host.onChange(() => (fired += 1));
    clock.advance(POLL_MS);
    await settle(20);
    expect(rpc.methods()).toEqual(['listClients', 'listClients']);
    expect(rpc.sent[1]?.params).toEqual({ limit: 1000, cursor: expect.any(String) });
    expect(fired).toBe(0);
    // A client listed on the second page changes its catalog.
    (sessions[1400] as Session).handle({ type: 'updateClientCatalog', clientId: 'c1400', paths: [{ type: 'skill', path: '/new/skill.md' }] });
    clock.advance(POLL_MS);
    await settle(20);
    expect(fired).toBe(1);
  });

  it('the digest covers ids, names, descriptions and paths only', () => {
    const base: ListedClient = {
      id: 'a',
      name: 'A',
      paths: [],
      status: 'online',
      connectedAt: 't0',
      lastSeenAt: 't1',
      connection: { mode: 'ws', secure: false, authSource: 'none' },
      aliases: [],
    };
    expect(catalogDigest([base])).toBe(catalogDigest([{ ...base, lastSeenAt: 't2', connectedAt: 't9' }]));
    expect(catalogDigest([base])).not.toBe(catalogDigest([{ ...base, description: 'new' }]));
    expect(catalogDigest([base])).not.toBe(catalogDigest([{ ...base, paths: [{ type: 'skill', path: '/s/skill.md' }] }]));
  });
});
