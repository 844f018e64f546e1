import { describe, expect, it } from 'vitest';
import { TimerSet, WakeTimer } from '../src/clock.js';
import { Machine } from '../src/machine.js';
import { manualClock } from '@mdp/test-kit';

describe('WakeTimer', () => {
  it('keeps one timer at the last time set, re-arms only when it changes, and stops', () => {
    const clock = manualClock();
    const timers = new TimerSet(clock);
    let woken = 0;
    const wake = new WakeTimer(clock, timers, () => (woken += 1));
    wake.set(100);
    wake.set(100);
    expect(timers.size).toBe(1);
    wake.set(50);
    expect(timers.size).toBe(1);
    clock.advance(60);
    expect(woken).toBe(1);
    expect(timers.size).toBe(0);
    wake.set(200);
    wake.set(undefined);
    clock.advance(500);
    expect(woken).toBe(1);
    wake.set(600);
    wake.stop();
    expect(timers.size).toBe(0);
  });
});

describe('Machine', () => {
  /** Counts events; wakes 10 ms after each count below 3. */
  const counter = (state: number, event: 'count' | 'tick', now: number) => {
    const next = event === 'count' ? state + 1 : state;
    return { state: next, wakeAt: next < 3 ? now + 10 : undefined };
  };

  it('steps with the injected time, hands every result on, and ticks at wakeAt until none is set', () => {
    const clock = manualClock();
    const timers = new TimerSet(clock);
    const seen: number[] = [];
    const machine = new Machine(
      0,
      counter,
      () => clock.now(),
      (r) => seen.push(r.state),
      { clock, timers, tick: 'count' },
    );
    machine.feed('tick');
    expect(seen).toEqual([0]);
    clock.advance(100);
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(machine.state).toBe(3);
    expect(timers.size).toBe(0);
  });

  it('without timers it only steps; stop clears its timer', () => {
    const untimed = new Machine(
      0,
      counter,
      () => 0,
      () => undefined,
    );
    expect(untimed.feed('count').wakeAt).toBe(10);
    const clock = manualClock();
    const timers = new TimerSet(clock);
    const timed = new Machine(
      0,
      counter,
      () => clock.now(),
      () => undefined,
      { clock, timers, tick: 'count' },
    );
    timed.feed('count');
    timed.stop();
    expect(timers.size).toBe(0);
  });
});
