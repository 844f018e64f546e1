/** Liveness sweep and lifecycle: pings, expiry, timers, close() (SPEC §4 liveness, STYLE §5). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MdpError, ROUTER_DEFAULTS, Router, type Session } from '../src/index.js';
import { FakeTransport, connect, connectClient, flush, track, manualClock, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock();
  router = new Router({ clock });
});

afterEach(async () => {
  await router.close();
});

/** A client that answers every ping at once, as the SDKs do. */
function answerPings(session: Session, transport: FakeTransport): void {
  const send = transport.send.bind(transport);
  transport.send = (message) => {
    send(message);
    if (message.type === 'ping') queueMicrotask(() => session.handle({ type: 'pong', timestamp: message.timestamp }));
  };
}

describe('defaults', () => {
  it('ping every 30 s and expire after 90 s of silence', () => {
    expect(ROUTER_DEFAULTS).toEqual({
      invocationTimeoutMs: 15_000,
      heartbeatIntervalMs: 30_000,
      heartbeatTimeoutMs: 90_000,
      maxPendingCalls: 1000,
      maxPathLength: 1024,
      maxPathSegments: 32,
      maxCatalogPaths: 10_000,
      maxTotalPaths: 250_000,
      maxDescriptionLength: 16_384,
      maxSchemaLength: 65_536,
      maxCatalogBytes: 1_048_576,
      maxTotalCatalogBytes: 33_554_432,
      maxClientsPerAddress: 1000,
      maxCatalogUpdatesPerMinute: 120,
    });
    expect(router.options).toEqual(ROUTER_DEFAULTS);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuse %s as a duration', (value) => {
    expect(() => new Router({ clock, invocationTimeoutMs: value })).toThrow(RangeError);
    expect(() => new Router({ clock, heartbeatIntervalMs: value })).toThrow(RangeError);
    expect(() => new Router({ clock, heartbeatTimeoutMs: value })).toThrow(RangeError);
  });
});

