/**
 * Time-outs of pending calls with one node timer per distinct time-out value, not one per call.
 * Calls with the same time-out expire in the order they started, so each value keeps a FIFO
 * (doubly linked, so a settled call leaves it in O(1)) and a single timer armed for its head:
 *
 *   15000 ms: [call 1] ⇄ [call 2] ⇄ [call 3]      timer → call 1's deadline, then re-armed
 *     200 ms: [call 4]                              timer → call 4's deadline
 *
 * A list that empties keeps its timer: under steady one-at-a-time traffic every call would
 * otherwise start and stop a node timer. The timer fires at most once more, finds nothing due,
 * and the list is dropped then (or re-armed for a later head).
 */

export interface Deadline {
  readonly at: number;
  readonly onExpire: () => void;
  prev: Deadline | undefined;
  next: Deadline | undefined;
  list: DeadlineList | undefined;
}

class DeadlineList {
  head: Deadline | undefined;
  tail: Deadline | undefined;
  timer: NodeJS.Timeout | undefined;
  constructor(readonly ms: number) {}
}

export class Deadlines {
  private readonly lists = new Map<number, DeadlineList>();

  /** Call `onExpire` once `ms` have passed, unless the returned deadline is removed first. */
  add(ms: number, onExpire: () => void): Deadline {
    let list = this.lists.get(ms);
    if (!list) this.lists.set(ms, (list = new DeadlineList(ms)));
    const deadline: Deadline = { at: Date.now() + ms, onExpire, prev: list.tail, next: undefined, list };
    if (list.tail) list.tail.next = deadline;
    else list.head = deadline;
    list.tail = deadline;
    // The pending call's time-out: armed for the oldest call of this time-out value.
    list.timer ??= setTimeout(() => this.fire(list), ms);
    return deadline;
  }

  /** Forget a deadline (its call settled). Idempotent. */
  remove(deadline: Deadline): void {
    const list = deadline.list;
    if (!list) return;
    deadline.list = undefined;
    if (deadline.prev) deadline.prev.next = deadline.next;
    else list.head = deadline.next;
    if (deadline.next) deadline.next.prev = deadline.prev;
    else list.tail = deadline.prev;
    deadline.prev = deadline.next = undefined;
  }

  /** Number of node timers held (at most one per time-out value in use or recently used). */
  get timerCount(): number {
    let count = 0;
    for (const list of this.lists.values()) if (list.timer) count++;
    return count;
  }

  /** Stop every timer without expiring anything. */
  clear(): void {
    for (const list of [...this.lists.values()]) this.drop(list);
  }

  private drop(list: DeadlineList): void {
    if (list.timer) clearTimeout(list.timer);
    list.timer = undefined;
    for (let d = list.head; d; d = d.next) d.list = undefined;
    list.head = list.tail = undefined;
    this.lists.delete(list.ms);
  }

  private fire(list: DeadlineList): void {
    list.timer = undefined;
    const now = Date.now();
    while (list.head && list.head.at <= now) {
      const expired = list.head;
      this.remove(expired);
      expired.onExpire();
    }
    if (this.lists.get(list.ms) !== list) return; // cleared while expiring
    if (list.head) list.timer = setTimeout(() => this.fire(list), Math.max(1, list.head.at - now));
    else this.drop(list);
  }
}
