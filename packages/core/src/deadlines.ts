/**
 * Time-outs of pending calls with one node timer per distinct time-out value, not one per call.
 * Calls with the same time-out expire in the order they started, so each value keeps a FIFO
 * (doubly linked, so a settled call leaves it in O(1)) and a single timer armed for its head:
 *
 *   15000 ms: [call 1] ⇄ [call 2] ⇄ [call 3]      timer → call 1's deadline, then re-armed
 *     200 ms: [call 4]                              timer → call 4's deadline
 *
 * The list is intrusive: the caller's own object (a pending call) carries the links, so adding a
 * deadline allocates nothing. A list that empties keeps its timer: under steady one-at-a-time
 * traffic every call would otherwise start and stop a node timer. The timer fires at most once
 * more, finds nothing due, and the list is dropped then (or re-armed for a later head).
 *
 * Many items due at once (5,000 calls started together) expire {@link EXPIRE_BATCH} per timer
 * callback, the next batch 1 ms later: each expiry may write an answer, and writing thousands in
 * one callback would hold every other request (and /mdp/meta) until the last one.
 *
 * Time and timers come from a {@link Clock} (the system's by default; a manual one in tests); each
 * list's timer is a `Timer` (timers.ts).
 */
import { systemClock, type Clock } from './clock.js';
import { Timer } from './timers.js';

/**
 * The longest delay node's timers take (2^31 − 1 ms, about 24.8 days). Node runs a timer with a
 * longer delay after 1 ms instead, with a warning: longer waits are made of several timers.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Most items expired in one timer callback; the rest follow on the next turn of the event loop. */
export const EXPIRE_BATCH = 128;

/** The fields a `Deadlines` keeps on each item. Start them `undefined`/0; only Deadlines writes them. */
export interface Deadline {
  deadlineAt: number;
  deadlinePrev: Deadline | undefined;
  deadlineNext: Deadline | undefined;
  deadlineList: DeadlineList | undefined;
}

class DeadlineList {
  head: Deadline | undefined;
  tail: Deadline | undefined;
  constructor(
    readonly ms: number,
    readonly timer: Timer,
  ) {}
}

export class Deadlines<T extends Deadline> {
  private readonly lists = new Map<number, DeadlineList>();

  /**
   * `onExpire` is called with each item whose time ran out before it was removed; what it throws
   * goes to `onError` (by default it is thrown again, from the timer).
   */
  constructor(
    private readonly onExpire: (item: T) => void,
    private readonly clock: Clock = systemClock,
    private readonly onError: (error: unknown) => void = rethrow,
  ) {}

  /** Expire `item` once `ms` have passed, unless it is removed first. */
  add(ms: number, item: T): void {
    let list = this.lists.get(ms);
    if (!list) this.lists.set(ms, (list = new DeadlineList(ms, new Timer(this.clock, this.onError))));
    item.deadlineAt = this.clock.now() + ms;
    item.deadlinePrev = list.tail;
    item.deadlineNext = undefined;
    item.deadlineList = list;
    if (list.tail) list.tail.deadlineNext = item;
    else list.head = item;
    list.tail = item;
    // Armed for the oldest item of this time-out value.
    if (!list.timer.pending) list.timer.after(Math.min(ms, MAX_TIMER_MS), () => this.fire(list));
  }

  /** Forget an item's deadline (its call settled). Idempotent. */
  remove(item: T): void {
    const list = item.deadlineList;
    if (!list) return;
    item.deadlineList = undefined;
    if (item.deadlinePrev) item.deadlinePrev.deadlineNext = item.deadlineNext;
    else list.head = item.deadlineNext;
    if (item.deadlineNext) item.deadlineNext.deadlinePrev = item.deadlinePrev;
    else list.tail = item.deadlinePrev;
    item.deadlinePrev = item.deadlineNext = undefined;
  }

  /** Number of node timers held (at most one per time-out value in use or recently used). */
  get timerCount(): number {
    let count = 0;
    for (const list of this.lists.values()) if (list.timer.pending) count++;
    return count;
  }

  /** Stop every timer without expiring anything. */
  clear(): void {
    for (const list of [...this.lists.values()]) this.drop(list);
  }

  private drop(list: DeadlineList): void {
    list.timer.clear();
    for (let d = list.head; d; d = d.deadlineNext) d.deadlineList = undefined;
    list.head = list.tail = undefined;
    this.lists.delete(list.ms);
  }

  private fire(list: DeadlineList): void {
    const now = this.clock.now();
    let budget = EXPIRE_BATCH;
    while (list.head && list.head.deadlineAt <= now && budget-- > 0) {
      const expired = list.head as T;
      this.remove(expired);
      this.onExpire(expired);
    }
    if (this.lists.get(list.ms) !== list) return; // cleared while expiring
    // An expiry callback may have added an item and armed a timer for it: one timer per list. An
    // item still due (the batch ran out) gets the shortest delay, so I/O is served in between.
    if (list.head) list.timer.after(Math.min(Math.max(1, list.head.deadlineAt - now), MAX_TIMER_MS), () => this.fire(list));
    else this.drop(list);
  }
}

function rethrow(error: unknown): never {
  throw error;
}
