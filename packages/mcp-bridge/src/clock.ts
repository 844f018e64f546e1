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
