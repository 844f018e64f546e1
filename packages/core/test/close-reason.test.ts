/** closeReason: a close frame's reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5). */
import { describe, expect, it } from 'vitest';
import { closeReason } from '../src/index.js';

const bytes = (text: string): number => Buffer.byteLength(text);
/** True when the string survives a UTF-8 round trip, i.e. holds no lone surrogate. */
const wellFormed = (text: string): boolean => Buffer.from(text, 'utf8').toString('utf8') === text;

describe('closeReason', () => {
  it('returns reasons up to 123 bytes unchanged', () => {
    expect(closeReason('')).toBe('');
    expect(closeReason('Frame is not valid JSON')).toBe('Frame is not valid JSON');
    const ascii = 'x'.repeat(123);
    expect(closeReason(ascii)).toBe(ascii);
    const multiByte = `${'é'.repeat(61)}a`; // 61 × 2 + 1 = 123 bytes in 62 characters
    expect(bytes(multiByte)).toBe(123);
    expect(closeReason(multiByte)).toBe(multiByte);
  });

  it('cuts longer reasons to 120 bytes plus "..."', () => {
    expect(closeReason('x'.repeat(124))).toBe(`${'x'.repeat(120)}...`);
    expect(closeReason('é'.repeat(62))).toBe(`${'é'.repeat(60)}...`);
    expect(closeReason('€'.repeat(50))).toBe(`${'€'.repeat(40)}...`);
  });

  it('never splits a multi-byte character', () => {
    // 'ab' + 39 × '€' is 119 bytes; a 40th euro sign would need 122.
    expect(closeReason(`ab${'€'.repeat(50)}`)).toBe(`ab${'€'.repeat(39)}...`);
    expect(closeReason(`a${'é'.repeat(70)}`)).toBe(`a${'é'.repeat(59)}...`);
  });

  it('never leaves half of a surrogate pair, whatever the alignment', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', 'é', '€']) {
      const input = `${prefix}${'😀'.repeat(60)}`;
      const reason = closeReason(input);
      expect(bytes(reason), prefix).toBeLessThanOrEqual(123);
      expect(wellFormed(reason), prefix).toBe(true);
      expect(reason.endsWith('...'), prefix).toBe(true);
      const kept = reason.slice(0, -3);
      expect(input.startsWith(kept), prefix).toBe(true);
      // The longest prefix that fits: one more code point would pass 120 bytes.
      const nextCodePoint = String.fromCodePoint(input.codePointAt(kept.length) as number);
      expect(bytes(kept + nextCodePoint), prefix).toBeGreaterThan(120);
    }
  });
});
