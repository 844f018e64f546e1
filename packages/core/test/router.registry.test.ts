/** Sessions and the client registry (SPEC §4 first bullets, §7 authSource). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MdpError, Router, SESSION_CLOSE, type ClientEvent } from '../src/index.js';
import { client, connect, connectClient, endpoint, flush, skill, track, manualClock, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock();
  router = new Router({ clock });
});

afterEach(async () => {
  await router.close();
});

function recordEvents(): ClientEvent[] {
  const events: ClientEvent[] = [];
  router.onClientEvent((event) => events.push(event));
  return events;
}

describe('registerClient', () => {
  it('registers a client and lists it', () => {
    const events = recordEvents();
    const { session } = connectClient(router, 'alpha', [endpoint('/orders/:id'), skill('/docs/review/skill.md')], { kind: 'ws' });

    expect(router.clientCount).toBe(1);
    const [listed] = router.listClients();
    expect(listed).toMatchObject({
      id: 'alpha',
      sessionId: session.id,
      transportKind: 'ws',
      authSource: 'none',
      descriptor: { id: 'alpha', name: 'Client alpha' },
      paths: [
        { type: 'endpoint', path: '/orders/:id', method: 'GET' },
        { type: 'skill', path: '/docs/review/skill.md' },
      ],
    });
    expect(typeof listed?.registeredAt).toBe('number');
    expect(router.getClient('alpha')).toEqual(listed);
    expect(router.getClient('nobody')).toBeUndefined();
    expect(session.clientId).toBe('alpha');
    expect(events).toEqual([{ type: 'registered', client: listed }]);
  });

  it('keeps unknown descriptor fields (forward compatibility)', () => {
    connectClient(router, 'alpha', [endpoint('/x', 'GET', { futureField: { a: 1 } })]);
    expect(router.getClient('alpha')?.paths[0]).toMatchObject({ futureField: { a: 1 } });
  });

  it('lists clients of several sessions', () => {
    connectClient(router, 'a');
    connectClient(router, 'b');
    connectClient(router, 'c');
    expect(
      router
        .listClients()
        .map((c) => c.id)
        .sort(),
    ).toEqual(['a', 'b', 'c']);
    expect(router.sessionCount).toBe(3);
  });

  it('with another id on the same session replaces the previous client of that session', async () => {
    const events = recordEvents();
    const { session, transport } = connectClient(router, 'first');
    const call = track(router.invoke('first', 'GET', '/ping'));

    session.handle({ type: 'registerClient', client: client('second') });
    await flush();

    expect(router.getClient('first')).toBeUndefined();
    expect(router.getClient('second')?.sessionId).toBe(session.id);
    expect(router.clientCount).toBe(1);
    expect(session.clientId).toBe('second');
    // The session itself stays open; only its client changed.
    expect(session.closed).toBe(false);
    expect(transport.closes).toEqual([]);
    expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(events.map((e) => e.type)).toEqual(['registered', 'unregistered', 'registered']);
  });

  it('with the same id on the same session updates the client in place', () => {
    const events = recordEvents();
    const { session } = connectClient(router, 'alpha', [endpoint('/old')]);
    session.handle({ type: 'registerClient', client: client('alpha', [endpoint('/new')]) });

    expect(router.clientCount).toBe(1);
    expect(router.findTarget('alpha', 'GET', '/old')).toBeUndefined();
    expect(router.findTarget('alpha', 'GET', '/new')?.path).toBe('/new');
    expect(events.map((e) => e.type)).toEqual(['registered', 'updated']);
  });

  it('with an id held by another session replaces and closes the older session (4000)', async () => {
    const events = recordEvents();
    const older = connectClient(router, 'alpha', [endpoint('/ping')]);
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    expect(older.transport.calls).toHaveLength(1);

    const newer = connectClient(router, 'alpha', [endpoint('/ping')]);
    await flush();

    expect(older.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
    expect(SESSION_CLOSE.replaced).toEqual({ code: 4000, reason: 'Replaced by newer client session' });
    expect(older.session.closed).toBe(true);
    expect(router.sessionCount).toBe(1);
    expect(router.getClient('alpha')?.sessionId).toBe(newer.session.id);
    // The older session's pending call failed at once: no time was advanced.
    expect(call.settled).toBe(true);
    expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(router.pendingCount).toBe(0);
    expect(newer.transport.closes).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(['registered', 'unregistered', 'registered']);

    // New calls go to the newer session only.
    void router.invoke('alpha', 'GET', '/ping');
    expect(newer.transport.calls).toHaveLength(1);
    expect(older.transport.calls).toHaveLength(1);
  });

  it('a late answer from the replaced session cannot settle anything', async () => {
    const older = connectClient(router, 'alpha');
    const first = track(router.invoke('alpha', 'GET', '/ping'));
    const oldRequestId = older.transport.lastCall.requestId;
    const newer = connectClient(router, 'alpha');
    const second = track(router.invoke('alpha', 'GET', '/ping'));

    // The older session is closed: core refuses further messages from it.
    expect(() => older.session.handle({ type: 'callClientResult', requestId: oldRequestId, ok: true, data: 'late' })).toThrow(MdpError);
    newer.session.handle({ type: 'callClientResult', requestId: newer.transport.lastCall.requestId, ok: true, data: 'fresh' });
    await flush();
    expect(first.outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    expect(second.outcome).toEqual({ ok: true, data: 'fresh' });
  });

  it('handles a transport that ends its session from inside close() exactly once', () => {
    const events = recordEvents();
    const older = connectClient(router, 'alpha');
    older.transport.onClose = () => older.session.end();
    connectClient(router, 'alpha');

    expect(older.transport.closes).toHaveLength(1);
    expect(events.filter((e) => e.type === 'unregistered')).toHaveLength(1);
    expect(router.clientCount).toBe(1);
  });

  it('a listener that throws does not break registration', () => {
    router.onClientEvent(() => {
      throw new Error('listener bug');
    });
    connectClient(router, 'alpha');
    expect(router.getClient('alpha')).toBeDefined();
  });

  it('stops delivering events after unsubscribe', () => {
    const events: ClientEvent[] = [];
    const off = router.onClientEvent((e) => events.push(e));
    connectClient(router, 'a');
    off();
    connectClient(router, 'b');
    expect(events).toHaveLength(1);
  });
});

describe('updateClientCatalog', () => {
  it('replaces the catalog of the client on this session', () => {
    const events = recordEvents();
    const { session } = connectClient(router, 'alpha', [endpoint('/old/:id'), skill('/docs/old/skill.md')]);
    expect(router.findTarget('alpha', 'GET', '/old/1')).toBeDefined();

    session.handle({ type: 'updateClientCatalog', clientId: 'alpha', paths: [endpoint('/new/:id', 'POST')] });

    expect(router.findTarget('alpha', 'GET', '/old/1')).toBeUndefined();
    expect(router.findTarget('alpha', 'GET', '/docs/old/skill.md')).toBeUndefined();
    expect(router.findTarget('alpha', 'POST', '/new/7')?.params).toEqual({ id: '7' });
    const listed = router.getClient('alpha');
    expect(listed?.paths).toEqual([endpoint('/new/:id', 'POST')]);
    // Only the catalog changes; the rest of the descriptor stays.
    expect(listed?.descriptor.name).toBe('Client alpha');
    expect(events.at(-1)).toEqual({ type: 'updated', client: listed });
  });

  it('for another id throws MdpError bad_request and changes nothing', () => {
    const own = connectClient(router, 'alpha', [endpoint('/a')]);
    connectClient(router, 'beta', [endpoint('/b')]);

    let thrown: unknown;
    try {
      own.session.handle({ type: 'updateClientCatalog', clientId: 'beta', paths: [] });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MdpError);
    expect((thrown as MdpError).code).toBe('bad_request');
    expect(router.findTarget('beta', 'GET', '/b')).toBeDefined();
    expect(router.findTarget('alpha', 'GET', '/a')).toBeDefined();
  });

  it('on a session without a client throws bad_request', () => {
    const { session } = connect(router);
    expect(() => session.handle({ type: 'updateClientCatalog', clientId: 'ghost', paths: [] })).toThrow(
      expect.objectContaining({ name: 'MdpError', code: 'bad_request' }),
    );
  });
});

describe('unregisterClient', () => {
  it('for an id not held by this session is ignored', async () => {
    const events = recordEvents();
    const mine = connectClient(router, 'alpha');
    connectClient(router, 'beta');
    const betaCall = track(router.invoke('beta', 'GET', '/ping'));

    mine.session.handle({ type: 'unregisterClient', clientId: 'beta' });
    mine.session.handle({ type: 'unregisterClient', clientId: 'nobody' });
    await flush();

    expect(router.getClient('beta')).toBeDefined();
    expect(router.getClient('alpha')).toBeDefined();
    expect(betaCall.settled).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['registered', 'registered']);
  });

  it('for its own id removes the client and fails its pending calls, keeping the session', async () => {
    const events = recordEvents();
    const { session, transport } = connectClient(router, 'alpha');
    const call = track(router.invoke('alpha', 'GET', '/ping'));

    session.handle({ type: 'unregisterClient', clientId: 'alpha' });
    await flush();

    expect(router.getClient('alpha')).toBeUndefined();
    expect(session.clientId).toBeUndefined();
    expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(router.pendingCount).toBe(0);
    expect(session.closed).toBe(false);
    expect(transport.closes).toEqual([]);
    expect(events.at(-1)).toEqual({ type: 'unregistered', clientId: 'alpha' });

    // The session may register again.
    session.handle({ type: 'registerClient', client: client('alpha') });
    expect(router.getClient('alpha')?.sessionId).toBe(session.id);
  });
});

describe('sessions', () => {
  it('end() removes the client and is idempotent', () => {
    const events = recordEvents();
    const { session } = connectClient(router, 'alpha');
    session.end();
    session.end();
    expect(session.closed).toBe(true);
    expect(router.sessionCount).toBe(0);
    expect(router.clientCount).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['registered', 'unregistered']);
  });

  it('refuses messages after the session ended', () => {
    const { session } = connect(router);
    session.end();
    expect(() => session.handle({ type: 'ping', timestamp: 1 })).toThrow(expect.objectContaining({ code: 'transport_error' }));
  });

  it('gives every session a distinct UUID', () => {
    const a = connect(router).session;
    const b = connect(router).session;
    expect(a.id).not.toBe(b.id);
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('authSource', () => {
  const token = { scheme: 'Bearer', token: 't' };

  it.each([
    ['none', undefined, undefined],
    ['message', undefined, token],
    ['transport', token, undefined],
    ['transport+message', token, { token: 'other' }],
  ] as const)('reports %s', (expected, transportAuth, messageAuth) => {
    connectClient(router, 'alpha', undefined, { auth: transportAuth, messageAuth });
    expect(router.listClients()[0]?.authSource).toBe(expected);
  });

  it('follows transport auth refreshes and re-registration', () => {
    const { session } = connectClient(router, 'alpha', undefined, { auth: token, messageAuth: token });
    expect(router.getClient('alpha')?.authSource).toBe('transport+message');
    session.touch(null);
    expect(session.transportAuth).toBeUndefined();
    expect(router.getClient('alpha')?.authSource).toBe('message');
    session.touch(); // activity only: the auth stays as it is
    expect(router.getClient('alpha')?.authSource).toBe('message');
    session.touch(token);
    session.handle({ type: 'registerClient', client: client('alpha') });
    expect(router.getClient('alpha')?.authSource).toBe('transport');
    expect(session.messageAuth).toBeUndefined();
  });
});
