import { describe, expect, it } from 'vitest';
import { randomUuid } from '../src/uuid.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUuid', () => {
  it('makes version 4, RFC 4122 variant ids, all different, across many refills of its pool', () => {
    const ids = Array.from({ length: 1000 }, () => randomUuid());
    for (const id of ids) expect(id).toMatch(V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('returns strings that later calls do not change (the scratch buffer is reused)', () => {
    const first = randomUuid();
    const copy = `${first}`;
    for (let i = 0; i < 300; i++) randomUuid();
    expect(first).toBe(copy);
  });

  it('uses every hex digit in every free position (the bytes are random, not a fixed pattern)', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let n = 0; n < 2000; n++) {
      const id = randomUuid();
      for (let i = 0; i < 36; i++) seen[i]!.add(id[i]!);
    }
    seen.forEach((digits, i) => {
      if ([8, 13, 18, 23].includes(i)) expect([...digits]).toEqual(['-']);
      else if (i === 14) expect([...digits]).toEqual(['4']);
      else if (i === 19) expect([...digits].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(digits.size).toBe(16);
    });
  });
});
