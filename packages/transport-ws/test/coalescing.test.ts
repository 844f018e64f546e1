/**
 * Calls to a client that already has calls in flight are batched: those made in one turn of the
 * event loop leave in one socket write, in order. A lone call is written at once.
 */
import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InvokeOutcome } from '@mdp/core';
import { descriptor, stopAll, type TestClient } from '@mdp/test-kit';
import { openClient, startHarness, type Harness } from './helpers.js';

let harness: Harness | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await stopAll();
  await harness?.stop();
  harness = undefined;
});

async function registered(h: Harness, id: string): Promise<TestClient> {
  const socket = await openClient(h.url);
  await socket.register(descriptor(id));
  return socket;
}

/** Counts the writes node makes on the server's end of `client`'s connection. */
function countServerWrites(client: TestClient): () => number {
  const clientPort = client.tcp.localPort;
  let writes = 0;
  const isServerEnd = (socket: Socket): boolean => socket.remotePort === clientPort && socket.localPort !== clientPort;
  for (const method of ['_write', '_writev'] as const) {
    const original = Socket.prototype[method] as (...args: unknown[]) => void;
    vi.spyOn(Socket.prototype, method).mockImplementation(function (this: Socket, ...args: unknown[]) {
      if (isServerEnd(this)) writes++;
      return original.apply(this, args);
    });
  }
  return () => writes;
}

describe('write coalescing', () => {
  it('batches the calls of one turn to a busy client into one write, in the order they were made', async () => {
    harness = await startHarness();
    const client = await registered(harness, 'c1');
    const other = await registered(harness, 'c2');
    const writes = countServerWrites(client);

    const outcomes: Array<Promise<InvokeOutcome>> = [];
    for (let i = 0; i < 5; i++) outcomes.push(harness.router.invoke('c1', 'GET', '/docs/skill.md', { query: { n: String(i) } }));
    outcomes.push(harness.router.invoke('c2', 'GET', '/docs/skill.md'));
    const calls = await client.inbox.count(5, (m) => m.type === 'callClient');
    await other.inbox.count(1, (m) => m.type === 'callClient');

    // The first call went out alone (nothing was in flight); the four after it in one write.
    expect(writes()).toBe(2);
    expect(calls.map((call) => (call.query as Record<string, string>).n)).toEqual(['0', '1', '2', '3', '4']);
    for (const call of calls) client.send({ type: 'callClientResult', requestId: call.requestId, ok: true, data: 'x' });
    const settled = await Promise.all(outcomes.slice(0, 5));
    expect(settled.every((outcome) => outcome.ok)).toBe(true);
  });

  it('writes a lone call at once, and stops batching once the client has answered', async () => {
    harness = await startHarness();
    const client = await registered(harness, 'c1');
    const writes = countServerWrites(client);
    for (let round = 1; round <= 3; round++) {
      const arrived = client.next((m) => m.type === 'callClient');
      const outcome = harness.router.invoke('c1', 'GET', '/docs/skill.md');
      // Written before invoke returned control: no deferred flush for a client with nothing in flight.
      expect(writes()).toBe(round);
      client.send({ type: 'callClientResult', requestId: (await arrived).requestId, ok: true, data: 'x' });
      expect(await outcome).toEqual({ ok: true, data: 'x' });
    }
    // A call the client never answers stops counting once it times out.
    const unanswered = harness.router.invoke('c1', 'GET', '/docs/skill.md', { timeoutMs: 20 });
    expect(writes()).toBe(4);
    expect(await unanswered).toMatchObject({ ok: false, error: { code: 'timeout' } });
    void harness.router.invoke('c1', 'GET', '/docs/skill.md');
    expect(writes()).toBe(5);
  });

  it('a call made in the same turn as a server-side close still arrives before the close frame', async () => {
    harness = await startHarness();
    const client = await registered(harness, 'c1');
    const outcome = harness.router.invoke('c1', 'GET', '/docs/skill.md');
    const closing = harness.transport.close();
    const call = await client.next((m) => m.type === 'callClient');
    expect(call).toMatchObject({ type: 'callClient', path: '/docs/skill.md' });
    expect(await client.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
    await closing;
    expect(await outcome).toMatchObject({ ok: false, source: 'server', error: { code: 'transport_error' } });
  });
});
