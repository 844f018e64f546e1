import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, EXPIRE_BATCH, MAX_TIMER_MS, type Deadline } from '../src/deadlines.js';

interface Item extends Deadline {
  readonly name: string;
}

const item = (name: string): Item => ({ name, deadlineAt: 0, deadlinePrev: undefined, deadlineNext: undefined, deadlineList: undefined });

/** A Deadlines whose expiries are recorded by item name. */
function recording(): { deadlines: Deadlines<Item>; expired: string[]; add: (ms: number, name: string) => Item } {
  const expired: string[] = [];
  const deadlines = new Deadlines<Item>((expiredItem) => expired.push(expiredItem.name));
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

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('Deadlines', () => {
  it('expires calls of one time-out in start order, with one timer', () => {
    const { deadlines, expired, add } = recording();
    add(100, 'a');
    vi.advanceTimersByTime(30);
    add(100, 'b');
    add(100, 'c');
    expect(deadlines.timerCount).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(69);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(29);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a', 'b', 'c']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('arms a time-out longer than the longest node timer in steps, never as a spinning 1 ms timer', async () => {
    // Real timers: node runs a longer delay after 1 ms with a TimeoutOverflowWarning each time.
    vi.useRealTimers();
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const armed = vi.spyOn(globalThis, 'setTimeout');
    const { deadlines, expired, add } = recording();
    try {
      add(3_000_000_000, 'far');
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
    const start = Date.now();
    add(3_000_000_000, 'far');
    vi.advanceTimersToNextTimer();
    expect(Date.now() - start).toBe(MAX_TIMER_MS);
    expect(expired).toEqual([]);
    vi.advanceTimersToNextTimer();
    expect(Date.now() - start).toBe(3_000_000_000);
    expect(expired).toEqual(['far']);
  });

  it('never expires a removed deadline and drops the timer when none is left', () => {
    const { deadlines, expired, add } = recording();
    const a = add(100, 'a');
    const b = add(100, 'b');
    deadlines.remove(a);
    deadlines.remove(a);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['b']);
    expect(vi.getTimerCount()).toBe(0);
    const c = add(50, 'c');
    deadlines.remove(c);
    // The emptied list keeps its timer until it would have fired, then lets it go.
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['b']);
    expect(vi.getTimerCount()).toBe(0);
    expect(deadlines.timerCount).toBe(0);
    deadlines.remove(b);
  });

  it('one call at a time reuses a single timer instead of starting one per call', () => {
    const { deadlines, expired, add } = recording();
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    for (let i = 0; i < 50; i++) {
      const d = add(1000, `call ${i}`);
      vi.advanceTimersByTime(5);
      deadlines.remove(d);
    }
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(1);
    // A call started after the others settled still expires on time, through a re-armed timer.
    vi.advanceTimersByTime(100);
    add(1000, 'late');
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['late']);
    expect(vi.getTimerCount()).toBe(0);
    setTimeoutSpy.mockRestore();
  });

  it('keeps separate queues per time-out value', () => {
    const { deadlines, expired, add } = recording();
    add(1000, 'slow');
    add(10, 'fast');
    expect(deadlines.timerCount).toBe(2);
    vi.advanceTimersByTime(10);
    expect(expired).toEqual(['fast']);
    vi.advanceTimersByTime(990);
    expect(expired).toEqual(['fast', 'slow']);
  });

  it('removing the head re-arms for the next one without expiring it early', () => {
    const { deadlines, expired, add } = recording();
    const head = add(100, 'head');
    vi.advanceTimersByTime(50);
    add(100, 'next');
    deadlines.remove(head);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['next']);
  });

  it('an item added by an expiry callback shares the one timer, and clear() stops it', () => {
    const expired: string[] = [];
    const deadlines: Deadlines<Item> = new Deadlines<Item>((done) => {
      expired.push(done.name);
      if (done.name === 'first') deadlines.add(50, item('retry'));
    });
    deadlines.add(50, item('first'));
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['first']);
    expect(vi.getTimerCount()).toBe(1);
    expect(deadlines.timerCount).toBe(1);
    deadlines.clear();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['first']);
  });

  it('expires many items due together in batches, leaving the event loop a turn between them', () => {
    const { expired, add } = recording();
    const count = EXPIRE_BATCH * 2 + 10;
    for (let i = 0; i < count; i++) add(100, `call ${i}`);
    vi.advanceTimersByTime(100);
    // One timer callback expires one batch; the rest wait for the next turn (a 1 ms timer).
    expect(expired).toHaveLength(EXPIRE_BATCH);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(expired).toHaveLength(EXPIRE_BATCH * 2);
    vi.advanceTimersByTime(1);
    expect(expired).toHaveLength(count);
    // Still in start order.
    expect(expired.slice(0, 3)).toEqual(['call 0', 'call 1', 'call 2']);
    expect(expired.at(-1)).toBe(`call ${count - 1}`);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('clear() stops every timer without expiring anything', () => {
    const { deadlines, expired, add } = recording();
    add(10, 'x');
    add(20, 'y');
    deadlines.clear();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual([]);
  });
});
