import { describe, expect, it } from 'vitest';
import { parsePart, splitParts } from '../src/wire.js';

describe('parts of a body over max_payload', () => {
  it('splits at the part size and keeps every byte in order', () => {
    const body = Uint8Array.from({ length: 2500 }, (_, i) => i % 251);
    const parts = splitParts(body, 1000);
    expect(parts.map((p) => p.length)).toEqual([1000, 1000, 500]);
    expect(Buffer.concat(parts)).toEqual(Buffer.from(body));
    expect(splitParts(new Uint8Array(0), 1000)).toHaveLength(1);
    expect(splitParts(body, 2500)).toHaveLength(1);
  });

  it('reads part headers and refuses malformed ones', () => {
    expect(parsePart('0/2')).toEqual({ index: 0, count: 2 });
    expect(parsePart('1/2')).toEqual({ index: 1, count: 2 });
    for (const bad of [undefined, '', '2/2', '0/0', '-1/2', '1/x', '1 /2', '1234567/9999999']) expect(parsePart(bad)).toBeUndefined();
  });
});
