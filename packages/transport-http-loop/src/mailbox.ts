/**
 * One session's outbound queue and its single waiting poll. No HTTP here: the poll route hands in
 * its connection, and puts a message back when its response did not reach the client.
 *
 *   core ──send──▶ queue ──(after one I/O phase)──▶ waiting poll ──▶ 200 {message}
 *                   ▲                                    │
 *                   └──── putBack (response lost) ◀──────┘
 *
 * At most one poll waits; a newer poll answers the older one (`replaced` → 204).
 */
import type { ServerToClientMessage } from '@mdp/protocol';

export type TakeResult =
  | { readonly message: ServerToClientMessage }
  | { readonly message?: undefined; readonly reason: 'timeout' | 'replaced' | 'abandoned' | 'closed' };

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

interface Waiter {
  readonly resolve: (result: TakeResult) => void;
  readonly live: () => boolean;
  readonly cleanup: () => void;
}

/** Queued messages are checked for staleness once the queue reaches this length, then at twice what is left. */
const PRUNE_FROM = 64;

export class Mailbox {
  private queue: ServerToClientMessage[] = [];
  private waiter: Waiter | undefined;
  private flushing: NodeJS.Immediate | undefined;
  private closed = false;
  private pruneAt = PRUNE_FROM;

  /**
   * @param isStale A queued message no longer worth delivering (a call that has already ended by
   *   time-out). Stale messages are skipped when polled and dropped as the queue grows, so a client
   *   that stops polling but keeps its session alive does not make the queue grow without end.
   */
  constructor(private readonly isStale: (message: ServerToClientMessage) => boolean = () => false) {}

  /** Messages waiting to be polled. */
  get size(): number {
    return this.queue.length;
  }

  get hasWaiter(): boolean {
    return this.waiter !== undefined;
  }

  /** Queue a message behind the others. Dropped once closed (the session is gone). */
  push(message: ServerToClientMessage): void {
    if (this.closed) return;
    // Only the newest ping is worth answering.
    if (message.type === 'ping') this.queue = this.queue.filter((queued) => queued.type !== 'ping');
    this.queue.push(message);
    if (this.queue.length >= this.pruneAt) {
      this.queue = this.queue.filter((queued) => !this.isStale(queued));
      this.pruneAt = Math.max(PRUNE_FROM, 2 * this.queue.length);
    }
    this.scheduleFlush();
  }

  /** Return a message whose response was not delivered to the head of the queue. */
  putBack(message: ServerToClientMessage): void {
    if (this.closed) return;
    this.queue.unshift(message);
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
    if (head !== undefined) return Promise.resolve({ message: head });
    if (options.waitMs <= 0) return Promise.resolve({ reason: 'timeout' });
    return new Promise<TakeResult>((resolve) => {
      const onAbort = (): void => {
        if (this.waiter === waiter) this.answer({ reason: 'abandoned' });
      };
      // The long-poll time-out: an empty poll is answered 204 after waitMs.
      const timer = setTimeout(() => {
        if (this.waiter === waiter) this.answer({ reason: 'timeout' });
      }, options.waitMs);
      let unwatch: (() => void) | undefined;
      const waiter: Waiter = {
        resolve,
        live,
        cleanup: () => {
          clearTimeout(timer);
          unwatch?.();
        },
      };
      this.waiter = waiter;
      unwatch = connection?.onGone(onAbort);
    });
  }

  /** Answer the waiting poll, drop the queue and refuse everything afterwards. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    this.answer({ reason: 'closed' });
  }

  private answer(result: TakeResult): void {
    const waiter = this.waiter;
    if (!waiter) return;
    this.waiter = undefined;
    waiter.cleanup();
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
    const message = this.next();
    if (message) this.answer({ message });
  }

  /** The first message that is not stale; stale ones before it are dropped. */
  private next(): ServerToClientMessage | undefined {
    let message = this.queue.shift();
    while (message !== undefined && this.isStale(message)) message = this.queue.shift();
    return message;
  }
}
