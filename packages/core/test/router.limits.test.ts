/**
 * What the router refuses: another principal's takeover of a client id, catalogs over their
 * limits or rate, calls over a client's pending limit; and calls whose caller went away.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PathDescriptor } from '@mdp/protocol';
import { MdpError, Router, SESSION_CLOSE } from '../src/index.js';
import { FakeTransport, client, connect, connectClient, endpoint, flush, skill, track, manualClock, settle, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock();
  router = new Router({ clock });
});

afterEach(async () => {
  await router.close();
});

/** Open a session as `principal` and register `id` on it. */
function connectAs(principal: string | undefined, id: string, paths: PathDescriptor[] = [endpoint('/ping')]) {
  const transport = new FakeTransport('ws');
  const session = router.openSession(transport, undefined, principal);
  session.handle({ type: 'registerClient', client: client(id, paths) });
  return { session, transport };
}

function thrown(action: () => void): MdpError {
  try {
    action();
  } catch (error) {
    if (error instanceof MdpError) return error;
    throw error;
  }
  throw new Error('expected an MdpError');
}

describe('client ids belong to the principal that registered them', () => {
  it("refuses another principal's registerClient and leaves the holder untouched", async () => {
    const owner = connectAs('token:one', 'owned');
    const pending = track(router.invoke('owned', 'GET', '/ping'));
    const intruder = router.openSession(new FakeTransport('ws'), undefined, 'token:two');

    const error = thrown(() => intruder.handle({ type: 'registerClient', client: client('owned', [endpoint('/evil')]) }));
    expect(error).toMatchObject({ code: 'bad_request', refusal: 'client_id_taken', message: 'Client id held by another principal' });

    await flush();
    expect(owner.transport.closes).toEqual([]);
    expect(pending.settled).toBe(false);
    expect(router.getClient('owned')).toMatchObject({ sessionId: owner.session.id, paths: [{ path: '/ping' }] });
    expect(intruder.clientId).toBeUndefined();
    // Calls (and the readers' credentials they carry) still go to the owner only.
    void router.invoke('owned', 'GET', '/ping', { auth: { token: 'reader' } });
    expect(owner.transport.calls.at(-1)?.auth).toEqual({ token: 'reader' });
  });

  it('keeps a refused session registered under its own id', () => {
    connectAs('token:one', 'owned');
    const other = connectAs('token:two', 'mine');
    expect(() => other.session.handle({ type: 'registerClient', client: client('owned') })).toThrow(MdpError);
    expect(router.getClient('mine')?.sessionId).toBe(other.session.id);
  });

  it("lets the same principal's newer session replace the older one (4000)", () => {
    const first = connectAs('token:one', 'owned');
    const second = connectAs('token:one', 'owned');
    expect(first.transport.closes).toEqual([SESSION_CLOSE.replaced]);
    expect(router.getClient('owned')?.sessionId).toBe(second.session.id);
  });

  it('without an auth policy (no principal) the newer session replaces the older one, as before', () => {
    const first = connectAs(undefined, 'shared');
    const second = connectAs(undefined, 'shared');
    expect(first.transport.closes).toEqual([SESSION_CLOSE.replaced]);
    expect(router.getClient('shared')?.sessionId).toBe(second.session.id);
  });

  it('a principal with a session cannot take an id from a session that has none', () => {
    connectAs(undefined, 'x');
    const error = thrown(() => connectAs('token:one', 'x'));
    expect(error.refusal).toBe('client_id_taken');
  });
});