describe('liveness sweep', () => {
  it('pings every session every heartbeat interval', async () => {
    const a = connect(router);
    const b = connect(router);

    await clock.advanceSettled(29_999);
    expect(a.transport.sent).toEqual([]);
    await clock.advanceSettled(1);
    // Stamped with the wall clock, which the client compares with its own.
    expect(a.transport.sent).toEqual([{ type: 'ping', timestamp: 1_700_000_030_000 }]);
    expect(b.transport.sent).toEqual([{ type: 'ping', timestamp: 1_700_000_030_000 }]);
    await clock.advanceSettled(30_000);
    expect(a.transport.ofType('ping')).toHaveLength(2);
  });

  it('closes a silent session (4001) after the heartbeat timeout while an active one stays', async () => {
    const active = connectClient(router, 'active');
    answerPings(active.session, active.transport);
    const silent = connectClient(router, 'silent');
    const pending = track(router.invoke('silent', 'GET', '/ping', { timeoutMs: 1_000_000 }));

    await clock.advanceSettled(60_000);
    expect(silent.session.closed).toBe(false);
    expect(silent.transport.ofType('ping')).toHaveLength(2);

    await clock.advanceSettled(30_000); // 90 s without a word from `silent`
    expect(silent.transport.closes).toEqual([{ code: 4001, reason: 'Heartbeat timeout' }]);
    expect(silent.session.closed).toBe(true);
    expect(router.getClient('silent')).toBeUndefined();
    expect(pending.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });

    expect(active.session.closed).toBe(false);
    expect(active.transport.closes).toEqual([]);
    expect(router.getClient('active')).toBeDefined();
    await clock.advanceSettled(300_000);
    expect(active.session.closed).toBe(false);
  });

  it('counts any message as activity', async () => {
    const { session, transport } = connectClient(router, 'alpha');
    for (let t = 0; t < 10; t++) {
      await clock.advanceSettled(60_000);
      session.handle({ type: 'unregisterClient', clientId: 'someone-else' });
    }
    expect(transport.closes).toEqual([]);
  });

  it('counts touch() as activity and skips pings when the transport does not want them', async () => {
    // An HTTP loop session: no pings, kept alive by polls and sends.
    const polling = connect(router, { kind: 'http-loop', wantsPing: false });
    const idle = connect(router, { kind: 'http-loop', wantsPing: false });
    for (let t = 0; t < 4; t++) {
      await clock.advanceSettled(30_000);
      polling.session.touch();
    }
    expect(polling.transport.sent).toEqual([]);
    expect(polling.session.closed).toBe(false);
    expect(idle.transport.sent).toEqual([]);
    expect(idle.transport.closes).toEqual([{ code: 4001, reason: 'Heartbeat timeout' }]);
  });

  it('uses the configured interval and timeout', async () => {
    await router.close();
    router = new Router({ clock, heartbeatIntervalMs: 1_000, heartbeatTimeoutMs: 2_500 });
    const { transport } = connect(router);
    await clock.advanceSettled(2_000);
    expect(transport.ofType('ping')).toHaveLength(2);
    expect(transport.closes).toEqual([]);
    await clock.advanceSettled(1_000);
    expect(transport.closes).toEqual([{ code: 4001, reason: 'Heartbeat timeout' }]);
  });

  it('measures silence on the monotonic clock: a jump of the wall clock expires nobody and spares nobody', async () => {
    await router.close();
    // The wall clock of the machine is stepped (NTP, a suspended VM) while time itself goes on.
    let jump = 0;
    const stepped = { ...clock, wallNow: () => clock.wallNow() + jump };
    router = new Router({ clock: stepped, heartbeatIntervalMs: 1_000, heartbeatTimeoutMs: 2_500 });
    const { session, transport } = connect(router);
    answerPings(session, transport);
    const silent = connect(router);
    await clock.advanceSettled(1_000);
    jump = 3_600_000;
    await clock.advanceSettled(1_000);
    expect(transport.closes).toEqual([]);
    // Back by two hours: the silent one still goes when its 2.5 s are up.
    jump = -7_200_000;
    await clock.advanceSettled(1_000);
    expect(silent.transport.closes).toEqual([{ code: 4001, reason: 'Heartbeat timeout' }]);
    expect(transport.closes).toEqual([]);
    // What is reported is still the time of day.
    expect(session.lastSeen).toBe(clock.wallNow() + jump);
  });

  it('holds a timer only while there are sessions', () => {
    expect(clock.pending()).toBe(0);
    const a = connect(router);
    const b = connect(router);
    expect(clock.pending()).toBe(1);
    a.session.end();
    expect(clock.pending()).toBe(1);
    b.session.end();
    expect(clock.pending()).toBe(0);
    connect(router);
    expect(clock.pending()).toBe(1);
  });

  it('stops its timer once the sweep expired the last session', async () => {
    connect(router);
    await clock.advanceSettled(90_000);
    expect(router.sessionCount).toBe(0);
    expect(clock.pending()).toBe(0);
  });
});

describe('close()', () => {
  it('ends every pending call, closes every session (1001) and leaves no timer', async () => {
    const a = connectClient(router, 'alpha');
    const b = connectClient(router, 'beta');
    const idle = connect(router);
    const calls = [
      track(router.invoke('alpha', 'GET', '/ping')),
      track(router.invoke('alpha', 'GET', '/ping', { timeoutMs: 60_000 })),
      track(router.invoke('beta', 'GET', '/ping')),
    ];
    // The liveness sweep, plus one time-out timer per time-out value in use (15 s and 60 s).
    expect(clock.pending()).toBe(3);

    await router.close();
    await flush();

    expect(clock.pending()).toBe(0);
    for (const call of calls) {
      expect(call.outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    }
    for (const { transport } of [a, b, idle]) {
      expect(transport.closes).toEqual([{ code: 1001, reason: 'Server shutting down' }]);
    }
    expect(router.pendingCount).toBe(0);
    expect(router.sessionCount).toBe(0);
    expect(router.clientCount).toBe(0);
  });

  it('is idempotent and refuses new sessions afterwards', async () => {
    const { transport } = connect(router);
    await router.close();
    await router.close();
    expect(transport.closes).toHaveLength(1);
    expect(() => router.openSession(new FakeTransport())).toThrow(MdpError);
    expect(() => router.openSession(new FakeTransport())).toThrow(expect.objectContaining({ code: 'not_ready' }));
    expect(clock.pending()).toBe(0);
  });

  it('survives a transport whose close() throws', async () => {
    const { transport, session } = connectClient(router, 'alpha');
    transport.close = () => {
      throw new Error('socket already gone');
    };
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    await router.close();
    await flush();
    expect(session.closed).toBe(true);
    expect(call.outcome).toMatchObject({ error: { code: 'transport_error' } });
    expect(clock.pending()).toBe(0);
  });
});
