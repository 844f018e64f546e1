import { describe, expect, it } from 'vitest';
import { MAX_WAIT_MS, resolveWaitMs } from '../src/index.js';

describe('resolveWaitMs', () => {
  it('uses a valid value as given', () => {
    expect(resolveWaitMs('1500', 25_000)).toBe(1500);
    expect(resolveWaitMs('60000', 25_000)).toBe(60_000);
  });

  it('answers at once for 0', () => {
    expect(resolveWaitMs('0', 25_000)).toBe(0);
  });

  it('clamps values above 60000', () => {
    expect(MAX_WAIT_MS).toBe(60_000);
    expect(resolveWaitMs('60001', 25_000)).toBe(60_000);
    expect(resolveWaitMs('999999999', 25_000)).toBe(60_000);
    expect(resolveWaitMs('Infinity', 25_000)).toBe(60_000);
  });

  it('falls back to the configured time-out when missing, empty, non-numeric or negative', () => {
    expect(resolveWaitMs(undefined, 25_000)).toBe(25_000);
    expect(resolveWaitMs('', 25_000)).toBe(25_000);
    expect(resolveWaitMs('  ', 25_000)).toBe(25_000);
    expect(resolveWaitMs('soon', 7)).toBe(7);
    expect(resolveWaitMs('12abc', 7)).toBe(7);
    expect(resolveWaitMs('NaN', 7)).toBe(7);
    expect(resolveWaitMs('-1', 7)).toBe(7);
    expect(resolveWaitMs('-Infinity', 7)).toBe(7);
  });

  it('clamps a configured fallback above 60000 the same way', () => {
    expect(resolveWaitMs(undefined, 3_000_000_000)).toBe(60_000);
    expect(resolveWaitMs('soon', 120_000)).toBe(60_000);
  });

  it('rounds fractions down', () => {
    expect(resolveWaitMs('10.9', 25_000)).toBe(10);
  });
});