describe('catalog limits', () => {
  it('refuses a path over the length limit, registering nothing', () => {
    router = new Router({ clock, maxPathLength: 10 });
    const { session } = connect(router);
    const error = thrown(() => session.handle({ type: 'registerClient', client: client('c', [endpoint('/ok'), skill('/long/path/skill.md')]) }));
    expect(error).toMatchObject({ code: 'bad_request', refusal: undefined });
    expect(error.message).toBe('paths[1].path is 19 characters long; at most 10 are allowed');
    expect(router.hasClient('c')).toBe(false);
  });

  it('refuses a catalog update over the limits and keeps the old catalog', () => {
    router = new Router({ clock, maxCatalogPaths: 2, maxPathSegments: 2 });
    const { session } = connectClient(router, 'c', [endpoint('/a')]);
    expect(() => session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [endpoint('/a'), endpoint('/b'), endpoint('/c')] })).toThrow(
      'Catalog has 3 paths; at most 2 are allowed',
    );
    expect(() => session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [endpoint('/a/b/c')] })).toThrow(/3 segments/);
    expect(router.getClient('c')?.paths).toEqual([endpoint('/a')]);
  });

  it('refuses a catalog that would take all catalogs together past maxTotalPaths (not_ready), and counts what leaves', () => {
    router = new Router({ clock, maxTotalPaths: 5 });
    const a = connectClient(router, 'a', [endpoint('/1'), endpoint('/2'), endpoint('/3')]);
    const { session } = connect(router);
    const error = thrown(() => session.handle({ type: 'registerClient', client: client('b', [endpoint('/1'), endpoint('/2'), endpoint('/3')]) }));
    expect(error).toMatchObject({ code: 'not_ready', refusal: undefined });
    expect(error.message).toBe('The server holds 3 paths; 3 more would pass its limit of 5 paths in all catalogs; try again later');
    expect(router.hasClient('b')).toBe(false);
    // A catalog update counts what it replaces: 'a' may grow to 5, not to 6.
    a.session.handle({ type: 'updateClientCatalog', clientId: 'a', paths: [endpoint('/1'), endpoint('/2'), endpoint('/3'), endpoint('/4'), endpoint('/5')] });
    expect(() => a.session.handle({ type: 'updateClientCatalog', clientId: 'a', paths: Array.from({ length: 6 }, (_, i) => endpoint(`/${i}`)) })).toThrow(
      /limit of 5 paths/,
    );
    // So does a re-registration, and a takeover by the same principal of a held id.
    a.session.handle({ type: 'registerClient', client: client('a', [endpoint('/1'), endpoint('/2')]) });
    const replacing = connectClient(router, 'a', [endpoint('/1'), endpoint('/2'), endpoint('/3'), endpoint('/4'), endpoint('/5')]);
    expect(a.transport.closes).toEqual([SESSION_CLOSE.replaced]);
    // What leaves frees its paths.
    replacing.session.handle({ type: 'unregisterClient', clientId: 'a' });
    session.handle({ type: 'registerClient', client: client('b', [endpoint('/1'), endpoint('/2'), endpoint('/3'), endpoint('/4'), endpoint('/5')]) });
    expect(router.hasClient('b')).toBe(true);
  });

  it('refuses a maxTotalPaths that is not a positive number', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new Router({ clock, maxTotalPaths: bad })).toThrow(new RangeError('maxTotalPaths must be a positive number'));
    }
  });

  it('refuses catalog changes over the rate with a retry time, and allows them again later', () => {
    router = new Router({ clock, maxCatalogUpdatesPerMinute: 2 });
    const { session } = connectClient(router, 'c', [endpoint('/a')]);
    session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [endpoint('/b')] });
    const error = thrown(() => session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [endpoint('/c')] }));
    expect(error).toMatchObject({ refusal: 'rate_limited', retryAfterMs: 30_000 });
    expect(error.message).toBe('Catalog changes over the limit of 2 per minute; retry in 30000 ms');
    expect(router.getClient('c')?.paths).toEqual([endpoint('/b')]);
    clock.advance(30_000);
    session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [endpoint('/c')] });
    expect(router.getClient('c')?.paths).toEqual([endpoint('/c')]);
  });

  it('counts re-registrations against the same rate, per session', () => {
    router = new Router({ clock, maxCatalogUpdatesPerMinute: 1 });
    const { session } = connectClient(router, 'c');
    expect(() => session.handle({ type: 'registerClient', client: client('c') })).toThrow(/per minute/);
    // Another session has a rate of its own.
    expect(() => connectClient(router, 'd')).not.toThrow();
  });
});

/** UTF-8 bytes of `value` as JSON. */
const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

