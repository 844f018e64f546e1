/** The pure parts of paged listings (listing.ts): position keys and walking every page. */
import { describe, expect, it } from 'vitest';
import { MdpError, collectPages, positionKey } from '../src/index.js';
import { KEY_HEAD, mergedJsonSize } from '../src/listing.js';

describe('positionKey', () => {
  it('is the text itself up to KEY_HEAD characters, else bounded', () => {
    expect(positionKey('abc')).toBe('abc');
    const long = 'x'.repeat(KEY_HEAD + 1);
    expect(positionKey(long).length).toBe(KEY_HEAD + 1 + 64);
    expect(positionKey('y'.repeat(1_000_000)).length).toBe(KEY_HEAD + 1 + 64);
  });

  it('keeps the order of short texts and tells long ones with one head apart', () => {
    const head = 'h'.repeat(KEY_HEAD);
    const keys = [head, `${head}a`, `${head}b`].map(positionKey);
    expect(new Set(keys).size).toBe(3);
    // The text that is the head alone sorts before the long ones that share it.
    expect((keys[0] as string) < (keys[1] as string) && (keys[0] as string) < (keys[2] as string)).toBe(true);
    expect(positionKey('a') < positionKey('b')).toBe(true);
  });
});

describe('collectPages', () => {
  it('collects every page until there is no nextCursor', async () => {
    const pages: Record<string, { items: number[]; nextCursor?: string }> = {
      start: { items: [1, 2], nextCursor: 'b' },
      b: { items: [], nextCursor: 'c' },
      c: { items: [3] },
    };
    const asked: Array<string | undefined> = [];
    const all = await collectPages(async (cursor) => {
      asked.push(cursor);
      return pages[cursor ?? 'start'] as { items: number[]; nextCursor?: string };
    });
    expect(all).toEqual([1, 2, 3]);
    expect(asked).toEqual([undefined, 'b', 'c']);
  });

  it('ends with an error when a page hands back the cursor it was asked for', async () => {
    await expect(collectPages(async () => ({ items: [1], nextCursor: 'same' }))).rejects.toBeInstanceOf(MdpError);
  });
});

describe('mergedJsonSize', () => {
  it.each([
    [
      { id: 'a', paths: [] },
      { status: 'online', n: 1 },
    ],
    [{}, { x: 'é✓😀' }],
    [{ description: 'ü'.repeat(100), '7': 1 }, {}],
    [{}, {}],
    [{ a: undefined, b: 'x' }, { c: [1, 'two'] }],
  ])('is the size of the merged object: %j + %j', (base, extra) => {
    const size = mergedJsonSize(base, extra, Buffer.byteLength(JSON.stringify(extra)));
    expect(size).toBe(Buffer.byteLength(JSON.stringify({ ...base, ...extra })));
  });

  it('declines when the two share a key', () => {
    expect(mergedJsonSize({ status: 'mine' }, { status: 'online' }, 20)).toBeUndefined();
  });
});
