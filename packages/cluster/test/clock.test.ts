import { describe, expect, it } from 'vitest';
import { TimerSet, type Clock } from '../src/clock.js';

/** A clock whose time only moves when the test says so. */
function manualClock(): Clock & { advance(ms: number): void; pending(): number } {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let next = 1;
  return {
    now: () => now,
    setTimeout: (fn, ms) => {
      const id = next++;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimeout: (id) => {
      timers = timers.filter((t) => t.id !== id);
    },
    advance(ms) {
      now += ms;
      for (const t of timers.filter((x) => x.at <= now)) {
        timers = timers.filter((x) => x !== t);
        t.fn();
      }
    },
    pending: () => timers.length,
  };
}

describe('TimerSet', () => {
  it('runs, cancels and clears every timer on close', () => {
    const clock = manualClock();
    const timers = new TimerSet(clock);
    const ran: string[] = [];
    timers.after(10, () => ran.push('a'));
    const cancel = timers.after(20, () => ran.push('b'));
    timers.after(30, () => ran.push('c'));
    expect(timers.size).toBe(3);
    clock.advance(10);
    cancel();
    expect(ran).toEqual(['a']);
    expect(timers.size).toBe(1);
    timers.close();
    expect(timers.size).toBe(0);
    expect(clock.pending()).toBe(0);
    timers.after(1, () => ran.push('late'));
    clock.advance(100);
    expect(ran).toEqual(['a']);
  });

  it('reports a callback that throws instead of letting it escape', () => {
    const clock = manualClock();
    const errors: unknown[] = [];
    const timers = new TimerSet(clock, (error) => errors.push(error));
    timers.after(1, () => {
      throw new Error('boom');
    });
    expect(() => clock.advance(1)).not.toThrow();
    expect(errors).toHaveLength(1);
  });
});
