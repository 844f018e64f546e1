/** The timer helper every component arms its timers with (timers.ts), on a manual clock. */
import { describe, expect, it } from 'vitest';
import { Timer, TimerSet } from '../src/timers.js';
import { manualClock } from './helpers.js';

describe('Timer', () => {
  it('runs once after its delay, and arming it again replaces what was pending', () => {
    const clock = manualClock();
    const timer = new Timer(clock, () => undefined);
    const ran: string[] = [];
    timer.after(10, () => ran.push('a'));
    expect(timer.pending).toBe(true);
    clock.advance(5);
    timer.after(10, () => ran.push('b'));
    expect(clock.pending()).toBe(1);
    clock.advance(10);
    expect(ran).toEqual(['b']);
    expect(timer.pending).toBe(false);
    expect(clock.pending()).toBe(0);
  });

  it('clears, runs a delay of zero or less on a later turn, and may re-arm itself from its callback', () => {
    const clock = manualClock();
    const timer = new Timer(clock, () => undefined);
    const ran: number[] = [];
    timer.after(10, () => ran.push(1));
    timer.clear();
    timer.clear();
    expect(clock.pending()).toBe(0);
    timer.after(-5, () => ran.push(2));
    expect(ran).toEqual([]);
    clock.advance(0);
    expect(ran).toEqual([2]);
    let ticks = 0;
    const tick = (): void => {
      ticks += 1;
      if (ticks < 3) timer.after(10, tick);
    };
    timer.after(10, tick);
    clock.advance(100);
    expect(ticks).toBe(3);
    expect(timer.pending).toBe(false);
  });

  it('reports a callback that throws instead of letting it escape', () => {
    const clock = manualClock();
    const errors: unknown[] = [];
    const timer = new Timer(clock, (error) => errors.push(error));
    timer.after(1, () => {
      throw new Error('boom');
    });
    expect(() => clock.advance(1)).not.toThrow();
    expect(errors).toEqual([new Error('boom')]);
    expect(timer.pending).toBe(false);
  });
});

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
