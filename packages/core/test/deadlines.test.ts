import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines } from '../src/deadlines.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('Deadlines', () => {
  it('expires calls of one time-out in start order, with one timer', () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    deadlines.add(100, () => expired.push('a'));
    vi.advanceTimersByTime(30);
    deadlines.add(100, () => expired.push('b'));
    deadlines.add(100, () => expired.push('c'));
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

  it('never expires a removed deadline and drops the timer when none is left', () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    const a = deadlines.add(100, () => expired.push('a'));
    const b = deadlines.add(100, () => expired.push('b'));
    deadlines.remove(a);
    deadlines.remove(a);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['b']);
    expect(vi.getTimerCount()).toBe(0);
    const c = deadlines.add(50, () => expired.push('c'));
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
    const deadlines = new Deadlines();
    const expired: number[] = [];
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    for (let i = 0; i < 50; i++) {
      const d = deadlines.add(1000, () => expired.push(i));
      vi.advanceTimersByTime(5);
      deadlines.remove(d);
    }
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(1);
    // A call started after the others settled still expires on time, through a re-armed timer.
    vi.advanceTimersByTime(100);
    deadlines.add(1000, () => expired.push(99));
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([99]);
    expect(vi.getTimerCount()).toBe(0);
    setTimeoutSpy.mockRestore();
  });

  it('keeps separate queues per time-out value', () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    deadlines.add(1000, () => expired.push('slow'));
    deadlines.add(10, () => expired.push('fast'));
    expect(deadlines.timerCount).toBe(2);
    vi.advanceTimersByTime(10);
    expect(expired).toEqual(['fast']);
    vi.advanceTimersByTime(990);
    expect(expired).toEqual(['fast', 'slow']);
  });

  it('removing the head re-arms for the next one without expiring it early', () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    const head = deadlines.add(100, () => expired.push('head'));
    vi.advanceTimersByTime(50);
    deadlines.add(100, () => expired.push('next'));
    deadlines.remove(head);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['next']);
  });

  it('clear() stops every timer without expiring anything', () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    deadlines.add(10, () => expired.push('x'));
    deadlines.add(20, () => expired.push('y'));
    deadlines.clear();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual([]);
  });
});
