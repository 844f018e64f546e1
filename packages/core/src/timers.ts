/**
 * Timers on a {@link Clock}, the one helper every component arms its timers with:
 *
 * - `Timer`: one timer, re-armed at will (arming it again replaces what was pending): a debounce,
 *   a wake-up, the head of a queue of time-outs.
 * - `TimerSet`: the one-shot timers a component owns, cleared together by its `close()`, after
 *   which it starts none.
 *
 * A callback that throws is handed to `onError`: nothing a timer runs may take the process down.
 * (Call time-outs, many per timer, are `Deadlines`, built on `Timer`.)
 */
import type { Clock } from './clock.js';

/** One timer that can be re-armed; arming it again replaces the pending callback. */
export class Timer {
  private handle: unknown;
  private armed = false;

  constructor(
    private readonly clock: Clock,
    /** Hears what a callback threw. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Run `callback` after `ms` (at once when ≤ 0, on a later turn), instead of what was pending. */
  after(ms: number, callback: () => void): void {
    this.clear();
    this.armed = true;
    this.handle = this.clock.setTimeout(
      () => {
        this.armed = false;
        try {
          callback();
        } catch (error) {
          this.onError(error);
        }
      },
      Math.max(0, ms),
    );
  }

  /** Whether a callback is waiting to run. */
  get pending(): boolean {
    return this.armed;
  }

  /** Forget the pending callback, if any. */
  clear(): void {
    if (!this.armed) return;
    this.armed = false;
    this.clock.clearTimeout(this.handle);
  }
}

/** The timers one component owns, so that `close()` can clear every one of them. */
export class TimerSet {
  private readonly handles = new Set<{ handle: unknown }>();
  private closed = false;

  /** `onError` hears about a callback that threw (by default nothing does). */
  constructor(
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Run `callback` once after `ms`; returns a cancel function. A closed set starts nothing. */
  after(ms: number, callback: () => void): () => void {
    if (this.closed) return () => undefined;
    const entry = { handle: undefined as unknown };
    entry.handle = this.clock.setTimeout(
      () => {
        this.handles.delete(entry);
        try {
          callback();
        } catch (error) {
          this.onError(error);
        }
      },
      Math.max(0, ms),
    );
    this.handles.add(entry);
    return () => {
      if (this.handles.delete(entry)) this.clock.clearTimeout(entry.handle);
    };
  }

  /** Timers set and not yet run or cancelled. */
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
