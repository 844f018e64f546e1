/**
 * Time and timers, injected so that tests can count what a node leaves behind (STYLE §5–§6).
 * `now()` is monotonic: a wall-clock jump must not expire or extend a lease. `wallNow()` is the
 * wall clock, for the timestamps other processes read (messages, hello proofs): two processes'
 * monotonic clocks have nothing in common.
 */
import type { Clock } from '@mdp/core';

// The clock itself is core's (the MCP bridge uses it too); cluster code imports it from here.
export { systemClock } from '@mdp/core';
export type { Clock } from '@mdp/core';

/** The timers one component owns, so that `close()` can clear every one of them. */
export class TimerSet {
  private readonly handles = new Set<{ handle: unknown }>();
  private closed = false;

  /** `onError` hears about a callback that threw; nothing a timer runs may take the process down. */
  constructor(
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Run `callback` once after `ms`; returns a cancel function. A closed set starts nothing. */
  after(ms: number, callback: () => void): () => void {
    if (this.closed) return () => undefined;
    const entry = { handle: undefined as unknown };
    entry.handle = this.clock.setTimeout(() => {
      this.handles.delete(entry);
      try {
        callback();
      } catch (error) {
        this.onError(error);
      }
    }, Math.max(0, ms));
    this.handles.add(entry);
    return () => {
      if (this.handles.delete(entry)) this.clock.clearTimeout(entry.handle);
    };
  }

  get size(): number {
    return this.handles.size;
  }

  /** Clear every pending timer; later `after` calls are ignored. */
  close(): void {
    this.closed = true;
    for (const entry of this.handles) this.clock.clearTimeout(entry.handle);
    this.handles.clear();
  }
}

/**
 * The one timer of a pure state machine: armed for the `wakeAt` of its last step, re-armed only
 * when that time changes, and calling `onWake` (which feeds the machine a tick) when it is due.
 */
export class WakeTimer {
  private at: number | undefined;
  private cancel: (() => void) | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly timers: TimerSet,
    private readonly onWake: () => void,
  ) {}

  /** Wake at `at` (monotonic ms), or never with `undefined`. */
  set(at: number | undefined): void {
    if (at === this.at && this.cancel) return;
    this.stop();
    this.at = at;
    if (at === undefined) return;
    this.cancel = this.timers.after(at - this.clock.now(), () => {
      this.cancel = undefined;
      this.at = undefined;
      this.onWake();
    });
  }

  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.at = undefined;
  }
}

/**
 * Wall-clock ms that never repeat: `wallNow()`, or one more than the last when that is not later.
 * The timestamps of this node's cluster proofs: a proof is accepted once (proof-memory.ts), so two
 * links opened in the same millisecond must not carry the same one. Under a burst (thousands of
 * mirrors reconnecting at once) the stamps run ahead of the clock by a second per thousand proofs
 * made in one millisecond, well inside the proofs' five-minute window.
 */
export function uniqueStamps(clock: Pick<Clock, 'wallNow'>): () => number {
  let last = -Infinity;
  return () => {
    last = Math.max(Math.floor(clock.wallNow()), last + 1);
    return last;
  };
}
