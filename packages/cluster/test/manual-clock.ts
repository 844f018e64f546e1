import type { Clock } from '../src/clock.js';

export interface ManualClock extends Clock {
  /** Move time on by `ms`, running each timer that falls due, in order, at its own time. */
  advance(ms: number): void;
  /** Timers set and not yet run or cleared. */
  pending(): number;
}

/** A clock whose time only moves when the test says so; its wall clock is a fixed epoch plus that time. */
export function manualClock(epoch = 1_700_000_000_000): ManualClock {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let next = 1;
  return {
    now: () => now,
    wallNow: () => epoch + now,
    setTimeout: (fn, ms) => {
      const id = next++;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimeout: (id) => {
      timers = timers.filter((t) => t.id !== id);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.fn();
      }
      now = until;
    },
    pending: () => timers.length,
  };
}
