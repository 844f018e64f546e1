/** close(): idempotent, 1001 for open sockets, a bounded wait for closing handshakes, no leftovers. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TestClient, descriptor } from '@mdp/test-kit';
import { harnessPerTest, rawUpgrade } from './helpers.js';

const { start, client } = harnessPerTest();
// Registered after the harness's: runs before it (hooks unwind), so the harness stops on real timers.
afterEach(() => vi.useRealTimers());

/** Only the timer functions: sockets, nextTick and setImmediate stay real. */
const FAKE_TIMERS: Parameters<typeof vi.useFakeTimers>[0] = { toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] };

/** Let every pending nextTick and I/O callback run (not a sleep: no time has to pass). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('close()', () => {
  it('closes every open socket with 1001, ends its session and fails its pending calls', async () => {
    const h = await start();
    const a = await client(h);
    const b = await client(h);
    a.send({ type: 'registerClient', client: descriptor('c1') });
    const call = a.next((m) => m.type === 'callClient');
    a.send({ type: 'ping' });
    await a.next((m) => m.type === 'pong');
    const outcome = h.router.invoke('c1', 'GET', '/docs/skill.md');
    await call;

    await h.transport.close();
    expect(await a.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    expect(await b.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    expect(await outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
    expect(h.router.sessionCount).toBe(0);
    expect(h.transport.connectionCount).toBe(0);
  });

  it('is idempotent', async () => {
    const h = await start();
    const socket = await client(h);
    const first = h.transport.close();
    const second = h.transport.close();
    expect(second).toBe(first);
    await first;
    expect(await socket.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    await expect(h.transport.close()).resolves.toBeUndefined();
  });

  it('resolves at once with no open sockets', async () => {
    const h = await start();
    await expect(h.transport.close()).resolves.toBeUndefined();
  });

  it('refuses upgrades once closing', async () => {
    const h = await start();
    await h.transport.close();
    const late = TestClient.start(h.url);
    expect((await late.closed).code).toBe(1006);
    expect(late.wasOpened).toBe(false);
    expect(h.sessions.opened).toHaveLength(0);
    expect(h.transport.connectionCount).toBe(0);
  });

  it('closes with 1001 when the router no longer opens sessions', async () => {
    const h = await start();
    await h.router.close();
    const late = TestClient.start(h.url);
    expect(await late.closed).toEqual({ code: 1001, reason: 'Server is shutting down' });
    expect(h.router.sessionCount).toBe(0);
  });
});

describe('close() timers', () => {
  it('leaves no timer behind', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    // A long grace period: if close() kept its grace timer, it would still be pending below.
    const h = await start({ transport: { closeGraceMs: 60_000 } });
    const a = await client(h);
    const b = await client(h);
    a.send({ type: 'registerClient', client: descriptor('c1') });
    a.send({ type: 'ping' });
    await a.next((m) => m.type === 'pong');
    expect(vi.getTimerCount()).toBeGreaterThan(0); // the router's liveness sweep while sessions exist

    await h.transport.close();
    expect((await a.closed).code).toBe(1001);
    expect((await b.closed).code).toBe(1001);
    expect(h.router.sessionCount).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('terminates a socket that never answers the close frame once closeGraceMs has passed', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    const h = await start({ transport: { closeGraceMs: 10_000 } });
    const raw = await rawUpgrade(h.port);
    expect(h.router.sessionCount).toBe(1);

    let closed = false;
    const closing = h.transport.close().then(() => (closed = true));
    expect(await raw.closeFrame).toEqual({ code: 1001, reason: 'Server shutting down' });

    await vi.advanceTimersByTimeAsync(9_999);
    await turn();
    expect(h.router.sessionCount).toBe(1); // still waiting for the handshake
    expect(closed).toBe(false);

    await vi.advanceTimersByTimeAsync(1);
    await closing;
    await raw.ended;
    expect(h.router.sessionCount).toBe(0);
    expect(h.transport.connectionCount).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses upgrades while it waits for closing handshakes', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    const h = await start({ transport: { closeGraceMs: 10_000 } });
    const raw = await rawUpgrade(h.port); // holds close() in its grace period
    const closing = h.transport.close();
    await raw.closeFrame;

    const late = TestClient.start(h.url);
    expect((await late.closed).code).toBe(1006);
    expect(late.wasOpened).toBe(false);
    expect(h.sessions.opened).toHaveLength(1);

    await vi.advanceTimersByTimeAsync(10_000);
    await closing;
    expect(h.router.sessionCount).toBe(0);
  });
});