describe('catalog byte limits', () => {
  it('takes a description of maxDescriptionLength characters and refuses one more (too_large), registering nothing', () => {
    router = new Router({ clock, maxDescriptionLength: 100 });
    connectClient(router, 'at', [skill('/s/skill.md', { description: 'x'.repeat(100) })]);
    expect(router.hasClient('at')).toBe(true);
    const { session } = connect(router);
    const error = thrown(() => session.handle({ type: 'registerClient', client: client('over', [skill('/s/skill.md', { description: 'x'.repeat(101) })]) }));
    expect(error).toMatchObject({
      code: 'bad_request',
      refusal: 'too_large',
      message: 'paths[0].description is 101 characters long; at most 100 are allowed (maxDescriptionLength)',
    });
    expect(router.hasClient('over')).toBe(false);
    expect(router.catalogBytes).toBe(bytesOf(client('at', [skill('/s/skill.md', { description: 'x'.repeat(100) })])));
  });

  it('takes a schema of maxSchemaLength characters as JSON and refuses one more', () => {
    router = new Router({ clock, maxSchemaLength: 50 });
    const schema = (chars: number) => ({ type: 'object', description: 'd'.repeat(chars - 34) });
    expect(JSON.stringify(schema(50)).length).toBe(50);
    connectClient(router, 'at', [endpoint('/a', 'POST', { inputSchema: schema(50) })]);
    const { session } = connect(router);
    const error = thrown(() => session.handle({ type: 'registerClient', client: client('over', [endpoint('/a', 'POST', { inputSchema: schema(51) })]) }));
    expect(error).toMatchObject({ refusal: 'too_large', message: 'paths[0].inputSchema is over 50 characters as JSON (maxSchemaLength)' });
  });

  it('takes a catalog of maxCatalogBytes and refuses one byte more', () => {
    const descriptor = client('c', [skill('/s/skill.md', { description: 'x'.repeat(500) })]);
    router = new Router({ clock, maxCatalogBytes: bytesOf(descriptor) });
    connect(router).session.handle({ type: 'registerClient', client: descriptor });
    expect(router.catalogBytes).toBe(bytesOf(descriptor));
    const bigger = client('d', [skill('/s/skill.md', { description: 'x'.repeat(501) })]);
    const error = thrown(() => connect(router).session.handle({ type: 'registerClient', client: bigger }));
    expect(error).toMatchObject({ refusal: 'too_large', message: `Catalog is over ${bytesOf(descriptor)} bytes as JSON (maxCatalogBytes)` });
  });

  it('refuses an update over a byte cap and keeps the old catalog, its bytes and its place in the total', () => {
    const paths = [skill('/s/skill.md', { description: 'short' })];
    router = new Router({ clock, maxDescriptionLength: 10, maxCatalogBytes: 200, maxTotalCatalogBytes: 10_000 });
    const { session } = connectClient(router, 'c', paths);
    const held = router.catalogBytes;
    const tooLong = thrown(() =>
      session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: [skill('/s/skill.md', { description: 'x'.repeat(11) })] }),
    );
    expect(tooLong).toMatchObject({
      refusal: 'too_large',
      message: 'paths[0].description is 11 characters long; at most 10 are allowed (maxDescriptionLength)',
    });
    const tooBig = thrown(() =>
      session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: Array.from({ length: 10 }, (_, i) => skill(`/s${i}/skill.md`)) }),
    );
    expect(tooBig).toMatchObject({ refusal: 'too_large', message: 'Catalog is over 200 bytes as JSON (maxCatalogBytes)' });
    expect(router.getClient('c')?.paths).toEqual(paths);
    expect(router.catalogBytes).toBe(held);
    // An update within the caps counts the client's own fields with the new paths.
    const next = [endpoint('/e')];
    session.handle({ type: 'updateClientCatalog', clientId: 'c', paths: next });
    expect(router.catalogBytes).toBe(bytesOf({ ...client('c', paths), paths: next }));
  });

  it('refuses a catalog that would take all catalogs past maxTotalCatalogBytes (not_ready), at the limit itself accepted, and counts what leaves', () => {
    const a = client('a', [skill('/s/skill.md', { description: 'x'.repeat(300) })]);
    const b = client('b', [skill('/s/skill.md', { description: 'y'.repeat(300) })]);
    router = new Router({ clock, maxTotalCatalogBytes: bytesOf(a) + bytesOf(b) });
    const first = connect(router);
    first.session.handle({ type: 'registerClient', client: a });
    const second = connect(router);
    second.session.handle({ type: 'registerClient', client: b });
    expect(router.catalogBytes).toBe(bytesOf(a) + bytesOf(b));
    const third = connect(router);
    const error = thrown(() => third.session.handle({ type: 'registerClient', client: client('c', []) }));
    expect(error).toMatchObject({ code: 'not_ready', refusal: undefined });
    expect(error.message).toBe(
      `Catalogs here hold ${bytesOf(a) + bytesOf(b)} bytes; ${bytesOf(client('c', []))} more would pass maxTotalCatalogBytes (${bytesOf(a) + bytesOf(b)}); try again later`,
    );
    expect(router.hasClient('c')).toBe(false);
    // A catalog no larger than the one it replaces is always taken; a larger one is not.
    first.session.handle({ type: 'updateClientCatalog', clientId: 'a', paths: [skill('/s/skill.md', { description: 'z'.repeat(300) })] });
    expect(() => first.session.handle({ type: 'updateClientCatalog', clientId: 'a', paths: [skill('/s/skill.md', { description: 'z'.repeat(301) })] })).toThrow(
      /maxTotalCatalogBytes/,
    );
    // What leaves frees its bytes: the same id taken over, an unregistered client, an ended session.
    connect(router).session.handle({ type: 'registerClient', client: b });
    expect(second.transport.closes).toEqual([SESSION_CLOSE.replaced]);
    expect(router.catalogBytes).toBe(bytesOf(a) + bytesOf(b));
    first.session.handle({ type: 'unregisterClient', clientId: 'a' });
    third.session.handle({ type: 'registerClient', client: client('c', []) });
    third.session.end();
    expect(router.catalogBytes).toBe(bytesOf(b));
  });

  it('refuses byte limits that are not positive numbers', () => {
    for (const name of ['maxDescriptionLength', 'maxSchemaLength', 'maxCatalogBytes', 'maxTotalCatalogBytes', 'maxClientsPerAddress'] as const) {
      expect(() => new Router({ clock, [name]: 0 })).toThrow(new RangeError(`${name} must be a positive number`));
    }
  });
});

