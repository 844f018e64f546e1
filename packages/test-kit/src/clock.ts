/**
 * Time for tests: a manual clock (`@mdp/core`'s `Clock`) whose time moves only when the test says
 * so, a clock that reports each timer it runs (to wait on a component's own ticks), and `settle()`
 * to let queued callbacks run without any time passing.
 */
import type { Clock } from '@mdp/core';
import type { Subscribe } from './waiters.js';

/** Let promise callbacks and I/O already queued run: `turns` turns of the event loop, no time passes. */
export async function settle(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface ManualClock extends Clock {
  /** Move time on by `ms`, running each timer that falls due, in order, at its own time. */
  advance(ms: number): void;
  /** The same, letting promise callbacks run (`settle`) before each timer and at the end. */
  advanceSettled(ms: number): Promise<void>;
  /** Timers set and not yet run or cleared. */
  pending(): number;
}

/** A clock whose time only moves when the test says so; its wall clock is `epoch` plus that time. */
export function manualClock(epoch = 1_700_000_000_000): ManualClock {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let nextId = 1;
  const due = (until: number) => timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
  const run = (timer: { at: number; fn: () => void; id: number }): void => {
    timers = timers.filter((t) => t !== timer);
    now = Math.max(now, timer.at);
    timer.fn();
  };
  return {
    now: () => now,
    wallNow: () => epoch + now,
    setTimeout: (fn, ms) => {
      const id = nextId++;
      timers.push({ at: now + Math.max(0, ms), fn, id });
      return id;
    },
    clearTimeout: (id) => {
      timers = timers.filter((t) => t.id !== id);
    },
    advance(ms) {
      const until = now + ms;
      for (let timer = due(until); timer; timer = due(until)) run(timer);
      now = until;
    },
    async advanceSettled(ms) {
      const until = now + ms;
      for (;;) {
        await settle();
        const timer = due(until);
        if (!timer) break;
        run(timer);
      }
      now = until;
      await settle();
    },
    pending: () => timers.length,
  };
}

/**
 * `base` (the system clock, say), telling `ticks` subscribers after each timer it ran: a component
 * on this clock changes its state in its timers and in the events of its sockets, so a condition
 * checked after each of its timers needs no polling of the test's own.
 */
export function observedClock(base: Clock): { clock: Clock; ticks: Subscribe } {
  const listeners = new Set<() => void>();
  const clock: Clock = {
    now: () => base.now(),
    wallNow: () => base.wallNow(),
    setTimeout: (fn, ms) =>
      base.setTimeout(() => {
        try {
          fn();
        } finally {
          for (const listener of [...listeners]) listener();
        }
      }, ms),
    clearTimeout: (handle) => base.clearTimeout(handle),
  };
  return {
    clock,
    ticks: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
