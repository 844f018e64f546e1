/**
 * Vanished clients: a session with no poll waiting and none started for the idle time-out ends.
 * The tracker is tested with the time passed in, the watch with a fake clock, the transport with
 * vitest's fake timers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EXPIRE_BATCH, Router } from '@mdp/core';
import { LOOP_CLIENT as CLIENT, loopClient, manualClock, polledMessage, recordingLogger, type LoopClient, type RecordingLogger } from '@mdp/test-kit';
import { IdleTracker, IdleWatch } from '../src/idle.js';
import { createHttpLoopRoutes } from '../src/hono.js';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';

describe('IdleTracker', () => {
  it('a session opened and never polled expires after the time-out, not before', () => {
    const tracker = new IdleTracker(100);
    tracker.open('a', 0);
    expect(tracker.nextDeadline()).toBe(100);
    expect(tracker.expire(99)).toEqual([]);
    expect(tracker.expire(100).map((e) => e.id)).toEqual(['a']);
    expect(tracker.size).toBe(0);
    expect(tracker.nextDeadline()).toBeUndefined();
  });

  it('a waiting poll keeps a session from expiring however long it waits; idle again from when it ends', () => {
    const tracker = new IdleTracker(100);
    const a = tracker.open('a', 0);
    tracker.pollStarted(a);
    expect(tracker.nextDeadline()).toBeUndefined();
    expect(tracker.expire(10_000)).toEqual([]);
    tracker.pollEnded(a, 10_000);
    expect(tracker.nextDeadline()).toBe(10_100);
    expect(tracker.expire(10_099)).toEqual([]);
    expect(tracker.expire(10_100).map((e) => e.id)).toEqual(['a']);
  });

  it('counts overlapping polls: idle only once the last one ends', () => {
    const tracker = new IdleTracker(100);
    const a = tracker.open('a', 0);
    tracker.pollStarted(a);
    tracker.pollStarted(a);
    tracker.pollEnded(a, 50);
    expect(tracker.expire(1000)).toEqual([]);
    tracker.pollEnded(a, 60);
    expect(tracker.nextDeadline()).toBe(160);
  });

  it('expires oldest first, and a session that polled in between leaves the line', () => {
    const tracker = new IdleTracker(100);
    const a = tracker.open('a', 0);
    tracker.open('b', 10);
    tracker.open('c', 20);
    tracker.pollStarted(a);
    tracker.pollEnded(a, 30);
    expect(tracker.nextDeadline()).toBe(110);
    expect(tracker.expire(125).map((e) => e.id)).toEqual(['b', 'c']);
    expect(tracker.expire(130).map((e) => e.id)).toEqual(['a']);
  });

  it('removed sessions never expire and ignore late poll events; remove is idempotent', () => {
    const tracker = new IdleTracker(100);
    const a = tracker.open('a', 0);
    const b = tracker.open('b', 0);
    tracker.pollStarted(b);
    tracker.remove(a);
    tracker.remove(a);
    tracker.remove(b);
    tracker.pollEnded(b, 5);
    tracker.pollStarted(a);
    expect(tracker.size).toBe(0);
    expect(tracker.expire(1000)).toEqual([]);
  });

  it('a touch makes an idle session idle from then; a polling one is left as it is', () => {
    const tracker = new IdleTracker(100);
    const a = tracker.open('a', 0);
    tracker.touch(a, 80);
    expect(tracker.expire(100).map((e) => e.id)).toEqual([]);
    expect(tracker.expire(180).map((e) => e.id)).toEqual(['a']);
    const b = tracker.open('b', 200);
    tracker.pollStarted(b);
    tracker.touch(b, 250);
    expect(tracker.nextDeadline()).toBeUndefined();
  });

  it('a due session that keep holds on to is idle again from now; the others expire', () => {
    const tracker = new IdleTracker(100);
    tracker.open('busy', 0);
    tracker.open('gone', 10);
    expect(tracker.expire(150, Number.POSITIVE_INFINITY, (e) => e.id === 'busy').map((e) => e.id)).toEqual(['gone']);
    expect(tracker.nextDeadline()).toBe(250);
    expect(tracker.expire(250).map((e) => e.id)).toEqual(['busy']);
  });

  it('counts the due sessions it keeps against the limit too', () => {
    const tracker = new IdleTracker(100);
    for (let i = 0; i < 5; i++) tracker.open(`s${i}`, i);
    const asked: string[] = [];
    const keepEven = (e: { id: string }): boolean => {
      asked.push(e.id);
      return Number(e.id.slice(1)) % 2 === 0;
    };
    expect(tracker.expire(200, 3, keepEven).map((e) => e.id)).toEqual(['s1']);
    expect(asked).toEqual(['s0', 's1', 's2']);
    expect(tracker.expire(200, 3, keepEven).map((e) => e.id)).toEqual(['s3']);
    expect(asked).toEqual(['s0', 's1', 's2', 's3', 's4']);
    // The kept ones are idle again from 200: nothing more is due at 200.
    expect(tracker.expire(200, 3, keepEven)).toEqual([]);
    expect(tracker.nextDeadline()).toBe(300);
  });

  it('refuses a time-out that is not a positive number', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => new IdleTracker(bad)).toThrow(RangeError);
  });
});

describe('IdleWatch', () => {
  it('holds one timer, fires for each quiet session at its deadline, and none after close', () => {
    const clock = manualClock();
    const expired: string[] = [];
    const watch = new IdleWatch(100, (id) => expired.push(id), clock);
    watch.open('a');
    clock.advance(40);
    const b = watch.open('b');
    expect(clock.pending()).toBe(1);
    clock.advance(60);
    expect(expired).toEqual(['a']);
    watch.pollStarted(b);
    clock.advance(500);
    expect(expired).toEqual(['a']);
    watch.pollEnded(b);
    clock.advance(99);
    expect(expired).toEqual(['a']);
    clock.advance(1);
    expect(expired).toEqual(['a', 'b']);
    expect(clock.pending()).toBe(0);

    watch.open('c');
    expect(watch.timerArmed).toBe(true);
    watch.close();
    watch.close();
    expect(clock.pending()).toBe(0);
    expect(watch.timerArmed).toBe(false);
    watch.open('d');
    clock.advance(1000);
    expect(expired).toEqual(['a', 'b']);
    expect(clock.pending()).toBe(0);
  });

  it('ends sessions that went quiet together in batches, each batch a timer callback of its own', () => {
    const clock = manualClock();
    const expired: string[] = [];
    const batches: number[] = [];
    const watch = new IdleWatch(100, (id) => expired.push(id), clock);
    const set = clock.setTimeout.bind(clock);
    // Each re-arm after the first records how many had expired by then.
    clock.setTimeout = (callback, ms) => {
      batches.push(expired.length);
      return set(callback, ms);
    };
    const count = EXPIRE_BATCH * 2 + 10;
    for (let i = 0; i < count; i++) watch.open(`s${i}`);
    clock.advance(100);
    expect(expired).toHaveLength(count);
    expect(batches).toEqual([0, EXPIRE_BATCH, EXPIRE_BATCH * 2]);
    watch.close();
  });

  it('does not touch its timer per poll: a session that keeps polling costs no timer work', () => {
    const clock = manualClock();
    const set = vi.spyOn(clock, 'setTimeout');
    const watch = new IdleWatch(100, () => undefined, clock);
    const a = watch.open('a');
    for (let i = 0; i < 50; i++) {
      watch.pollStarted(a);
      clock.advance(30);
      watch.pollEnded(a);
    }
    // One timer per time-out period at most, not one per poll.
    expect(set.mock.calls.length).toBeLessThanOrEqual(1 + Math.ceil((50 * 30) / 100));
    watch.close();
  });

  it('keeps watching when an expiry callback throws', () => {
    const clock = manualClock();
    const expired: string[] = [];
    const watch = new IdleWatch(
      100,
      (id) => {
        expired.push(id);
        if (id === 'a') throw new Error('boom');
      },
      clock,
    );
    watch.open('a');
    clock.advance(50);
    watch.open('b');
    expect(() => clock.advance(50)).toThrow('boom');
    clock.advance(50);
    expect(expired).toEqual(['a', 'b']);
    watch.close();
  });
});

describe('the transport ends vanished sessions', () => {
  let router: Router;
  let transport: HttpLoopTransport;
  let client: LoopClient;
  let logs: RecordingLogger;

  beforeEach(() => {
    vi.useFakeTimers();
    router = new Router({ invocationTimeoutMs: 60_000 });
    logs = recordingLogger();
    transport = createHttpLoopTransport(router, { logger: logs.logger, idleTimeoutMs: 1000 });
    const app = createHttpLoopRoutes(transport);
    client = loopClient((path, init) => app.request(path, init));
  });

  /** The client c1 stays for the whole idle time-out (1000 ms) from now, and not a millisecond more. */
  async function leavesAfterTheIdleTimeOut(): Promise<void> {
    await vi.advanceTimersByTimeAsync(999);
    expect(router.getClient('c1')).toBeDefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(router.getClient('c1')).toBeUndefined();
  }

  afterEach(async () => {
    await transport.close();
    await router.close();
    expect(transport.idleTimerArmed).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });

  it('a client that registered and never polls leaves after the idle time-out; its pending call fails at once with transport_error', async () => {
    const sessionId = await client.register();
    const call = router.invoke('c1', 'GET', '/hello');
    await vi.advanceTimersByTimeAsync(999);
    expect(router.getClient('c1')).toBeDefined();
    const vanished = logs.next('session.vanished');
    await vi.advanceTimersByTimeAsync(1);
    expect(await vanished).toMatchObject({ level: 'info', sessionId, clientId: 'c1', reason: 'no poll for 1000 ms' });
    expect(router.getClient('c1')).toBeUndefined();
    expect(transport.sessionCount).toBe(0);
    expect(await call).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect((await client.poll(sessionId, 0)).status).toBe(404);
  });

  it('a poll waiting longer than the idle time-out keeps its session', async () => {
    const sessionId = await client.register();
    const poll = client.poll(sessionId, 5000);
    await vi.advanceTimersByTimeAsync(4999);
    expect(router.getClient('c1')).toBeDefined();
    await vi.advanceTimersByTimeAsync(1);
    expect((await poll).status).toBe(204);
    // Idle from the poll's answer on.
    await leavesAfterTheIdleTimeOut();
  });

  it('a client whose handler takes longer than the time-out stays: it keeps polling while the handler runs', async () => {
    const sessionId = await client.register();
    let running = true;
    const handled: Promise<void>[] = [];
    // Like the SDKs: the poll loop hands each call to its handler and polls again at once.
    const loop = (async () => {
      while (running) {
        const response = await client.poll(sessionId, 300);
        if (response.status !== 200) continue;
        const message = await polledMessage(response);
        if (message.type !== 'callClient') continue;
        handled.push(
          (async () => {
            await new Promise((resolve) => setTimeout(resolve, 3000)); // three idle time-outs
            await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'slow answer' });
          })(),
        );
      }
    })();
    const call = router.invoke('c1', 'GET', '/hello');
    await vi.advanceTimersByTimeAsync(3500);
    expect(await call).toEqual({ ok: true, data: 'slow answer' });
    expect(router.getClient('c1')).toBeDefined();
    expect(logs.records.some((r) => r.event === 'session.vanished')).toBe(false);
    running = false;
    await vi.advanceTimersByTimeAsync(300);
    await loop;
    await Promise.all(handled);
  });

  it('a client that stops polling while it handles a call stays until it answers; then its answer and polls count', async () => {
    const sessionId = await client.register();
    const call = router.invoke('c1', 'GET', '/hello');
    // Polls one message, then works on it without polling (not what the SDKs do, but allowed).
    const polled = await polledMessage(await client.poll(sessionId, 0));
    expect(polled.type).toBe('callClient');
    await vi.advanceTimersByTimeAsync(5000);
    expect(router.getClient('c1')).toBeDefined();
    expect(logs.records.some((r) => r.event === 'session.vanished')).toBe(false);
    await client.send(sessionId, { type: 'callClientResult', requestId: polled.requestId, ok: true, data: 'slow answer' });
    expect(await call).toEqual({ ok: true, data: 'slow answer' });
    // The answer counted: idle from then, for the whole time-out.
    await leavesAfterTheIdleTimeOut();
  });

  it('a call still queued is not one in hand: once the client answers what it holds, the queued one keeps nothing', async () => {
    const sessionId = await client.register();
    const held = router.invoke('c1', 'GET', '/hello');
    const polled = await polledMessage(await client.poll(sessionId, 0));
    expect(polled.type).toBe('callClient');
    // A second call waits in the queue; the client does not poll it.
    const queued = router.invoke('c1', 'GET', '/hello');
    await vi.advanceTimersByTimeAsync(5000);
    expect(router.getClient('c1')).toBeDefined();
    await client.send(sessionId, { type: 'callClientResult', requestId: polled.requestId, ok: true, data: 'held' });
    expect(await held).toEqual({ ok: true, data: 'held' });
    await leavesAfterTheIdleTimeOut();
    expect(await queued).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
  });

  it('a client that never polls does not keep its session by sending pings, pongs or made-up answers', async () => {
    const sessionId = await client.register();
    for (let at = 0; at < 1000; at += 250) {
      await client.send(sessionId, { type: 'ping', timestamp: at });
      await client.send(sessionId, { type: 'callClientResult', requestId: `made-up-${at}`, ok: true });
      await vi.advanceTimersByTimeAsync(250);
    }
    expect(router.getClient('c1')).toBeUndefined();
    expect(logs.records.find((r) => r.event === 'session.vanished')).toMatchObject({ sessionId, reason: 'no poll for 1000 ms' });
  });

  it('a client that vanished with a call in hand still leaves once that call ends (its time-out)', async () => {
    const {
      router: shortRouter,
      transport: shortTransport,
      client: shortClient,
    } = (() => {
      const r = new Router({ invocationTimeoutMs: 3000 });
      const t = createHttpLoopTransport(r, { logger: logs.logger, idleTimeoutMs: 1000 });
      const app = createHttpLoopRoutes(t);
      return { router: r, transport: t, client: loopClient((path, init) => app.request(path, init)) };
    })();
    try {
      const sessionId = await shortClient.register();
      const call = shortRouter.invoke('c1', 'GET', '/hello');
      expect((await polledMessage(await shortClient.poll(sessionId, 0))).type).toBe('callClient');
      await vi.advanceTimersByTimeAsync(3000);
      expect(await call).toMatchObject({ ok: false, error: { code: 'timeout' } });
      // The call ended: the next check no longer keeps the session.
      await vi.advanceTimersByTimeAsync(1000);
      expect(shortRouter.getClient('c1')).toBeUndefined();
    } finally {
      await shortTransport.close();
      await shortRouter.close();
    }
  });

  it('disconnect and shutdown forget the session: nothing expires later', async () => {
    const first = await client.register();
    await client.disconnect(first);
    await client.register({ ...CLIENT, id: 'c2' });
    await transport.close();
    await vi.advanceTimersByTimeAsync(5000);
    expect(logs.records.some((r) => r.event === 'session.vanished')).toBe(false);
  });

  it('refuses an idle time-out that is not a positive number of milliseconds', () => {
    for (const idleTimeoutMs of [0, -5, Number.NaN, 2 ** 31]) {
      expect(() => createHttpLoopTransport(router, { idleTimeoutMs })).toThrow(RangeError);
    }
  });
});
