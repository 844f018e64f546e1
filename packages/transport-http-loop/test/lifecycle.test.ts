/** Session lifecycle: expiry by core's liveness rule, replacement, router shutdown, transport close. */
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import { LOOP_CLIENT as CLIENT, loopClient, recordingLogger, type LoopClient, type RecordingLogger } from '@mdp/test-kit';
import { createHttpLoopRoutes } from '../src/hono.js';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';

let router: Router;
let transport: HttpLoopTransport;
let app: Hono;
let client: LoopClient;
let logs: RecordingLogger;

beforeEach(() => {
  vi.useFakeTimers();
  // Core sweeps every 20 ms and closes a session silent for 50 ms.
  router = new Router({ heartbeatIntervalMs: 20, heartbeatTimeoutMs: 50 });
  logs = recordingLogger();
  transport = createHttpLoopTransport(router, { logger: logs.logger });
  app = createHttpLoopRoutes(transport);
  client = loopClient((path, init) => app.request(path, init));
});

afterEach(async () => {
  await transport.close();
  await router.close();
  expect(vi.getTimerCount()).toBe(0);
  vi.useRealTimers();
});

describe('expiry', () => {
  it('forgets a silent session', async () => {
    const sessionId = await client.register();
    await vi.advanceTimersByTimeAsync(80);
    expect(transport.sessionCount).toBe(0);
    expect(router.sessionCount).toBe(0);
    expect(router.getClient('c1')).toBeUndefined();
    expect((await client.poll(sessionId, 0)).status).toBe(404);
    expect(logs.records.some((record) => record.event === 'session.closed' && record.reason === 'Heartbeat timeout')).toBe(true);
  });

  it('delivers heartbeat pings to a waiting poll; a client that never answers still expires', async () => {
    const sessionId = await client.register();
    const poll = client.poll(sessionId, 60_000);
    await vi.advanceTimersByTimeAsync(25);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { message: { type: string } }).message.type).toBe('ping');
    // No pong, no further poll: silent from here on.
    await vi.advanceTimersByTimeAsync(80);
    expect(transport.sessionCount).toBe(0);
    expect((await client.poll(sessionId, 0)).status).toBe(404);
  });

  it('keeps a polling session alive; its polls receive the pings', async () => {
    const sessionId = await client.register();
    const types: string[] = [];
    for (let elapsed = 0; elapsed < 300; elapsed += 30) {
      await vi.advanceTimersByTimeAsync(30);
      const response = await client.poll(sessionId, 0);
      expect([200, 204]).toContain(response.status);
      if (response.status === 200) types.push(((await response.json()) as { message: { type: string } }).message.type);
    }
    expect(transport.sessionCount).toBe(1);
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(['ping']));
  });

  it('counts sends as activity too', async () => {
    const sessionId = await client.register();
    for (let elapsed = 0; elapsed < 300; elapsed += 30) {
      await vi.advanceTimersByTimeAsync(30);
      expect((await client.send(sessionId, { type: 'pong' })).status).toBe(202);
    }
    expect(transport.sessionCount).toBe(1);
  });
});

describe('closed by core', () => {
  it('forgets a session replaced by a newer registration and answers its poll', async () => {
    const older = await client.register();
    const poll = client.poll(older, 60_000);
    const newer = await client.register(CLIENT);
    expect((await poll).status).toBe(204);
    expect((await client.poll(older, 0)).status).toBe(404);
    expect((await client.poll(newer, 0)).status).toBe(204);
    expect(transport.sessionCount).toBe(1);
    expect(router.getClient('c1')?.sessionId).toBe(newer);
  });

  it('forgets every session when the router shuts down', async () => {
    const sessionId = await client.register();
    const poll = client.poll(sessionId, 60_000);
    await router.close();
    expect((await poll).status).toBe(204);
    expect(transport.sessionCount).toBe(0);
    expect((await client.poll(sessionId, 0)).status).toBe(404);
  });
});

describe('calls that end while queued', () => {
  it('are not delivered to a later poll: a call that timed out is gone from the queue', async () => {
    const sessionId = await client.register();
    const outcomes = Array.from({ length: 3 }, () => router.invoke('c1', 'GET', '/hello', { timeoutMs: 10 }));
    await vi.advanceTimersByTimeAsync(15);
    for (const outcome of outcomes) expect(await outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
    const live = router.invoke('c1', 'GET', '/hello', { timeoutMs: 1_000 });
    const poll = await client.poll(sessionId, 0);
    expect(poll.status).toBe(200);
    const { message } = (await poll.json()) as { message: { type: string; requestId: string } };
    expect(message.type).toBe('callClient');
    expect(router.isPending(message.requestId)).toBe(true);
    await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'hi' });
    expect(await live).toEqual({ ok: true, data: 'hi' });
    expect((await client.poll(sessionId, 0)).status).toBe(204);
  });
});

describe('close()', () => {
  it('ends every session, fails pending calls, answers waiting polls and refuses new connects', async () => {
    const sessionId = await client.register();
    const idle = await client.connect();
    const outcome = router.invoke('c1', 'GET', '/hello');
    const poll = client.poll(idle, 60_000);
    await transport.close();
    await transport.close();
    expect((await poll).status).toBe(204);
    expect(await outcome).toMatchObject({ ok: false, error: { code: 'transport_error' } });
    expect(transport.sessionCount).toBe(0);
    expect(router.sessionCount).toBe(0);
    expect((await client.poll(sessionId, 0)).status).toBe(404);
    const refused = await app.request('/connect', { method: 'POST' });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ error: 'Server is shutting down' });
    // No timer is left: no long poll, no liveness sweep, no invocation time-out.
    expect(vi.getTimerCount()).toBe(0);
  });
});
