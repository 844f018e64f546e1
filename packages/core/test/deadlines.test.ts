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
    const c = deadlines.add(50, () => expired.push('c'));
    deadlines.remove(c);
    expect(vi.getTimerCount()).toBe(0);
    deadlines.remove(b);
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
