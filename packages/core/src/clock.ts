/**
 * Time and timers, injected so that tests drive time-outs, leases and debounces without waiting
 * and can count what a component leaves behind (STYLE §5–§6). `now()` is monotonic: a wall-clock
 * jump must not fire, expire or extend anything. `wallNow()` is the wall clock, for timestamps other
 * processes read (messages, hello proofs): two processes' monotonic clocks have nothing in common.
 */

export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  /** Milliseconds since the epoch. */
  wallNow(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

// The global `performance` (not node:perf_hooks'), so that a test on vitest's fake timers moves
// `now()` together with the timers it fakes.
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    // Timers on this clock never keep a process alive on their own; its sockets do that.
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
