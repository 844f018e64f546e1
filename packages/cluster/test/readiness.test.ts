/** Readiness as a pure transition: every phase and event, with the time passed in. */
import { describe, expect, it } from 'vitest';
import { manualClock } from '@mdp/test-kit';
import { TimerSet } from '../src/clock.js';
import { Machine } from '../src/machine.js';
import { initialReadiness, step, type ReadinessEvent, type ReadinessResult, type ReadinessState } from '../src/readiness.js';

const SETTLE = 300;

/** Feed `events` one after another at `now`, returning the last result. */
function feed(state: ReadinessState, now: number, ...events: ReadinessEvent[]) {
  let result = step(state, { type: 'tick' }, now);
  for (const event of events) result = step(result.state, event, now);
  return result;
}

const settling = (at = 1000): ReadinessState => step(initialReadiness(SETTLE), { type: 'roundDone', allLinked: false }, at).state;

describe('readiness', () => {
  it('starts waiting for the first discovery round, with no timer', () => {
    const state = initialReadiness(SETTLE);
    expect(state).toMatchObject({ phase: 'first-round', leaderSeen: false });
    expect(step(state, { type: 'tick' }, 0)).toEqual({ state, wakeAt: undefined, ready: undefined });
  });

  it('refuses a negative settle time', () => {
    expect(() => initialReadiness(-1)).toThrow(RangeError);
    expect(() => initialReadiness(Number.NaN)).toThrow(RangeError);
  });

  describe('first-round', () => {
    it('ignores links coming up (even all of them) and ticks', () => {
      const state = initialReadiness(SETTLE);
      for (const event of [{ type: 'linkUp', allLinked: true }, { type: 'linkUp', allLinked: false }, { type: 'tick' }] as const) {
        const result = step(state, event, 5000);
        expect(result).toEqual({ state, wakeAt: undefined, ready: undefined });
      }
    });

    it('remembers a leader seen by discovery', () => {
      const result = step(initialReadiness(SETTLE), { type: 'leaderSeen' }, 10);
      expect(result.state).toMatchObject({ phase: 'first-round', leaderSeen: true });
      expect(result.ready).toBeUndefined();
    });

    it('settles after the first round, waking at the deadline', () => {
      const result = step(initialReadiness(SETTLE), { type: 'roundDone', allLinked: false }, 1000);
      expect(result.state).toMatchObject({ phase: 'settling', settleAt: 1000 + SETTLE });
      expect(result.wakeAt).toBe(1000 + SETTLE);
      expect(result.ready).toBeUndefined();
    });

    it('is ready at once when the first round found nobody unlinked', () => {
      const result = step(initialReadiness(SETTLE), { type: 'roundDone', allLinked: true }, 1000);
      expect(result.state.phase).toBe('ready');
      expect(result.ready).toEqual({ leaderSeen: false });
      expect(result.wakeAt).toBeUndefined();
    });
  });

  describe('settling', () => {
    it('stays while some member has no link, and becomes ready when the last one links', () => {
      const waiting = step(settling(), { type: 'linkUp', allLinked: false }, 1100);
      expect(waiting.state.phase).toBe('settling');
      expect(waiting.wakeAt).toBe(1000 + SETTLE);
      const done = step(waiting.state, { type: 'linkUp', allLinked: true }, 1200);
      expect(done.state.phase).toBe('ready');
      expect(done.ready).toEqual({ leaderSeen: false });
      expect(done.wakeAt).toBeUndefined();
    });

    it('a later round keeps the deadline, and is ready when everyone is linked by then', () => {
      const later = step(settling(), { type: 'roundDone', allLinked: false }, 1200);
      expect(later.state).toMatchObject({ phase: 'settling', settleAt: 1000 + SETTLE });
      expect(step(later.state, { type: 'roundDone', allLinked: true }, 1250).ready).toEqual({ leaderSeen: false });
    });

    it('a tick before the deadline changes nothing; at the deadline the node is ready anyway', () => {
      const early = step(settling(), { type: 'tick' }, 1000 + SETTLE - 1);
      expect(early.state.phase).toBe('settling');
      expect(early.ready).toBeUndefined();
      const due = step(early.state, { type: 'tick' }, 1000 + SETTLE);
      expect(due.state.phase).toBe('ready');
      expect(due.ready).toEqual({ leaderSeen: false });
    });

    it('hands on a leader seen before or while settling', () => {
      const seenBefore = step(step(initialReadiness(SETTLE), { type: 'leaderSeen' }, 0).state, { type: 'roundDone', allLinked: true }, 10);
      expect(seenBefore.ready).toEqual({ leaderSeen: true });
      const seenWhile = feed(settling(), 1100, { type: 'leaderSeen' }, { type: 'linkUp', allLinked: true });
      expect(seenWhile.ready).toEqual({ leaderSeen: true });
    });
  });

  describe('ready', () => {
    it('reports ready once: every later event changes nothing and schedules nothing', () => {
      const ready = step(initialReadiness(SETTLE), { type: 'roundDone', allLinked: true }, 0).state;
      const events: ReadinessEvent[] = [{ type: 'leaderSeen' }, { type: 'roundDone', allLinked: true }, { type: 'linkUp', allLinked: true }, { type: 'tick' }];
      for (const event of events) expect(step(ready, event, 99_999)).toEqual({ state: ready, wakeAt: undefined, ready: undefined });
    });
  });

  describe('on the node (machine.ts, with a manual clock)', () => {
    it('the settle deadline fires by itself, reports ready once, and leaves no timer', () => {
      const clock = manualClock();
      const timers = new TimerSet(clock);
      const ready: ReadinessResult['ready'][] = [];
      const machine = new Machine(
        initialReadiness(SETTLE),
        step,
        () => clock.now(),
        (r) => r.ready && ready.push(r.ready),
        { clock, timers, tick: { type: 'tick' } },
      );
      clock.advance(1000);
      expect(timers.size).toBe(0);
      machine.feed({ type: 'roundDone', allLinked: false });
      expect(timers.size).toBe(1);
      clock.advance(SETTLE - 1);
      expect(ready).toEqual([]);
      clock.advance(1);
      expect(ready).toEqual([{ leaderSeen: false }]);
      expect(machine.state.phase).toBe('ready');
      expect(timers.size).toBe(0);
      machine.feed({ type: 'linkUp', allLinked: true });
      expect(ready).toHaveLength(1);
    });

    it('a node linked to everyone before the deadline is ready then, and its timer is cleared', () => {
      const clock = manualClock();
      const timers = new TimerSet(clock);
      const machine = new Machine(
        initialReadiness(SETTLE),
        step,
        () => clock.now(),
        () => undefined,
        { clock, timers, tick: { type: 'tick' } },
      );
      machine.feed({ type: 'roundDone', allLinked: false });
      clock.advance(10);
      expect(machine.feed({ type: 'linkUp', allLinked: true }).ready).toEqual({ leaderSeen: false });
      expect(timers.size).toBe(0);
    });
  });
});
