import { describe, expect, it } from 'vitest';
import { mapLimited } from '../src/map-limited.js';

/** A call that resolves when the test says so, recording how many are in flight. */
function gate() {
  const waiting: Array<() => void> = [];
  let inFlight = 0;
  let peak = 0;
  const fn = async (n: number): Promise<number> => {
    peak = Math.max(peak, ++inFlight);
    await new Promise<void>((resolve) => waiting.push(resolve));
    inFlight--;
    return n * 10;
  };
  const releaseAll = async (): Promise<void> => {
    while (waiting.length > 0) {
      waiting.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { fn, releaseAll, peak: () => peak, waiting };
}

describe('mapLimited', () => {
  it('keeps at most `limit` calls in flight and the results in input order', async () => {
    const { fn, releaseAll, peak, waiting } = gate();
    const done = mapLimited([1, 2, 3, 4, 5, 6, 7], 3, fn);
    await new Promise((r) => setImmediate(r));
    expect(waiting).toHaveLength(3);
    await releaseAll();
    expect(await done).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(peak()).toBe(3);
  });

  it('runs one at a time for a limit below 1 or not a number', async () => {
    for (const limit of [0, -4, Number.NaN, 0.5]) {
      const { fn, releaseAll, peak } = gate();
      const done = mapLimited([1, 2, 3], limit, fn);
      await releaseAll();
      expect(await done).toEqual([10, 20, 30]);
      expect(peak()).toBe(1);
    }
  });

  it('answers an empty list at once', async () => {
    expect(await mapLimited([], 4, async () => 1)).toEqual([]);
  });
});
