/** The messages held back from a peer that reads slower than it is sent to (a fake socket, no I/O). */
import { describe, expect, it } from 'vitest';
import { HOLD_FROM } from '../src/index.js';
import { HeldMessages, overCap, type OutboundSocket } from '../src/outbound.js';

/** A socket whose buffered byte count the test sets, recording what is sent. */
class FakeSocket implements OutboundSocket {
  bufferedAmount = HOLD_FROM;
  readonly sent: string[] = [];
  send(text: string): void {
    this.sent.push(text);
    this.bufferedAmount += text.length;
  }
}

function held(gone: Set<string> = new Set()) {
  const socket = new FakeSocket();
  return { socket, queue: new HeldMessages(socket, (id) => !gone.has(id)), gone };
}

describe('HeldMessages', () => {
  it('sends held messages in order once the socket drains, until it backs up again', () => {
    const { socket, queue } = held();
    queue.hold('a'.repeat(10), 'r1');
    queue.hold('b'.repeat(10), undefined);
    queue.hold('c'.repeat(HOLD_FROM), 'r3');
    queue.hold('d', 'r4');
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
    const { socket, queue, gone } = held();
    queue.hold('call 1', 'r1');
    queue.hold('ping', undefined);
    queue.hold('call 2', 'r2');
    gone.add('r1');
    socket.bufferedAmount = 0;
    expect(queue.drain()).toBe(true);
    expect(socket.sent).toEqual(['ping', 'call 2']);
  });

  it('owes what waits in the socket and what was held since it last caught up, calls whose callers left included', () => {
    const { socket, queue, gone } = held();
    expect(queue.owedWith(40)).toBe(HOLD_FROM + 40);
    queue.hold('x'.repeat(60), 'r1');
    gone.add('r1');
    // r1 is no longer wanted, but the peer did not take it either: it still counts.
    expect(queue.owedWith(60)).toBe(HOLD_FROM + 120);
    expect(socket.sent).toEqual([]);
  });

  it('keeps counting while the peer has not caught up, and forgives it once nothing is held', () => {
    const { socket, queue } = held();
    queue.hold('a'.repeat(HOLD_FROM), 'r1');
    queue.hold('b'.repeat(HOLD_FROM / 2), 'r2');
    socket.bufferedAmount = 0;
    // 'a' goes out and fills the socket again; 'b' stays held: the peer reads, but slower than it is sent to.
    expect(queue.drain()).toBe(false);
    expect(socket.sent.map((t) => t[0])).toEqual(['a']);
    // The socket has 'a'; 'a' and 'b' were held since the peer last caught up.
    expect(queue.owedWith(1)).toBe(HOLD_FROM + HOLD_FROM + HOLD_FROM / 2 + 1);

    socket.bufferedAmount = 0;
    expect(queue.drain()).toBe(true);
    socket.bufferedAmount = 0;
    expect(queue.owedWith(1)).toBe(1);
  });
});

describe('overCap', () => {
  const MAX = 1000;
  it('refuses a call to a peer that read within the stall time, and holds its other messages', () => {
    expect(overCap(true, MAX + 1, MAX, 4_999, 5_000)).toBe('refuse');
    expect(overCap(false, MAX + 1, MAX, 4_999, 5_000)).toBe('hold');
    expect(overCap(false, 2 * MAX, MAX, 0, 5_000)).toBe('hold');
  });

  it('closes a peer that has not read for the stall time', () => {
    expect(overCap(true, MAX + 1, MAX, 5_000, 5_000)).toBe('close');
    expect(overCap(false, MAX + 1, MAX, 5_000, 5_000)).toBe('close');
  });

  it('closes a peer owing more than twice the cap, however recently it read', () => {
    expect(overCap(false, 2 * MAX + 1, MAX, 0, 5_000)).toBe('close');
    expect(overCap(true, 2 * MAX + 1, MAX, 0, 5_000)).toBe('close');
  });
});