describe('clients per remote address', () => {
  it('takes maxClientsPerAddress clients from one address and refuses one more (too_many_clients); other addresses are not concerned', () => {
    router = new Router({ clock, maxClientsPerAddress: 2 });
    connectClient(router, 'a1', undefined, { address: '10.0.0.1' });
    connectClient(router, 'a2', undefined, { address: '10.0.0.1' });
    const { session } = connect(router, { address: '10.0.0.1' });
    const error = thrown(() => session.handle({ type: 'registerClient', client: client('a3') }));
    expect(error).toMatchObject({ code: 'bad_request', refusal: 'too_many_clients', message: 'Too many clients from this address (maxClientsPerAddress 2)' });
    expect(router.hasClient('a3')).toBe(false);
    connectClient(router, 'b1', undefined, { address: '10.0.0.2' });
    // Sessions without an address (in-process) are not counted.
    for (let i = 0; i < 3; i++) connectClient(router, `local${i}`);
    expect(router.clientCount).toBe(6);
  });

  it('counts clients, not sessions or registrations: what leaves frees its place', () => {
    router = new Router({ clock, maxClientsPerAddress: 2 });
    const one = connectClient(router, 'a1', undefined, { address: 'A' });
    const two = connectClient(router, 'a2', undefined, { address: 'A' });
    // A session registering again (same id or another) adds no client.
    one.session.handle({ type: 'registerClient', client: client('a1', [endpoint('/again')]) });
    one.session.handle({ type: 'registerClient', client: client('renamed') });
    // Taking over an id held from the same address replaces that client.
    connectClient(router, 'a2', undefined, { address: 'A' });
    expect(two.transport.closes).toEqual([SESSION_CLOSE.replaced]);
    // A session with no client yet may stay open; its registration is what is refused.
    const waiting = connect(router, { address: 'A' });
    expect(() => waiting.session.handle({ type: 'registerClient', client: client('a3') })).toThrow(/maxClientsPerAddress/);
    one.session.handle({ type: 'unregisterClient', clientId: 'renamed' });
    waiting.session.handle({ type: 'registerClient', client: client('a3') });
    expect(() => connectClient(router, 'a4', undefined, { address: 'A' })).toThrow(/maxClientsPerAddress/);
    waiting.session.end();
    connectClient(router, 'a4', undefined, { address: 'A' });
    expect(router.hasClient('a4')).toBe(true);
  });

  it('refuses a client of a full address before looking at the totals, and after its own caps', () => {
    router = new Router({ clock, maxClientsPerAddress: 1, maxDescriptionLength: 10, maxTotalPaths: 1 });
    connectClient(router, 'a1', [endpoint('/x')], { address: 'A' });
    const { session } = connect(router, { address: 'A' });
    expect(thrown(() => session.handle({ type: 'registerClient', client: client('a2', [skill('/s/skill.md', { description: 'a long text' })]) })).refusal).toBe(
      'too_large',
    );
    expect(thrown(() => session.handle({ type: 'registerClient', client: client('a2', [endpoint('/y')]) })).refusal).toBe('too_many_clients');
  });

  it('does not count the proven mirror links of cluster members', () => {
    router = new Router({ clock, maxClientsPerAddress: 1 });
    for (let i = 0; i < 3; i++) {
      const link = connect(router, { address: 'A', principal: 'p', peer: 'member' });
      link.session.handle({ type: 'registerClient', client: client(`member.c${i}`) });
    }
    // The address's one place is still free, and then taken.
    connectClient(router, 'a1', undefined, { address: 'A' });
    expect(() => connectClient(router, 'a2', undefined, { address: 'A' })).toThrow(/maxClientsPerAddress/);
    expect(router.clientCount).toBe(4);
  });
});

