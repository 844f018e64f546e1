/** What a cluster websocket does with a peer that reads slower than it is sent to (backlog.ts), on a manual clock. */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { silentLogger } from '@mdp/core';
import type { ClusterMessage } from '@mdp/protocol';
import { manualClock } from '@mdp/test-kit';
import { Backlog, unsentBytes } from '../src/backlog.js';
import { ControlLink } from '../src/control-link.js';

const LIMITS = { maxBufferedBytes: 1000, stallTimeoutMs: 5000 };

function make() {
  const clock = manualClock();
  return { clock, backlog: new Backlog(LIMITS, () => clock.now()) };
}

describe('Backlog', () => {
  it('sends whatever keeps the peer within the cap', () => {
    const { backlog } = make();
    expect(backlog.verdict(0, 1000, true)).toBe('send');
    expect(backlog.verdict(900, 100, false)).toBe('send');
  });

  it('refuses an answer past the cap while the peer still reads, and sends other messages up to twice the cap', () => {
    const { clock, backlog } = make();
    expect(backlog.verdict(0, 500, true)).toBe('send');
    clock.advance(4999);
    expect(backlog.verdict(900, 200, true)).toBe('refuse');
    expect(backlog.verdict(900, 200, false)).toBe('send');
    expect(backlog.verdict(1900, 101, false)).toBe('drop');
  });

  it('drops a peer over the cap that has read nothing for its stall time', () => {
    const { clock, backlog } = make();
    expect(backlog.verdict(0, 800, false)).toBe('send');
    expect(backlog.verdict(800, 800, false)).toBe('send');
    clock.advance(5000);
    // Nothing left the socket since the last send: no progress.
    expect(backlog.verdict(1600, 10, true)).toBe('drop');
  });

  it('counts bytes leaving the socket as reading: a slow reader is refused, not dropped', () => {
    const { clock, backlog } = make();
    backlog.verdict(0, 1500, false);
    for (let i = 0; i < 10; i++) {
      clock.advance(4000);
      // A little was read since the last look each time.
      expect(backlog.verdict(1400 - i, 200, true)).toBe('refuse');
    }
  });

  it('the periodic look drops a stalled peer that is sent nothing more, and spares one that owes no more than the cap', () => {
    const { clock, backlog } = make();
    backlog.verdict(0, 1500, false);
    clock.advance(4999);
    expect(backlog.stalled(1500)).toBe(false);
    clock.advance(1);
    expect(backlog.stalled(1500)).toBe(true);

    const idle = make();
    idle.backlog.verdict(0, 900, false);
    idle.clock.advance(60_000);
    expect(idle.backlog.stalled(900)).toBe(false);
  });

  it('a peer refused an answer is behind: reading nothing for its stall time drops it, even under the cap', () => {
    const { clock, backlog } = make();
    backlog.verdict(0, 900, false);
    expect(backlog.verdict(900, 200, true)).toBe('refuse');
    clock.advance(5000);
    // Only the refusal was added since: nothing left the socket.
    expect(backlog.stalled(950)).toBe(true);

    const reading = make();
    reading.backlog.verdict(0, 900, false);
    expect(reading.backlog.verdict(900, 200, true)).toBe('refuse');
    reading.clock.advance(5000);
    expect(reading.backlog.stalled(500)).toBe(false);
    reading.clock.advance(5000);
    expect(reading.backlog.stalled(500)).toBe(true);
    // Caught up: no longer behind.
    expect(reading.backlog.stalled(0)).toBe(false);
    reading.clock.advance(60_000);
    expect(reading.backlog.stalled(0)).toBe(false);
  });

  it('counts the kernel taking part of the write in progress as reading, though node still counts it all as waiting', () => {
    const { clock, backlog } = make();
    // One write of 1,500 bytes in progress: bufferedAmount stays 1,500 until the kernel takes the last byte.
    backlog.verdict(0, 1500, false, 0);
    expect(backlog.verdict(1500, 200, true, 1500)).toBe('refuse');
    for (const unsent of [1200, 900, 600]) {
      clock.advance(4000);
      expect(backlog.stalled(1500, unsent)).toBe(false);
    }
    // Then nothing more is taken.
    clock.advance(5000);
    expect(backlog.stalled(1500, 600)).toBe(true);

    // Without the transport's figure, the same peer looks stalled after its stall time.
    const blind = make();
    blind.backlog.verdict(0, 1500, false);
    expect(blind.backlog.verdict(1500, 200, true)).toBe('refuse');
    blind.clock.advance(5000);
    expect(blind.backlog.stalled(1500)).toBe(true);
  });

  it('reads the unsent bytes of a real socket from libuv, and falls back to nothing without one', async () => {
    const { createServer, connect } = await import('node:net');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<import('node:net').Socket>((resolve) => server.once('connection', resolve));
    const client = connect((server.address() as { port: number }).port, '127.0.0.1');
    client.pause();
    const socket = await accepted;
    // Far more than the kernel's buffers take: the rest waits in libuv's queue.
    socket.write(Buffer.alloc(32 * 1024 * 1024));
    const before = unsentBytes({ _socket: socket });
    expect(before).toBeGreaterThan(0);
    // The peer reads some: libuv's count falls while node's own count of the write does not.
    const waiting = socket.writableLength;
    await new Promise<void>((resolve) => {
      let read = 0;
      client.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read < 4 * 1024 * 1024) return;
        client.pause();
        resolve();
      });
      client.resume();
    });
    // libuv writes more once the kernel has room, on a later turn of the event loop.
    for (let turn = 0; turn < 1000 && unsentBytes({ _socket: socket })! >= before!; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(unsentBytes({ _socket: socket })).toBeLessThan(before!);
    expect(socket.writableLength).toBe(waiting);
    client.destroy();
    socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    expect(unsentBytes({})).toBeUndefined();
    expect(unsentBytes({ _socket: { _handle: null } })).toBeUndefined();
  });

  it('says why, and what the refused asker gets', () => {
    const { backlog } = make();
    expect(backlog.reason(2048)).toBe('Peer is not reading: 2048 bytes unread, limit 1000');
    expect(backlog.behindError(1500)).toEqual({
      code: 'not_ready',
      message: 'The link is behind: 1500 bytes wait for the peer, limit 1000; try again later',
      details: { retryAfterMs: 1000 },
    });
  });
});

