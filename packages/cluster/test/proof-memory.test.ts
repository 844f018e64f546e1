/** One-time cluster proofs (proof-memory.ts) and the stamps that keep this node's own proofs apart (clock.ts). */
import { describe, expect, it } from 'vitest';
import { manualClock } from '@mdp/test-kit';
import { uniqueStamps } from '../src/clock.js';
import { DEFAULT_MAX_REMEMBERED_PROOFS, ProofMemory } from '../src/proof-memory.js';

const NOW = 1_800_000_000_000;
const WINDOW = 5 * 60_000;

describe('ProofMemory', () => {
  it('accepts a proof once, until its window ends', () => {
    const memory = new ProofMemory();
    expect(memory.capacity).toBe(DEFAULT_MAX_REMEMBERED_PROOFS);
    expect(memory.spend('p1', NOW + WINDOW, NOW)).toBe('fresh');
    expect(memory.seen('p1', NOW)).toBe(true);
    expect(memory.spend('p1', NOW + WINDOW, NOW + 1000)).toBe('replayed');
    expect(memory.spend('p2', NOW + WINDOW, NOW)).toBe('fresh');
    // Past its window the entry goes (the proof itself is refused by then, for its age).
    expect(memory.seen('p1', NOW + WINDOW)).toBe(false);
    expect(memory.spend('p3', NOW + 2 * WINDOW, NOW + WINDOW)).toBe('fresh');
    expect(memory.size).toBe(1);
  });

  it('holds at most its capacity, refuses while full, and makes room as entries expire', () => {
    const memory = new ProofMemory(3);
    // Clocks differ: arrival order is not expiry order. The first entry outlives the next two.
    expect(memory.spend('late', NOW + 3 * WINDOW, NOW)).toBe('fresh');
    expect(memory.spend('a', NOW + WINDOW, NOW)).toBe('fresh');
    expect(memory.spend('b', NOW + WINDOW, NOW)).toBe('fresh');
    expect(memory.spend('c', NOW + WINDOW, NOW + 1)).toBe('full');
    expect(memory.size).toBe(3);
    expect(memory.seen('c', NOW + 1)).toBe(false);
    // A replay is still told apart from a full memory.
    expect(memory.spend('a', NOW + WINDOW, NOW + 1)).toBe('replayed');
    // Once `a` and `b` expired there is room again, although the oldest entry has not expired.
    expect(memory.spend('c', NOW + 2 * WINDOW, NOW + WINDOW)).toBe('fresh');
    expect(memory.size).toBe(2);
    expect(memory.seen('late', NOW + WINDOW)).toBe(true);
  });

  it('lets go of everything on clear', () => {
    const memory = new ProofMemory(10);
    for (let i = 0; i < 10; i++) memory.spend(`p${i}`, NOW + WINDOW, NOW);
    memory.clear();
    expect(memory.size).toBe(0);
    expect(memory.spend('p0', NOW + WINDOW, NOW)).toBe('fresh');
  });

  it('refuses a capacity that is not a positive whole number', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) expect(() => new ProofMemory(capacity)).toThrow(RangeError);
  });
});

describe('uniqueStamps', () => {
  it('follows the wall clock and never repeats within one millisecond', () => {
    const clock = manualClock();
    const stamp = uniqueStamps(clock);
    const start = clock.wallNow();
    expect([stamp(), stamp(), stamp()]).toEqual([start, start + 1, start + 2]);
    clock.advance(10);
    expect(stamp()).toBe(start + 10);
  });
});
