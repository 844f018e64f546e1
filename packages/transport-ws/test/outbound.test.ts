/** The messages held back from a peer that reads slower than it is sent to (a fake socket, no I/O). */
import { describe, expect, it } from 'vitest';
import { HOLD_FROM } from '../src/index.js';
import { HeldMessages, type OutboundSocket } from '../src/outbound.js';

/** A socket whose buffered byte count the test sets, recording what is sent. */
class FakeSocket implements OutboundSocket {
  bufferedAmount = HOLD_FROM;
  readonly sent: string[] = [];
  send(text: string): void {
    this.sent.push(text);
    this.bufferedAmount += text.length;
  }
}

function held(maxBytes: number, gone: Set<string> = new Set()) {
  const socket = new FakeSocket();
  return { socket, queue: new HeldMessages(socket, maxBytes, (id) => !gone.has(id)), gone };
}

describe('HeldMessages', () => {
  it('sends held messages in order once the socket drains, until it backs up again', () => {
    const { socket, queue } = held(1_000_000);
    expect(queue.hold('a'.repeat(10), 'r1')).toBe(0);
    expect(queue.hold('b'.repeat(10), undefined)).toBe(0);
    expect(queue.hold('c'.repeat(HOLD_FROM), 'r3')).toBe(0);
    expect(queue.hold('d', 'r4')).toBe(0);
    socket.bufferedAmount = 0;
    // 'c' fills the socket past HOLD_FROM again: 'd' waits for the next drain.
    expect(queue.drain()).toBe(false);
    expect(socket.sent.map((t) => t[0])).toEqual(['a', 'b', 'c']);
    socket.bufferedAmount = 0;
    expect(queue.drain()).toBe(true);
    expect(socket.sent.map((t) => t[0])).toEqual(['a', 'b', 'c', 'd']);
    expect(queue.size).toBe(0);
  });

  it('never sends a held call whose caller went away', () => {
    const { socket, queue, gone } = held(1_000_000);
    queue.hold('call 1', 'r1');
    queue.hold('ping', undefined);
    queue.hold('call 2', 'r2');
    gone.add('r1');
    socket.bufferedAmount = 0;
    expect(queue.drain()).toBe(true);
    expect(socket.sent).toEqual(['ping', 'call 2']);
  });

  it('reports overflow once the socket and the held messages pass the cap, and holds nothing more', () => {
    const { queue } = held(HOLD_FROM + 100);
    expect(queue.hold('x'.repeat(60), 'r1')).toBe(0);
    expect(queue.hold('y'.repeat(60), 'r2')).toBe(HOLD_FROM + 120);
    expect(queue.size).toBe(0);
  });

  it('counts what was held since the last drain against the cap, calls whose callers left included', () => {
    const { socket, queue, gone } = held(HOLD_FROM + 100);
    expect(queue.hold('x'.repeat(60), 'r1')).toBe(0);
    gone.add('r1');
    // r1 is no longer wanted, but the peer did not take it either: it still counts.
    expect(queue.hold('y'.repeat(60), 'r2')).toBe(HOLD_FROM + 120);
    expect(socket.sent).toEqual([]);
  });

  it('keeps counting while the peer has not caught up, and forgives it once nothing is held', () => {
    const { socket, queue } = held(3 * HOLD_FROM);
    expect(queue.hold('a'.repeat(HOLD_FROM), 'r1')).toBe(0);
    expect(queue.hold('b'.repeat(HOLD_FROM / 2), 'r2')).toBe(0);
    socket.bufferedAmount = 0;
    // 'a' goes out and fills the socket again; 'b' stays held: the peer reads, but slower than it is sent to.
    expect(queue.drain()).toBe(false);
    expect(socket.sent.map((t) => t[0])).toEqual(['a']);
    expect(queue.hold('c'.repeat(HOLD_FROM / 2 + 1), 'r3')).toBe(3 * HOLD_FROM + 1);
    expect(queue.size).toBe(0);

    // A peer that caught up owes nothing.
    const fresh = held(3 * HOLD_FROM);
    fresh.queue.hold('a'.repeat(HOLD_FROM), 'r1');
    fresh.socket.bufferedAmount = 0;
    expect(fresh.queue.drain()).toBe(true);
    expect(fresh.queue.hold('b'.repeat(HOLD_FROM), 'r2')).toBe(0);
  });
});
