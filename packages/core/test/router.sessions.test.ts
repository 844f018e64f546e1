/** Session events: `onSessionEvent` reports every session that opens and every one that ends. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Router, SESSION_CLOSE, createLogger, type SessionEvent } from '../src/index.js';
import { connect, connectClient, track, manualClock, type ManualClock } from './helpers.js';

let router: Router;
let clock: ManualClock;
let events: SessionEvent[];

beforeEach(() => {
  clock = manualClock();
  router = new Router({ clock, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 3000 });
  events = [];
  router.onSessionEvent((event) => events.push(event));
});

afterEach(async () => {
  await router.close();
});

const summary = (): string[] => events.map((e) => (e.type === 'open' ? `open ${e.session.id}` : `end ${e.session.id}: ${e.reason}`));

describe('onSessionEvent', () => {
  it('reports a session as it opens, with the session the transport got', () => {
    const { session } = connect(router, { kind: 'ws' });
    expect(events).toEqual([{ type: 'open', session }]);
    expect(session.transportKind).toBe('ws');
  });

  it('reports the end once, with its reason, after the client is gone and its calls failed', async () => {
    const { session } = connectClient(router, 'alpha');
    const seen: { listed: boolean; pending: number }[] = [];
    const call = track(router.invoke('alpha', 'GET', '/ping'));
    router.onSessionEvent((event) => {
      if (event.type === 'end') seen.push({ listed: router.hasClient('alpha'), pending: router.pendingCount });
    });
    session.end('socket closed');
    session.end('again');
    await clock.advanceSettled(0);
    expect(summary()).toEqual([`open ${session.id}`, `end ${session.id}: socket closed`]);
    expect(seen).toEqual([{ listed: false, pending: 0 }]);
    expect(call.outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
  });

  it('reports the ends core decides: replaced, expired, shutdown', async () => {
    const older = connectClient(router, 'alpha');
    const newer = connectClient(router, 'alpha');
    expect(events.at(-1)).toEqual({ type: 'end', session: older.session, reason: SESSION_CLOSE.replaced.reason });

    const silent = connect(router);
    clock.advance(3000 + 1000);
    expect(events).toContainEqual({ type: 'end', session: silent.session, reason: SESSION_CLOSE.expired.reason });
    expect(events).toContainEqual({ type: 'end', session: newer.session, reason: SESSION_CLOSE.expired.reason });

    const last = connect(router);
    await router.close();
    expect(events.at(-1)).toEqual({ type: 'end', session: last.session, reason: SESSION_CLOSE.shutdown.reason });
    expect(events.filter((e) => e.type === 'open')).toHaveLength(4);
    expect(events.filter((e) => e.type === 'end')).toHaveLength(4);
  });

  it('stops reporting after unsubscribe', () => {
    const mine: SessionEvent[] = [];
    const off = router.onSessionEvent((event) => mine.push(event));
    connect(router);
    off();
    connect(router);
    expect(mine).toHaveLength(1);
    expect(events).toHaveLength(2);
  });

  it('logs a listener that throws; the session and the other listeners go on', () => {
    const lines: string[] = [];
    const logged = new Router({ clock, logger: createLogger({ level: 'error', write: (line) => lines.push(line) }) });
    const heard: string[] = [];
    logged.onSessionEvent(() => {
      throw new Error('listener bug');
    });
    logged.onSessionEvent((event) => heard.push(event.type));
    const { session } = connect(logged);
    session.end();
    expect(heard).toEqual(['open', 'end']);
    expect(session.closed).toBe(true);
    expect(lines.map((line) => JSON.parse(line) as { event: string }).map((r) => r.event)).toEqual([
      'session_event.listener_failed',
      'session_event.listener_failed',
    ]);
    void logged.close();
  });
});
