/**
 * What a cluster websocket (a control link, or a mirror's socket to its hub) has sent its peer that
 * the peer has not read, and what becomes of a message that would take it past the cap. The rule is
 * the websocket transport's (`overCap` of `@mdp/core`):
 *
 *   send ─▶ waiting + message ≤ cap? ─ yes ─▶ sent
 *                   │ no
 *                   ▼
 *        the peer read within stallMs, and owes less than 2 × cap? ─ no ─▶ the socket is dropped
 *                   │ yes                                                (its calls fail at once)
 *                   ▼
 *        an answer to the peer's call? ─ yes ─▶ a short `not_ready` error goes instead (retry in 1 s)
 *                   │ no
 *                   ▼
 *                 sent (hellos, heartbeats, votes, catalogs: one per event)
 *
 * "Read" means that fewer bytes wait in node for the socket than at the last look (none at all
 * included), or that the kernel took some of the write in progress ({@link unsentBytes}: node hands
 * every frame queued behind a write to the kernel as one write, and counts all of it as waiting
 * until the kernel has taken its last byte; a peer reading a few megabytes of answers slowly would
 * otherwise look as if it read nothing until the whole batch was gone). A peer that is behind (an
 * answer to it was refused, or it owes more than the cap) and has read nothing for its stall time
 * is dropped, at the next send or at the next look of a periodic check: what it can make this
 * process hold is bounded by twice the cap, and a peer that keeps asking while it reads nothing
 * loses its socket rather than being refused for ever. A peer that reads, however slowly, keeps it;
 * what it asks for faster than it reads is refused until it catches up.
 */
import { overCap } from '@mdp/core';

export interface BacklogLimits {
  /** Most bytes a peer may leave unread, bytes. */
  readonly maxBufferedBytes: number;
  /** How long a peer over the cap may go without reading before its socket is dropped, ms. */
  readonly stallTimeoutMs: number;
}

/** Defaults of the limits: those of the websocket transport. */
export const BACKLOG_DEFAULTS: BacklogLimits = Object.freeze({ maxBufferedBytes: 8 * 1024 * 1024, stallTimeoutMs: 5000 });

export type BacklogVerdict = 'send' | 'refuse' | 'drop';

/**
 * What `ws` has yet to hand to the kernel as libuv counts it (its TCP handle's `writeQueueSize`,
 * which falls as the kernel takes part of a write), or undefined where the socket has no such
 * handle. `ws` and node keep these as internals; without them a look sees `bufferedAmount` alone.
 */
export function unsentBytes(ws: object): number | undefined {
  const size = (ws as { _socket?: { _handle?: { writeQueueSize?: unknown } | null } })._socket?._handle?.writeQueueSize;
  return typeof size === 'number' ? size : undefined;
}

export class Backlog {
  /** Bytes waiting at the last look, or after the last send (what the next look compares with). */
  private lastWaiting = 0;
  /** The transport's unsent bytes at the last look, when it tells them. */
  private lastUnsent: number | undefined = undefined;
  private progressAt: number;
  /** An answer to the peer was refused, and the socket has not drained since. */
  private behind = false;

  constructor(
    private readonly limits: BacklogLimits,
    private readonly now: () => number,
  ) {
    this.progressAt = now();
  }

  /**
   * What to do with a message of `bytes` while `waiting` bytes wait for the socket (`bufferedAmount`).
   * `refusable`: the message answers a call of the peer's, and may be replaced by a refusal.
   * `unsent`: what the transport has yet to hand the kernel ({@link unsentBytes}), when known.
   */
  verdict(waiting: number, bytes: number, refusable: boolean, unsent?: number): BacklogVerdict {
    this.look(waiting, unsent);
    const owed = waiting + bytes;
    const { maxBufferedBytes, stallTimeoutMs } = this.limits;
    const action = owed <= maxBufferedBytes ? 'send' : overCap(refusable, owed, maxBufferedBytes, this.now() - this.progressAt, stallTimeoutMs);
    if (action === 'close') return 'drop';
    if (action === 'refuse') {
      this.behind = true;
      return 'refuse';
    }
    this.lastWaiting = owed;
    return 'send';
  }

  /**
   * Whether an answer to the peer would be refused now, so that it need not be made at all: the peer
   * is behind (refused an answer, and the socket has not drained since) or owes more than the cap.
   */
  refusing(waiting: number, unsent?: number): boolean {
    this.look(waiting, unsent);
    return this.behind || waiting > this.limits.maxBufferedBytes;
  }

  /** A periodic look: true when the peer is behind (refused, or over the cap) and has read nothing for its stall time. */
  stalled(waiting: number, unsent?: number): boolean {
    this.look(waiting, unsent);
    return (this.behind || waiting > this.limits.maxBufferedBytes) && this.now() - this.progressAt >= this.limits.stallTimeoutMs;
  }

  /** Note what the peer read since the last look; a socket with nothing waiting has caught up. */
  private look(waiting: number, unsent: number | undefined): void {
    const taken = unsent !== undefined && this.lastUnsent !== undefined && unsent < this.lastUnsent;
    if (waiting === 0 || waiting < this.lastWaiting || taken) this.progressAt = this.now();
    if (waiting === 0) this.behind = false;
    this.lastWaiting = waiting;
    this.lastUnsent = unsent;
  }

  /** Why the socket is dropped, for its log line. */
  reason(waiting: number): string {
    return `Peer is not reading: ${waiting} bytes unread, limit ${this.limits.maxBufferedBytes}`;
  }

  /** The error that goes instead of an answer refused for the backlog: the asker may try again in a second. */
  behindError(waiting: number): { code: 'not_ready'; message: string; details: { retryAfterMs: number } } {
    return {
      code: 'not_ready',
      message: `The link is behind: ${waiting} bytes wait for the peer, limit ${this.limits.maxBufferedBytes}; try again later`,
      details: { retryAfterMs: 1000 },
    };
  }
}
