import { describe, expect, it } from 'vitest';
import { DEEPEST_MEASURED, JsonMeter } from '../src/json-size.js';

/** What JSON.stringify writes for `value`: its length and its UTF-8 bytes. */
function written(value: unknown): { chars: number; bytes: number } {
  const json = JSON.stringify(value) ?? 'null';
  return { chars: json.length, bytes: Buffer.byteLength(json) };
}

function measured(value: unknown): { chars: number; bytes: number } {
  const meter = new JsonMeter();
  meter.add(value);
  return { chars: meter.chars, bytes: meter.bytes };
}

describe('JsonMeter', () => {
  it('measures what JSON.stringify writes, in characters and UTF-8 bytes', () => {
    const values: unknown[] = [
      null,
      true,
      false,
      0,
      -0,
      7,
      -12.5,
      0.1,
      1e21,
      1e-7,
      5e-324,
      Number.MAX_VALUE,
      Number.POSITIVE_INFINITY,
      '',
      'plain ascii',
      'quote " and backslash \\ and slash /',
      'controls \n\t\r\b\f \u0000 \u001f \u007f',
      'Latin-1 é ü ß and BMP € 漢字 and astral 😀 𝄞',
      'lone surrogates \ud800 and \udfff and reversed \udc00\ud800',
      'line separators \u2028 \u2029',
      [],
      {},
      [1, 'two', [3], { four: 4 }],
      [undefined, () => 1, Symbol('s')],
      { kept: 1, gone: undefined, fn: () => 1, sym: Symbol('s'), 'key "quoted" é': { nested: [[], {}] } },
      { type: 'object', properties: { a: { type: 'string', description: 'A 漢字 😀' } }, required: ['a'] },
    ];
    for (const value of values) expect(measured(value), JSON.stringify(value) ?? String(value)).toEqual(written(value));
  });

  it('measures random JSON exactly', () => {
    let seed = 42;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = ['a', 'Z', ' ', '"', '\\', '\n', '\u0001', 'é', '€', '😀', '\ud800', '\udc00'];
    const text = (): string => Array.from({ length: Math.floor(random() * 8) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      const pick = random();
      if (depth > 3 || pick < 0.3) return text();
      if (pick < 0.4) return Math.round(random() * 1e6) / 100;
      if (pick < 0.45) return random() < 0.5 ? null : random() < 0.5;
      if (pick < 0.7) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [text(), value(depth + 1)]));
    };
    for (let i = 0; i < 500; i++) {
      const sample = value(0);
      expect(measured(sample)).toEqual(written(sample));
    }
  });

  it('stops descending once past a stop, with figures over it', () => {
    const big = Array.from({ length: 10_000 }, (_, i) => ({ i }));
    const whole = written(big).bytes;
    const meter = new JsonMeter(Infinity, 100);
    meter.add(big);
    expect(meter.stopped).toBe(true);
    expect(meter.bytes).toBeGreaterThan(100);
    // It counted the array's brackets and commas, and looked at none of its elements.
    expect(meter.bytes).toBe(10_001);
    expect(whole).toBeGreaterThan(80_000);
    const inObject = new JsonMeter(50);
    inObject.add({ first: 'x'.repeat(60), second: big });
    expect(inObject.stopped).toBe(true);
    expect(inObject.chars).toBeLessThan(100);
  });

  it('never overflows the stack: what lies deeper than it looks counts as empty, and a cycle ends', () => {
    const deep = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;
    const meter = new JsonMeter();
    meter.add(deep);
    // Each level it looks into is `[` … `]`; the one below them all counts as `[]`.
    expect(meter.chars).toBe(2 * DEEPEST_MEASURED + 2);
    const cycle: Record<string, unknown> = { name: 'loop' };
    cycle.self = cycle;
    const looping = new JsonMeter();
    looping.add(cycle);
    expect(looping.chars).toBeGreaterThan(DEEPEST_MEASURED);
  });
});
