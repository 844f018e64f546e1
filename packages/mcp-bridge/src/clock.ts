/**
 * Time and timers, injected so that tests drive the debounce, the return grace and session
 * expiry without waiting (STYLE §6). `now()` is monotonic: a wall-clock jump must not fire or
 * postpone a notification.
 */
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    // The bridge's timers never keep a process alive on their own; its transports do that.
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** One timer that can be re-armed; arming it again replaces the pending callback. */
export class Timer {
  private handle: unknown;
  private armed = false;

  constructor(
    private readonly clock: Clock,
    /** Hears what a callback threw; nothing a timer runs may take the process down. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Run `callback` after `ms` (at once when ≤ 0, on the next turn). */
  after(ms: number, callback: () => void): void {
    this.clear();
    this.armed = true;
    this.handle = this.clock.setTimeout(() => {
      this.armed = false;
      try {
        callback();
      } catch (error) {
        this.onError(error);
      }
    }, Math.max(0, ms));
  }

  get pending(): boolean {
    return this.armed;
  }

  clear(): void {
    if (!this.armed) return;
    this.armed = false;
    this.clock.clearTimeout(this.handle);
  }
}
