/** Long-poll behaviour in-process (the Hono routes' `app.request`): queue order, waiting, replacement, abandoned polls, lost responses. */
import { EventEmitter } from 'node:events';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router } from '@mdp/core';
import { loopClient, polledMessage, recordingLogger, type LoopClient, type RecordingLogger } from '@mdp/test-kit';
import { createHttpLoopRoutes } from '../src/hono.js';
import { createHttpLoopTransport, type HttpLoopTransport } from '../src/index.js';

let router: Router;
let transport: HttpLoopTransport;
let app: Hono;
let client: LoopClient;
let logs: RecordingLogger;

function setUp(options: { longPollTimeoutMs?: number } = {}, routerOptions: ConstructorParameters<typeof Router>[0] = {}): void {
  router = new Router(routerOptions);
  logs = recordingLogger();
  transport = createHttpLoopTransport(router, { ...options, logger: logs.logger });
  app = createHttpLoopRoutes(transport);
  client = loopClient((path, init) => app.request(path, init));
}

afterEach(async () => {
  await transport.close();
  await router.close();
  vi.useRealTimers();
});

/** A stand-in for the node ServerResponse @hono/node-server passes as `env.outgoing`. */
class FakeOutgoing extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  writableFinished = false;
  socket: { destroyed: boolean; writable: boolean; errored?: Error | null } = { destroyed: false, writable: true, errored: null };
}

