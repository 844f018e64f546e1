/**
 * One session's outbound queue and its single waiting poll. No HTTP here: the poll route hands in
 * its connection, and puts a message back when its response did not reach the client.
 *
 *   core ──send──▶ queue ──(after one I/O phase)──▶ waiting poll ──▶ 200 {message}
 *                   ▲                                    │
 *                   └──── putBack (response lost) ◀──────┘
 *
 * At most one poll waits; a newer poll answers the older one (`replaced` → 204). The queue is
 * bounded in messages and bytes: a session whose client polls slower than calls come does not grow
 * without end. A call that would take the queue past a bound (after dropping calls that ended) is
 * refused: `push` says why and queues nothing, and the session goes on (its client is behind, not
 * gone: one that stops polling is ended by the transport's idle watch). Other messages (pongs,
 * acknowledgements: one per message of the client's own) are queued up to twice the bounds; past
 * that the mailbox closes and reports the overflow (the transport ends the session).
 */
import { Deadlines, type Deadline } from '@mdp/core';
import { stringifyServerMessage, type ServerToClientMessage } from '@mdp/protocol';

/** A queued message with its JSON text, made once when it is queued (its size counts against the bound). */
export interface Queued {
  readonly message: ServerToClientMessage;
  readonly text: string;
}

export type TakeResult =
  | (Queued & { readonly reason?: undefined })
  | { readonly message?: undefined; readonly reason: 'timeout' | 'replaced' | 'abandoned' | 'closed' };

export interface MailboxLimits {
  /** Most messages queued. */
  readonly maxMessages: number;
  /** Most bytes of queued JSON text (one per character). */
  readonly maxBytes: number;
}

const UNBOUNDED: MailboxLimits = { maxMessages: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY };

/** A poll's connection as the mailbox sees it, whatever the HTTP runtime. */
export interface PollConnection {
  /** Whether a response can still reach the client; checked before a message is handed over. */
  isLive(): boolean;
  /** Call `listener` once when the client goes away; returns what stops watching. */
  onGone(listener: () => void): () => void;
}

export interface TakeOptions {
  /** How long to wait for a message, ms; 0 answers at once. */
  readonly waitMs: number;
  /** The poll's connection: a poll whose client went away takes nothing. Without one the client counts as always there. */
  readonly connection?: PollConnection;
}

/**
 * The one poll waiting on a mailbox, and its place in the long-poll deadlines. The deadlines are
 * shared by every mailbox of a transport: one node timer per wait length, and polls that time out
 * together are answered in batches (core's `Deadlines`), not thousands of 204s in one callback.
 */
export class PollWait implements Deadline {
  deadlineAt = 0;
  deadlinePrev: Deadline | undefined = undefined;
  deadlineNext: Deadline | undefined = undefined;
  deadlineList: Deadline['deadlineList'] = undefined;
  unwatch: (() => void) | undefined = undefined;

  constructor(
    readonly mailbox: Mailbox,
    readonly resolve: (result: TakeResult) => void,
    readonly live: () => boolean,
  ) {}
}

/** Long-poll deadlines for mailboxes: pass one to every mailbox of a transport, clear it when the transport closes. */
export function pollDeadlines(): Deadlines<PollWait> {
  return new Deadlines<PollWait>((wait) => wait.mailbox.timeOut(wait));
}

/** Queued messages are checked for staleness once the queue reaches this length, then at twice what is left. */
const PRUNE_FROM = 64;

export class Mailbox {
  private queue: Queued[] = [];
  private bytes = 0;
  private waiter: PollWait | undefined;
  private readonly waits: Deadlines<PollWait>;
  /** Set when this mailbox made its own deadlines (none were given): cleared on close. */
  private readonly ownWaits: Deadlines<PollWait> | undefined;
  private flushing: NodeJS.Immediate | undefined;
  private closed = false;
  private pruneAt = PRUNE_FROM;
  /** Messages found over a bound since one was last queued. */
  private refusedSincePrune = 0;

  /**
   * @param isStale A queued message no longer worth delivering (a call that has already ended by
   *   time-out). Stale messages are skipped when polled and dropped as the queue grows, so a client
   *   that stops polling but keeps its session alive does not make the queue grow without end.
   * @param limits Bounds of the queue; default none.
   * @param onOverflow Called once when messages other than calls take the queue past twice its
   *   bounds (after stale ones were dropped); the mailbox is closed by then.
   * @param waits The long-poll deadlines shared by a transport's mailboxes ({@link pollDeadlines});
   *   without them the mailbox keeps its own.
   */
  constructor(
    private readonly isStale: (message: ServerToClientMessage) => boolean = () => false,
    private readonly limits: MailboxLimits = UNBOUNDED,
    private readonly onOverflow: (reason: string) => void = () => {},
    waits?: Deadlines<PollWait>,
  ) {
    this.ownWaits = waits === undefined ? pollDeadlines() : undefined;
    this.waits = waits ?? (this.ownWaits as Deadlines<PollWait>);
  }

  /** Messages waiting to be polled. */
  get size(): number {
    return this.queue.length;
  }

  /** Bytes of JSON text waiting to be polled. */
  get byteSize(): number {
    return this.bytes;
  }

  get hasWaiter(): boolean {
    return this.waiter !== undefined;
  }

  /**
   * Calls queued and not polled yet whose callers still wait (stale ones are not counted). Walks
   * the queue: for the idle check, not per message.
   */
  queuedCalls(): number {
    let count = 0;
    for (const { message } of this.queue) if (message.type === 'callClient' && !this.isStale(message)) count++;
    return count;
  }