describe('pending calls per client', () => {
  it('ends a call over the limit at once with not_ready, sending nothing', async () => {
    router = new Router({ clock, maxPendingCalls: 2 });
    const { transport } = connectClient(router, 'busy');
    void router.invoke('busy', 'GET', '/ping');
    void router.invoke('busy', 'GET', '/ping');
    const third = track(router.invoke('busy', 'GET', '/ping'));
    await flush();
    expect(third.outcome).toEqual({
      ok: false,
      source: 'server',
      error: {
        code: 'not_ready',
        message: 'Client "busy" has 2 calls waiting for an answer; try again later',
        details: { retryAfterMs: 1000 },
      },
    });
    expect(transport.calls).toHaveLength(2);
    expect(router.pendingCount).toBe(2);
  });

  it('takes calls again once one is answered', async () => {
    router = new Router({ clock, maxPendingCalls: 1 });
    const { session, transport } = connectClient(router, 'c');
    const first = track(router.invoke('c', 'GET', '/ping'));
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true, data: 1 });
    await flush();
    expect(first.outcome).toEqual({ ok: true, data: 1 });
    void router.invoke('c', 'GET', '/ping');
    expect(transport.calls).toHaveLength(2);
  });
});

describe('calls a transport refuses (its peer is behind)', () => {
  it('end at once with not_ready and a retry hint, and do not count as unanswered', () => {
    const { session, transport } = connectClient(router, 'c');
    // A transport that declines every call while it is handed it, as the websocket one does over its cap.
    transport.send = (message) => {
      if (message.type === 'callClient') session.refuseCall(message.requestId, 'Client "c" is behind');
    };
    const target = router.findTarget('c', 'GET', '/ping');
    if (!target) throw new Error('no target');
    const outcomes: unknown[] = [];
    const handle = router.dispatch('c', target, {}, (outcome) => outcomes.push(outcome));
    expect(handle).toBeUndefined();
    expect(outcomes).toEqual([{ ok: false, source: 'server', error: { code: 'not_ready', message: 'Client "c" is behind', details: { retryAfterMs: 1000 } } }]);
    expect(session.pendingCount).toBe(0);
    expect(session.unansweredCalls).toBe(0);
    expect(router.pendingCount).toBe(0);
  });

  it('ignore a request id that is not a pending call of that session', async () => {
    const { session, transport } = connectClient(router, 'c');
    const other = connectClient(router, 'd');
    const call = track(router.invoke('c', 'GET', '/ping'));
    other.session.refuseCall(transport.lastCall.requestId, 'not yours');
    session.refuseCall('no-such-call', 'unknown');
    await flush();
    expect(call.outcome).toBeUndefined();
    expect(session.pendingCount).toBe(1);
  });
});

