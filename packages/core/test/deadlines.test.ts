import { beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, EXPIRE_BATCH, MAX_TIMER_MS, type Deadline } from '../src/deadlines.js';
import { manualClock, type ManualClock } from './helpers.js';

interface Item extends Deadline {
  readonly name: string;
}

const item = (name: string): Item => ({ name, deadlineAt: 0, deadlinePrev: undefined, deadlineNext: undefined, deadlineList: undefined });

/** A Deadlines whose expiries are recorded by item name. */
function recording(): { deadlines: Deadlines<Item>; expired: string[]; add: (ms: number, name: string) => Item } {
  const expired: string[] = [];
  const deadlines = new Deadlines<Item>((expiredItem) => expired.push(expiredItem.name), clock);
  return {
    deadlines,
    expired,
    add: (ms, name) => {
      const added = item(name);
      deadlines.add(ms, added);
      return added;
    },
  };
}

let clock: ManualClock;
beforeEach(() => {
  clock = manualClock();
});

describe('Deadlines', () => {
  it('expires calls of one time-out in start order, with one timer', () => {
    const { deadlines, expired, add } = recording();
    add(100, 'a');
    clock.advance(30);
    add(100, 'b');
    add(100, 'c');
    expect(deadlines.timerCount).toBe(1);
    expect(clock.pending()).toBe(1);
    clock.advance(69);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['a']);
    clock.advance(29);
    expect(expired).toEqual(['a']);
    clock.advance(1);
    expect(expired).toEqual(['a', 'b', 'c']);
    expect(clock.pending()).toBe(0);
  });

  it('arms a time-out longer than the longest node timer in steps, never as a spinning 1 ms timer', async () => {
    // The system clock: node runs a longer delay after 1 ms with a TimeoutOverflowWarning each time.
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const armed = vi.spyOn(globalThis, 'setTimeout');
    const expired: string[] = [];
    const deadlines = new Deadlines<Item>((expiredItem) => expired.push(expiredItem.name));
    try {
      deadlines.add(3_000_000_000, item('far'));
      // The timer as armed: the longest node runs as asked. A warning is emitted on the next tick.
      expect(armed.mock.calls.map(([, ms]) => ms)).toEqual([MAX_TIMER_MS]);
      await new Promise<void>((resolve) => setImmediate(resolve));
    } finally {
      armed.mockRestore();
      deadlines.clear();
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
    expect(expired).toEqual([]);
  });

  it('expires a time-out longer than the longest node timer when it is due, in two timer steps', () => {
    const { expired, add } = recording();
    add(3_000_000_000, 'far');
    clock.advance(MAX_TIMER_MS);
    expect(expired).toEqual([]);
    // Re-armed for what is left.
    expect(clock.pending()).toBe(1);
    clock.advance(3_000_000_000 - MAX_TIMER_MS - 1);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['far']);
    expect(clock.pending()).toBe(0);
  });

  it('never expires a removed deadline and drops the timer when none is left', () => {
    const { deadlines, expired, add } = recording();
    const a = add(100, 'a');
    const b = add(100, 'b');
    deadlines.remove(a);
    deadlines.remove(a);
    clock.advance(100);
    expect(expired).toEqual(['b']);
    expect(clock.pending()).toBe(0);
    const c = add(50, 'c');
    deadlines.remove(c);
    // The emptied list keeps its timer until it would have fired, then lets it go.
    expect(clock.pending()).toBe(1);
    clock.advance(50);
    expect(expired).toEqual(['b']);
    expect(clock.pending()).toBe(0);
    expect(deadlines.timerCount).toBe(0);
    deadlines.remove(b);
  });

  it('one call at a time reuses a single timer instead of starting one per call', () => {
    const { deadlines, expired, add } = recording();
    const setTimeoutSpy = vi.spyOn(clock, 'setTimeout');
    for (let i = 0; i < 50; i++) {
      const d = add(1000, `call ${i}`);
      clock.advance(5);
      deadlines.remove(d);
    }
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(clock.pending()).toBe(1);
    // A call started after the others settled still expires on time, through a re-armed timer.
    clock.advance(100);
    add(1000, 'late');
    clock.advance(999);
    expect(expired).toEqual([]);
    clock.advance(1);
    expect(expired).toEqual(['late']);
    expect(clock.pending()).toBe(0);
    setTimeoutSpy.mockRestore();
  });

  it('keeps separate queues per time-out value', () => {
    const { deadlines, expired, add } = recording();
    add(1000, 'slow');
    add(10, 'fast');
    expect(deadlines.timerCount).toBe(2);
    clock.advance(10);
    expect(expired).toEqual(['fast']);
    clock.advance(990);
    expect(expired).toEqual(['fast', 'slow']);
  });

  it('removing the head re-arms for the next one without expiring it early', () => {
    const { deadlines, expired, add } = recording();
    const head = add(100, 'head');
    clock.advance(50);
    add(100, 'next');
    deadlines.remove(head);
    clock.advance(50);
    expect(expired).toEqual([]);
    clock.advance(50);
    expect(expired).toEqual(['next']);
  });

  it('an item added by an expiry callback shares the one timer, and clear() stops it', () => {
    const expired: string[] = [];
    const deadlines: Deadlines<Item> = new Deadlines<Item>((done) => {
      expired.push(done.name);
      if (done.name === 'first') deadlines.add(50, item('retry'));
    }, clock);
    deadlines.add(50, item('first'));
    clock.advance(50);
    expect(expired).toEqual(['first']);
    expect(clock.pending()).toBe(1);
    expect(deadlines.timerCount).toBe(1);
    deadlines.clear();
    expect(clock.pending()).toBe(0);
    clock.advance(100);
    expect(expired).toEqual(['first']);
  });

  it('expires many items due together in batches, leaving the event loop a turn between them', () => {
    const { expired, add } = recording();
    const count = EXPIRE_BATCH * 2 + 10;
    for (let i = 0; i < count; i++) add(100, `call ${i}`);
    clock.advance(100);
    // One timer callback expires one batch; the rest wait for the next turn (a 1 ms timer).
    expect(expired).toHaveLength(EXPIRE_BATCH);
    expect(clock.pending()).toBe(1);
    clock.advance(1);
    expect(expired).toHaveLength(EXPIRE_BATCH * 2);
    clock.advance(1);
    expect(expired).toHaveLength(count);
    // Still in start order.
    expect(expired.slice(0, 3)).toEqual(['call 0', 'call 1', 'call 2']);
    expect(expired.at(-1)).toBe(`call ${count - 1}`);
    expect(clock.pending()).toBe(0);
  });

  it('clear() stops every timer without expiring anything', () => {
    const { deadlines, expired, add } = recording();
    add(10, 'x');
    add(20, 'y');
    deadlines.clear();
    expect(clock.pending()).toBe(0);
    clock.advance(100);
    expect(expired).toEqual([]);
  });
});