describe('poll', () => {
  beforeEach(() => setUp());

  it('delivers queued messages in order, each once', async () => {
    const sessionId = await client.register();
    const outcomes = [1, 2, 3].map((i) => router.invoke('c1', 'GET', '/hello', { query: { i: String(i) } }));
    const polled = [];
    for (let i = 0; i < 3; i++) polled.push(await polledMessage(await client.poll(sessionId, 0)));
    expect(polled.map((message) => (message.query as { i: string }).i)).toEqual(['1', '2', '3']);
    expect((await client.poll(sessionId, 0)).status).toBe(204);
    for (const message of polled) {
      await client.send(sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: message.query });
    }
    expect(await Promise.all(outcomes)).toEqual([1, 2, 3].map((i) => ({ ok: true, data: { i: String(i) } })));
  });

  it('answers a waiting poll when a callClient arrives, in both forms of the message', async () => {
    const sessionId = await client.register();
    const started = logs.next('poll.start');
    const poll = client.poll(sessionId, 60_000);
    await started;
    const outcome = router.invoke('c1', 'GET', '/hello', { query: { q: '1' } });
    const response = await poll;
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['message']);
    expect(body.message).toMatchObject({
      type: 'callClient',
      clientId: 'c1',
      method: 'GET',
      path: '/hello',
      query: { q: '1' },
      kind: 'tool',
      name: '/hello',
      args: { query: { q: '1' } },
    });
    const { requestId } = body.message as { requestId: string };
    await client.send(sessionId, { type: 'callClientResult', requestId, ok: true, data: 'hi' });
    expect(await outcome).toEqual({ ok: true, data: 'hi' });
  });

  it('queues a pong for a client ping', async () => {
    const sessionId = await client.connect();
    expect((await client.send(sessionId, { type: 'ping', timestamp: 42 })).status).toBe(202);
    expect(await polledMessage(await client.poll(sessionId, 0))).toEqual({ type: 'pong', timestamp: 42 });
  });

  it('takes nothing for a poll whose client aborted it', async () => {
    const sessionId = await client.register();
    const controller = new AbortController();
    const started = logs.next('poll.start');
    const abandoned = client.poll(sessionId, 60_000, { signal: controller.signal });
    await started;
    const gone = logs.next('poll.abandoned');
    controller.abort();
    await gone;
    expect((await abandoned).status).toBe(204);
    const outcome = router.invoke('c1', 'GET', '/hello');
    expect((await polledMessage(await client.poll(sessionId, 0))).type).toBe('callClient');
    await router.close();
    await outcome;
  });

  it('keeps the message when the connection is found gone at hand-over', async () => {
    const sessionId = await client.register();
    const outgoing = new FakeOutgoing();
    const started = logs.next('poll.start');
    const poll = app.request(`/poll?waitMs=60000&sessionId=${sessionId}`, {}, { outgoing });
    await started;
    outgoing.socket.writable = false; // the peer hung up; node has not closed the response yet
    const outcome = router.invoke('c1', 'GET', '/hello');
    expect((await poll).status).toBe(204);
    expect((await polledMessage(await client.poll(sessionId, 0))).type).toBe('callClient');
    await router.close();
    await outcome;
  });

  it('puts a message back at the head when its response closes before it finished', async () => {
    const sessionId = await client.register();
    const outcomes = [1, 2].map((i) => router.invoke('c1', 'GET', '/hello', { query: { i: String(i) } }));
    const outgoing = new FakeOutgoing();
    const lost = await app.request(`/poll?waitMs=0&sessionId=${sessionId}`, {}, { outgoing });
    expect(((await polledMessage(lost)).query as { i: string }).i).toBe('1');
    const requeued = logs.next('poll.requeued');
    outgoing.destroyed = true;
    outgoing.emit('close');
    await requeued;
    const again = await polledMessage(await client.poll(sessionId, 0));
    const next = await polledMessage(await client.poll(sessionId, 0));
    expect([again.query, next.query]).toEqual([{ i: '1' }, { i: '2' }]);
    await router.close();
    await Promise.all(outcomes);
  });

  it('puts a message back when node reports the response finished on a socket that failed', async () => {
    const sessionId = await client.register();
    const outcome = router.invoke('c1', 'GET', '/hello');
    const outgoing = new FakeOutgoing();
    expect((await app.request(`/poll?waitMs=0&sessionId=${sessionId}`, {}, { outgoing })).status).toBe(200);
    // Node 20 on a reset connection: the pending write fails, 'finish' is emitted all the same.
    const requeued = logs.next('poll.requeued');
    outgoing.socket.destroyed = true;
    outgoing.socket.errored = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    outgoing.writableEnded = true;
    outgoing.writableFinished = true;
    outgoing.emit('finish');
    await requeued;
    expect((await polledMessage(await client.poll(sessionId, 0))).type).toBe('callClient');
    await router.close();
    await outcome;
  });

  it('does not put back a message whose response finished', async () => {
    const sessionId = await client.register();
    const outcome = router.invoke('c1', 'GET', '/hello');
    const outgoing = new FakeOutgoing();
    expect((await app.request(`/poll?waitMs=0&sessionId=${sessionId}`, {}, { outgoing })).status).toBe(200);
    outgoing.writableEnded = true;
    outgoing.writableFinished = true;
    outgoing.emit('finish');
    outgoing.emit('close');
    expect((await client.poll(sessionId, 0)).status).toBe(204);
    await router.close();
    await outcome;
  });
});

describe('poll time-out', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    // Heartbeat pings also reach a waiting poll; keep them out of these minute-long waits.
    setUp({ longPollTimeoutMs: 5000 }, { heartbeatIntervalMs: 120_000, heartbeatTimeoutMs: 300_000 });
  });

  async function settlesAt(waitMs: string | undefined, expectedMs: number): Promise<void> {
    const sessionId = await client.connect();
    const query = waitMs === undefined ? '' : `&waitMs=${waitMs}`;
    let settled = false;
    const poll = Promise.resolve(app.request(`/poll?sessionId=${sessionId}${query}`)).then((response) => {
      settled = true;
      return response;
    });
    await vi.advanceTimersByTimeAsync(expectedMs - 1);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    expect((await poll).status).toBe(204);
  }

  it('waits waitMs', () => settlesAt('250', 250));
  it('falls back to the configured long-poll time-out', () => settlesAt(undefined, 5000));
  it('falls back for a non-numeric or negative waitMs', async () => {
    await settlesAt('later', 5000);
    await settlesAt('-5', 5000);
  });
  it('clamps waitMs to 60000', () => settlesAt('3600000', 60_000));
});