describe('cancel', () => {
  it('ends the call at once as caller gone and forgets it; later results are ignored', () => {
    const { session, transport } = connectClient(router, 'c');
    const target = router.findTarget('c', 'GET', '/ping');
    if (!target) throw new Error('no target');
    const outcomes: unknown[] = [];
    const handle = router.dispatch('c', target, {}, (outcome) => outcomes.push(outcome));
    expect(handle?.requestId).toBe(transport.lastCall.requestId);
    router.cancel(handle as NonNullable<typeof handle>);
    expect(outcomes).toEqual([{ ok: false, source: 'server', error: { code: 'transport_error', message: 'The caller went away before the client answered' } }]);
    expect(router.isPending(transport.lastCall.requestId)).toBe(false);
    expect(session.pendingCount).toBe(0);
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true });
    router.cancel(handle as NonNullable<typeof handle>);
    expect(outcomes).toHaveLength(1);
  });

  it('returns no handle for a call that ended before dispatch returned', () => {
    const { transport } = connectClient(router, 'c');
    const target = router.findTarget('c', 'GET', '/ping');
    if (!target) throw new Error('no target');
    const done = vi.fn();
    expect(router.dispatch('missing', target, {}, done)).toBeUndefined();
    expect(done).toHaveBeenCalledOnce();
    // A transport that fails while delivering ends the call before dispatch returns.
    transport.send = () => {
      throw new Error('socket gone');
    };
    expect(router.dispatch('c', target, {}, done)).toBeUndefined();
    expect(done).toHaveBeenCalledTimes(2);
  });
});

describe('the liveness sweep', () => {
  it('pings sessions in batches, one turn of the event loop per batch', async () => {
    const sessions = Array.from({ length: 600 }, () => connect(router));
    clock.advance(30_000);
    // The timer's callback handles the first batch; the others follow on later turns.
    const pinged = (): number => sessions.filter((s) => s.transport.sent.length > 0).length;
    expect(pinged()).toBe(256);
    await settle(1); // the next batch's setImmediate
    expect(pinged()).toBe(512);
    await settle(1);
    expect(pinged()).toBe(600);
    expect(sessions.every((s) => s.transport.ofType('ping').length === 1)).toBe(true);
  });
});

describe('unanswered calls', () => {
  it('counts calls that ended without the client answering since it last answered one it was sent', async () => {
    const { session, transport } = connectClient(router, 'c');
    const controller = new AbortController();
    void router.invoke('c', 'GET', '/ping', { signal: controller.signal });
    void router.invoke('c', 'GET', '/ping', { timeoutMs: 100 });
    controller.abort();
    clock.advance(100);
    await flush();
    expect(session.unansweredCalls).toBe(2);
    // An answer to an id it was never sent shows nothing: a peer that reads nothing can make one up.
    session.handle({ type: 'callClientResult', requestId: 'made-up', ok: true });
    expect(session.unansweredCalls).toBe(2);
    expect(session.answers).toBe(0);
    // A late answer to a call it was sent shows it reads, once.
    session.handle({ type: 'callClientResult', requestId: transport.calls[0]!.requestId, ok: true });
    expect(session.unansweredCalls).toBe(0);
    expect(session.answers).toBe(1);
    void router.invoke('c', 'GET', '/ping', { timeoutMs: 100 });
    clock.advance(100);
    await flush();
    expect(session.unansweredCalls).toBe(1);
    session.handle({ type: 'callClientResult', requestId: transport.calls[0]!.requestId, ok: true });
    expect(session.unansweredCalls).toBe(1);
    // Not a minute after its call ended.
    clock.advance(60_001);
    session.handle({ type: 'callClientResult', requestId: transport.calls[1]!.requestId, ok: true });
    expect(session.unansweredCalls).toBe(1);
    expect(session.answers).toBe(1);
    // An answer to a pending call does, failure or not.
    void router.invoke('c', 'GET', '/ping');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: true });
    expect(session.unansweredCalls).toBe(0);
    expect(session.answers).toBe(2);
    void router.invoke('c', 'GET', '/ping');
    session.handle({ type: 'callClientResult', requestId: transport.lastCall.requestId, ok: false, error: { code: 'handler_error', message: 'no' } });
    expect(session.unansweredCalls).toBe(0);
  });
});
