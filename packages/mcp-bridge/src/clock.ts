/**
 * Timers on an injected clock (core's `Clock`), so that tests drive the debounce, the return grace
 * and session expiry without waiting (STYLE §6).
 */
import type { Clock } from '@mdp/core';

export { systemClock } from '@mdp/core';
export type { Clock } from '@mdp/core';

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
