/**
 * HTTP loop clients that vanish (a page closed without `disconnect`): a session with no poll
 * waiting and none started for `idleTimeoutMs` ends, so its client leaves within seconds instead
 * of after the 90 s heartbeat. A live client has a poll waiting or about to start — the SDKs keep
 * polling while their handlers run — and one that does not poll while it works still sends its
 * answers: an answer to a call it was handed counts as activity (other sends do not: a client that
 * never polls could send pings for ever), and a session that was handed a call it has not answered
 * yet is kept (its owner decides, `keep`) until that call ends. So only a gone client goes quiet.
 *
 *   open ─▶ idle ──poll starts──▶ polling (1+ polls) ──last poll ends──▶ idle ─┐
 *            │ ▲                                                               │
 *            │ └───────────────────────────────────────────────────────────────┘
 *            └── idle for idleTimeoutMs ──▶ expired (the session ends)
 *
 * `IdleTracker` is the bookkeeping, with the time passed in. Every session shares the time-out,
 * so idle sessions expire in the order they became idle: one FIFO, doubly linked so a session
 * leaves it in O(1) when a poll starts. `IdleWatch` drives it with one timer, armed for the
 * oldest idle session and re-armed only when it fires, never per poll.
 */

import { EXPIRE_BATCH, systemClock, type Clock } from '@mdp/core';

/** One session as the tracker sees it; only the tracker writes its fields. */
export class IdleEntry {
  /** Polls of this session being answered now. */
  polls = 0;
  /** When it last became idle; meaningful while listed. */
  idleSince = 0;
  prev: IdleEntry | undefined = undefined;
  next: IdleEntry | undefined = undefined;
  listed = false;
  removed = false;

  constructor(readonly id: string) {}
}

export class IdleTracker {
  private head: IdleEntry | undefined;
  private tail: IdleEntry | undefined;
  private count = 0;

  /** @param idleTimeoutMs How long a session may go without a poll waiting or started, ms. */
  constructor(readonly idleTimeoutMs: number) {
    if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0) throw new RangeError('idleTimeoutMs must be a positive number of milliseconds');
  }

  /** Sessions tracked (idle or polling). */
  get size(): number {
    return this.count;
  }

  /** A new session: idle from `now` until its first poll. */
  open(id: string, now: number): IdleEntry {
    const entry = new IdleEntry(id);
    this.count++;
    this.append(entry, now);
    return entry;
  }

  /** A poll of `entry` arrived: it is not idle while a poll waits. */
  pollStarted(entry: IdleEntry): void {
    if (entry.removed) return;
    entry.polls++;
    this.unlink(entry);
  }

  /** A poll of `entry` was answered at `now`: idle from then when no other poll waits. */
  pollEnded(entry: IdleEntry, now: number): void {
    if (entry.removed || entry.polls === 0) return;
    entry.polls--;
    if (entry.polls === 0) this.append(entry, now);
  }

  /** `entry` showed it is there (it answered a call it held) at `now`: an idle one is idle from now. */
  touch(entry: IdleEntry, now: number): void {
    if (entry.removed || !entry.listed) return;
    this.unlink(entry);
    this.append(entry, now);
  }

  /** The session ended: forget it. Idempotent. */
  remove(entry: IdleEntry): void {
    if (entry.removed) return;
    entry.removed = true;
    this.count--;
    this.unlink(entry);
  }

  /** When the oldest idle session expires, or `undefined` when none is idle. */
  nextDeadline(): number | undefined {
    return this.head === undefined ? undefined : this.head.idleSince + this.idleTimeoutMs;
  }

  /**
   * The sessions idle for the whole time-out at `now`, oldest first; they are removed. A due session
   * `keep` holds on to is idle again from `now` instead. At most `limit` due sessions are looked at,
   * kept ones included (`keep` may walk a session's queue).
   */
  expire(now: number, limit = Number.POSITIVE_INFINITY, keep: (entry: IdleEntry) => boolean = () => false): IdleEntry[] {
    const expired: IdleEntry[] = [];
    let looked = 0;
    while (this.head !== undefined && now - this.head.idleSince >= this.idleTimeoutMs && looked < limit) {
      looked++;
      const entry = this.head;
      if (keep(entry)) {
        this.touch(entry, now);
        continue;
      }
      this.remove(entry);
      expired.push(entry);
    }
    return expired;
  }

  private append(entry: IdleEntry, now: number): void {
    entry.idleSince = now;
    entry.prev = this.tail;
    entry.next = undefined;
    entry.listed = true;
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
  }

  private unlink(entry: IdleEntry): void {
    if (!entry.listed) return;
    const { prev, next } = entry;
    if (prev) prev.next = next;
    else this.head = next;
    if (next) next.prev = prev;
    else this.tail = prev;
    entry.prev = entry.next = undefined;
    entry.listed = false;
  }
}

/**
 * The part of core's `Clock` that `IdleWatch` reads and arms; tests pass a fake one. The default is
 * core's `systemClock`, whose timers never keep a process alive (ending vanished sessions is no
 * reason to).
 */
export type IdleClock = Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;

/** {@link IdleTracker} on a clock: calls `onExpire` with the id of each session that went quiet. */
export class IdleWatch {
  private readonly tracker: IdleTracker;
  private timer: unknown;
  private closed = false;

  /** @param keep A due session that must stay (it is handling a call): idle again from now. */
  constructor(
    idleTimeoutMs: number,
    private readonly onExpire: (id: string) => void,
    private readonly clock: IdleClock = systemClock,
    private readonly keep: (id: string) => boolean = () => false,
  ) {
    this.tracker = new IdleTracker(idleTimeoutMs);
  }

  /** Whether a timer is armed (0 or 1 timers in all). */
  get timerArmed(): boolean {
    return this.timer !== undefined;
  }

  get size(): number {
    return this.tracker.size;
  }

  open(id: string): IdleEntry {
    const entry = this.tracker.open(id, this.clock.now());
    this.arm();
    return entry;
  }

  pollStarted(entry: IdleEntry): void {
    // The timer stays as it is: it fires for a session that has since polled, finds nothing due
    // and re-arms for the next one. Cheaper than clearing and arming a timer per poll.
    this.tracker.pollStarted(entry);
  }

  pollEnded(entry: IdleEntry): void {
    this.tracker.pollEnded(entry, this.clock.now());
    this.arm();
  }

  /** The client answered a call it held: the session is there. Like a poll, it leaves the timer alone. */
  touch(entry: IdleEntry): void {
    this.tracker.touch(entry, this.clock.now());
  }

  remove(entry: IdleEntry): void {
    this.tracker.remove(entry);
  }

  /** Stop: clear the timer and expire nothing more. Idempotent. */
  close(): void {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer !== undefined || this.closed) return;
    const deadline = this.tracker.nextDeadline();
    if (deadline === undefined) return;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, deadline - this.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    if (this.closed) return;
    try {
      // Thousands of sessions gone at once end in batches, a turn of the event loop apart (the
      // next batch is due at once: the timer re-arms with no delay), so other requests are served.
      for (const entry of this.tracker.expire(this.clock.now(), EXPIRE_BATCH, (due) => this.keep(due.id))) this.onExpire(entry.id);
    } finally {
      this.arm();
    }
  }
}