/** Just enough of a `ws` WebSocket for a ControlLink: what it was sent, and a settable backlog. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: Array<Record<string, unknown>> = [];
  terminated = false;
  send(text: string): void {
    this.sent.push(JSON.parse(text) as Record<string, unknown>);
  }
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }
  close(): void {
    this.readyState = 2;
  }
  ping(): void {}
}

const HEADER = { clusterId: 'c', serverId: 'peer', term: 1, timestamp: 0 };

function openLink(maxFrameBytes?: number) {
  const clock = manualClock();
  const ws = new FakeSocket();
  const closes: Array<[number, string]> = [];
  const link = new ControlLink(
    ws as unknown as WebSocket,
    'in',
    undefined,
    undefined,
    {
      hello: () => ({
        type: 'clusterHello',
        ...HEADER,
        serverId: 'me',
        membershipMode: 'dynamic',
        membershipFingerprint: 'dynamic',
        role: 'leader',
        wsUrl: 'ws://me',
        clusterUrl: 'ws://me/mdp/cluster',
      }),
      check: () => undefined,
      onOpen: () => {},
      onMessage: () => {},
      onAlive: () => {},
      onClose: (_link, code, reason) => closes.push([code, reason]),
    },
    () => clock.now(),
    silentLogger,
    LIMITS,
    maxFrameBytes,
  );
  const hello = {
    type: 'clusterHello',
    ...HEADER,
    membershipMode: 'dynamic',
    membershipFingerprint: 'dynamic',
    role: 'follower',
    wsUrl: 'ws://peer',
    clusterUrl: 'ws://peer/mdp/cluster',
  };
  ws.emit('message', Buffer.from(JSON.stringify(hello)), false);
  expect(link.state).toBe('open');
  ws.sent.length = 0;
  return { clock, ws, link, closes };
}

const answer = (requestId: string, size: number): ClusterMessage => ({
  type: 'clusterRpcResponse',
  ...HEADER,
  serverId: 'me',
  requestId,
  ok: true,
  result: 'x'.repeat(size),
});

describe('ControlLink and frames larger than the peer takes', () => {
  it('answers with an error saying so instead of a frame that would close the link, and sends nothing else that large', () => {
    const { ws, link, closes } = openLink(2000);
    expect(link.send(answer('big', 5000))).toBe(true);
    expect(ws.sent[0]).toEqual({
      ...HEADER,
      serverId: 'me',
      type: 'clusterRpcResponse',
      requestId: 'big',
      ok: false,
      error: {
        code: 'transport_error',
        message: expect.stringMatching(/^The answer \(\d+ bytes\) is larger than a cluster link carries \(2000 bytes\); ask for less/),
      },
    });
    // Multi-byte text counts in bytes: 700 characters of three bytes each are over 2,000.
    expect(link.send(answer('wide', 0))).toBe(true);
    expect(link.send({ ...answer('euro', 0), result: '€'.repeat(700) } as ClusterMessage)).toBe(true);
    expect(ws.sent[2]).toMatchObject({ requestId: 'euro', ok: false, error: { code: 'transport_error' } });
    const request = {
      type: 'clusterRpcRequest',
      ...HEADER,
      serverId: 'me',
      requestId: 'r',
      method: 'callPath',
      params: { body: 'x'.repeat(5000) },
    } as ClusterMessage;
    expect(link.send(request)).toBe(false);
    expect(ws.sent).toHaveLength(3);
    expect(closes).toEqual([]);
  });
});

describe('ControlLink with a peer that reads slowly', () => {
  it('sends answers within the cap as they are, and refuses one past it with not_ready and a retry hint', () => {
    const { ws, link, closes } = openLink();
    expect(link.send(answer('a', 500))).toBe(true);
    expect(ws.sent[0]).toMatchObject({ requestId: 'a', ok: true });
    ws.bufferedAmount = 900;
    expect(link.send(answer('b', 500))).toBe(true);
    // The same frame, header and all (the peer checks it), with a refusal for its result.
    expect(ws.sent[1]).toEqual({
      ...HEADER,
      serverId: 'me',
      type: 'clusterRpcResponse',
      requestId: 'b',
      ok: false,
      error: new Backlog(LIMITS, () => 0).behindError(900),
    });
    // Other messages still go (up to twice the cap), and the link stays open.
    expect(
      link.send({ type: 'clusterHeartbeat', ...HEADER, serverId: 'me', leaderId: 'me', leaderUrl: 'ws://me', leaseDurationMs: 4000 } as ClusterMessage),
    ).toBe(true);
    expect(closes).toEqual([]);
  });

  it('drops the peer once it has read nothing for its stall time, at the next send or the next ping', () => {
    const sending = openLink();
    sending.ws.bufferedAmount = 1500;
    sending.link.ping();
    sending.clock.advance(5000);
    expect(sending.link.send(answer('late', 10))).toBe(false);
    expect(sending.ws.terminated).toBe(true);
    expect(sending.closes).toEqual([[1013, expect.stringMatching(/^Peer is not reading: 1[56]\d\d bytes unread, limit 1000$/)]]);
    expect(sending.link.state).toBe('closed');

    const idle = openLink();
    idle.ws.bufferedAmount = 1500;
    idle.link.ping();
    idle.clock.advance(4999);
    idle.link.ping();
    expect(idle.ws.terminated).toBe(false);
    idle.clock.advance(1);
    idle.link.ping();
    expect(idle.ws.terminated).toBe(true);
    expect(idle.closes).toEqual([[1013, 'Peer is not reading: 1500 bytes unread, limit 1000']]);
  });
});
