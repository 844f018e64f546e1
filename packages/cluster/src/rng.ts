/**
 * A tiny seeded generator (mulberry32) whose whole state is one 32-bit integer, so the election
 * state can carry it and stay a pure value: the same seed replays the same time-outs.
 */

/** Next value in [0, 1) and the state that follows. */
export function nextRandom(seed: number): [value: number, seed: number] {
  const next = (seed + 0x6d2b79f5) | 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [((t ^ (t >>> 14)) >>> 0) / 4294967296, next];
}

/** A uniform value in [min, max] and the state that follows. */
export function randomBetween(seed: number, min: number, max: number): [value: number, seed: number] {
  const [r, next] = nextRandom(seed);
  return [min + r * Math.max(0, max - min), next];
}

/** A `() => number` in [0, 1) over a seed, for the parts that are not pure values (tests, jitter). */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    const [value, next] = nextRandom(state);
    state = next;
    return value;
  };
}

/** A 32-bit seed from any `() => number` in [0, 1). */
export function seedFrom(random: () => number): number {
  return Math.floor(random() * 4294967296) | 0;
}