  /**
   * Queue a message behind the others. Returns why not when it is a call that would take the queue
   * past a bound (nothing is queued: the caller may try again later). Dropped once closed (the
   * session is gone).
   */
  push(message: ServerToClientMessage): string | undefined {
    if (this.closed) return undefined;
    // Only the newest ping is worth answering.
    if (message.type === 'ping') this.keep((queued) => queued.message.type !== 'ping');
    const text = stringifyServerMessage(message);
    const over = this.over(text.length);
    if (over > 0) {
      const { maxMessages, maxBytes } = this.limits;
      const state = `${this.queue.length} messages, ${this.bytes} bytes waiting; at most ${maxMessages} messages, ${maxBytes} bytes`;
      if (message.type === 'callClient') return `HTTP loop queue full (${state}): the client is behind; try again later`;
      if (over === 2) {
        this.close();
        this.onOverflow(`HTTP loop queue over its limit (${state}): the client is not polling`);
        return undefined;
      }
    }
    this.refusedSincePrune = 0;
    this.queue.push({ message, text });
    this.bytes += text.length;
    if (this.queue.length >= this.pruneAt) {
      this.keep((queued) => !this.isStale(queued.message));
      this.pruneAt = Math.max(PRUNE_FROM, 2 * this.queue.length);
    }
    this.scheduleFlush();
    return undefined;
  }

  /**
   * Whether one more message of `bytes` takes the queue past its bounds (1) or past twice them (2),
   * once calls that ended are dropped; 0 when it fits. Over a bound, ended calls are looked for
   * only every {@link PRUNE_FROM} refusals, not on each: a flood of refused calls costs no walk each.
   */
  private over(bytes: number): 0 | 1 | 2 {
    if (this.beyond(bytes) === 0) return 0;
    if (this.refusedSincePrune++ % PRUNE_FROM === 0) this.keep((queued) => !this.isStale(queued.message));
    return this.beyond(bytes);
  }

  /** How far one more message of `bytes` takes the queue as it is: 0 within its bounds, 1 past them, 2 past twice them. */
  private beyond(bytes: number): 0 | 1 | 2 {
    const { maxMessages, maxBytes } = this.limits;
    const count = this.queue.length + 1;
    const size = this.bytes + bytes;
    if (count <= maxMessages && size <= maxBytes) return 0;
    return count > 2 * maxMessages || size > 2 * maxBytes ? 2 : 1;
  }

  /** Return a message whose response was not delivered to the head of the queue. */
  putBack(queued: Queued): void {
    if (this.closed) return;
    this.queue.unshift(queued);
    this.bytes += queued.text.length;
    this.scheduleFlush();
  }

  /** Take the next message, waiting up to `waitMs` for one. Never rejects. */
  take(options: TakeOptions): Promise<TakeResult> {
    this.answer({ reason: 'replaced' });
    if (this.closed) return Promise.resolve({ reason: 'closed' });
    const { connection } = options;
    const live = (): boolean => connection?.isLive() ?? true;
    if (!live()) return Promise.resolve({ reason: 'abandoned' });
    const head = this.next();
    if (head !== undefined) return Promise.resolve(head);
    if (options.waitMs <= 0) return Promise.resolve({ reason: 'timeout' });
    return new Promise<TakeResult>((resolve) => {
      const wait = new PollWait(this, resolve, live);
      this.waiter = wait;
      // The long-poll time-out: an empty poll is answered 204 after waitMs.
      this.waits.add(options.waitMs, wait);
      wait.unwatch = connection?.onGone(() => {
        if (this.waiter === wait) this.answer({ reason: 'abandoned' });
      });
    });
  }

  /** `wait`'s time is up: answer it 204 if it is still the waiting poll. */
  timeOut(wait: PollWait): void {
    if (this.waiter === wait) this.answer({ reason: 'timeout' });
  }

  /** Answer the waiting poll, drop the queue and refuse everything afterwards. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.bytes = 0;
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    this.answer({ reason: 'closed' });
    this.ownWaits?.clear();
  }

  private answer(result: TakeResult): void {
    const waiter = this.waiter;
    if (!waiter) return;
    this.waiter = undefined;
    this.waits.remove(waiter);
    waiter.unwatch?.();
    waiter.resolve(result);
  }

  private scheduleFlush(): void {
    if (!this.waiter || this.flushing) return;
    // Hand over only after one full I/O phase of the event loop, not synchronously: a client that
    // closed its poll connection (its FIN already received by the kernel) is noticed first, so the
    // message is not written to a connection that is already gone. One setImmediate is not enough:
    // when the push happens during the I/O phase, the check phase of that same turn comes before
    // the next I/O phase; the second setImmediate runs in the following turn.
    this.flushing = setImmediate(() => {
      this.flushing = setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.flushing = undefined;
    const waiter = this.waiter;
    if (!waiter || this.queue.length === 0) return;
    if (!waiter.live()) {
      this.answer({ reason: 'abandoned' });
      return;
    }
    const queued = this.next();
    if (queued) this.answer(queued);
  }

  /** The first message that is not stale; stale ones before it are dropped. */
  private next(): Queued | undefined {
    let queued = this.queue.shift();
    while (queued !== undefined && this.isStale(queued.message)) {
      this.bytes -= queued.text.length;
      queued = this.queue.shift();
    }
    if (queued !== undefined) this.bytes -= queued.text.length;
    return queued;
  }

  /** Keep only the queued messages `wanted` accepts. */
  private keep(wanted: (queued: Queued) => boolean): void {
    const kept = this.queue.filter(wanted);
    if (kept.length === this.queue.length) return;
    this.queue = kept;
    this.bytes = 0;
    for (const queued of kept) this.bytes += queued.text.length;
  }
}
