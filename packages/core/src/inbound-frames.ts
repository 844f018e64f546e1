/**
 * A websocket connection's unfinished message, counted against the node's in-flight budget
 * (inflight.ts) from the bytes its socket delivers (frame-progress.ts), until the socket closes.
 * The websocket transport and the cluster's control links use it on the sockets they accept.
 *
 *   socket 'data' ─▶ frames.feed(chunk) ─▶ budget.hold(connection, unfinished bytes + chunk costs)
 *   socket 'close' ─▶ budget.release(connection)
 *   evicted ─▶ evict(target, reason): close the websocket (1013) and destroy its socket
 *
 * Listeners are one function for every socket (the socket is `this`), so an idle connection
 * carries no closure of its own for them.
 */
import type { Duplex } from 'node:stream';
import { FrameProgress } from './frame-progress.js';
import { inflightCharge, type InflightBudget, type InflightHolder } from './inflight.js';

export class InboundFrames<T> extends FrameProgress implements InflightHolder {
  inflightCharge = 0;
  inflightPrev: InflightHolder | undefined = undefined;
  inflightNext: InflightHolder | undefined = undefined;
  inflightListed = false;
  /** Evicted, errored or closed: nothing more is counted. */
  private stopped = false;

  constructor(
    private readonly budget: InflightBudget,
    /** What `evict` closes. */
    readonly target: T,
    /** Close `target` now (one function for every connection); must not throw. */
    private readonly evict: (target: T, reason: string) => void,
  ) {
    super();
  }

  /** The socket delivered `chunk`. */
  received(chunk: Uint8Array): void {
    if (this.stopped) return;
    const held = this.feed(chunk);
    // Between messages (most chunks hold whole ones): nothing to count, nothing to tell the budget.
    if (held === 0) {
      if (this.inflightListed) this.budget.release(this);
      return;
    }
    this.budget.hold(this, inflightCharge(held, this.chunks));
  }

  /**
   * Count nothing more: the socket closed, or the websocket library stopped reading it (an error it
   * closed the connection for: what still arrives is discarded, not held).
   */
  stop(): void {
    this.stopped = true;
    this.budget.release(this);
  }

  evictInflight(reason: string): void {
    this.stopped = true;
    this.evict(this.target, reason);
  }
}

const counters = new WeakMap<Duplex, InboundFrames<unknown>>();

function onData(this: Duplex, chunk: Buffer): void {
  counters.get(this)?.received(chunk);
}

function onClose(this: Duplex): void {
  counters.get(this)?.stop();
  counters.delete(this);
}

/**
 * Count the frames arriving on `socket` (a websocket's, its handshake done) against `budget`, until
 * it closes. Returns the counter (`stop()` it when the library stops reading the socket).
 */
export function countInboundFrames<T>(socket: Duplex, budget: InflightBudget, target: T, evict: (target: T, reason: string) => void): InboundFrames<T> {
  const counter = new InboundFrames(budget, target, evict);
  counters.set(socket, counter as InboundFrames<unknown>);
  socket.on('data', onData);
  // 'close' comes once: `on` spares the wrapper `once` would add.
  socket.on('close', onClose);
  return counter;
}

/** The counter of `socket`, if it has one. */
export function inboundFramesOf(socket: Duplex): InboundFrames<unknown> | undefined {
  return counters.get(socket);
}
