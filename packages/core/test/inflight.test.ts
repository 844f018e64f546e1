import { describe, expect, it } from 'vitest';
import { CHUNK_COST, InflightBudget, createLogger, inflightCharge, type Clock, type InflightHolder, type LogFields, type Logger } from '../src/index.js';

/** A holder that records its evictions; `onEvict` runs inside the eviction (what a real one does on close). */
class Holder implements InflightHolder {
  inflightCharge = 0;
  inflightPrev: InflightHolder | undefined = undefined;
  inflightNext: InflightHolder | undefined = undefined;
  inflightListed = false;
  readonly evictions: string[] = [];
  onEvict: (() => void) | undefined;
  constructor(readonly name: string) {}
  evictInflight(reason: string): void {
    this.evictions.push(reason);
    this.onEvict?.();
  }
}

function clockAt(): Clock & { at: number } {
  return {
    at: 0,
    now() {
      return this.at;
    },
    wallNow: () => 0,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
  };
}

/** A logger whose lines (parsed) the test reads. */
function recordingLogger(): { lines: Array<{ level: string; event: string } & LogFields>; logger: Logger } {
  const lines: Array<{ level: string; event: string } & LogFields> = [];
  return { lines, logger: createLogger({ level: 'debug', write: (line) => void lines.push(JSON.parse(line)) }) };
}

function budgetWith(limit: number, logger?: Logger, clock?: Clock): InflightBudget {
  return new InflightBudget(limit, { ...(logger ? { logger } : {}), ...(clock ? { clock } : {}) });
}

const REASON = 'Server is receiving too much at once (maxInflightBytes 100); try again later';

describe('InflightBudget', () => {
  it('counts what each holder holds now, not what it was given last', () => {
    const budget = budgetWith(100);
    const a = new Holder('a');
    const b = new Holder('b');
    expect(budget.hold(a, 10)).toBe(true);
    expect(budget.hold(a, 30)).toBe(true);
    expect(budget.hold(b, 20)).toBe(true);
    expect(budget.total).toBe(50);
    expect(a.inflightCharge).toBe(30);
    budget.hold(a, 0);
    expect(budget.total).toBe(20);
    expect(budget.holders).toBe(1);
    budget.release(b);
    budget.release(b);
    expect(budget.total).toBe(0);
    expect(budget.holders).toBe(0);
  });

  it('takes up to the limit exactly', () => {
    const budget = budgetWith(100);
    const a = new Holder('a');
    expect(budget.hold(a, 100)).toBe(true);
    expect(a.evictions).toEqual([]);
  });

  it('evicts the holder whose message began first, not the largest nor the one receiving', () => {
    const budget = budgetWith(100);
    const [old, big, young] = [new Holder('old'), new Holder('big'), new Holder('young')];
    budget.hold(old, 10);
    budget.hold(big, 60);
    budget.hold(young, 20);
    // `old` grows later: it keeps its place (its message began first).
    budget.hold(old, 15);
    expect(budget.hold(young, 30)).toBe(true);
    expect(old.evictions).toEqual([REASON]);
    expect(big.evictions).toEqual([]);
    expect(young.evictions).toEqual([]);
    expect(budget.total).toBe(90);
    expect(old.inflightCharge).toBe(0);
    expect(old.inflightListed).toBe(false);
  });

  it('evicts as many as it takes, oldest first, and the one receiving when it is the oldest', () => {
    const budget = budgetWith(100);
    const holders = Array.from({ length: 5 }, (_, i) => new Holder(`h${i}`));
    for (const h of holders) budget.hold(h, 10);
    expect(budget.hold(holders[3] as Holder, 75)).toBe(true);
    // 10 × 4 + 75 = 115: h0 and h1 go (95 left).
    expect(holders.map((h) => h.evictions.length)).toEqual([1, 1, 0, 0, 0]);
    expect(budget.total).toBe(95);
    // h2 is the oldest now; it grows past the limit and is evicted itself.
    expect(budget.hold(holders[2] as Holder, 20)).toBe(false);
    expect(holders[2]?.evictions).toEqual([REASON]);
    expect(budget.total).toBe(85);
  });

  it('a holder whose message ended and began again goes to the back', () => {
    const budget = budgetWith(100);
    const [a, b] = [new Holder('a'), new Holder('b')];
    budget.hold(a, 40);
    budget.hold(b, 40);
    budget.hold(a, 0);
    budget.hold(a, 40);
    budget.hold(b, 61);
    expect(b.evictions).toEqual([REASON]);
    expect(a.evictions).toEqual([]);
  });

  it('a holder released while it is evicted (its socket closes at once) is not counted twice', () => {
    const budget = budgetWith(100);
    const [a, b] = [new Holder('a'), new Holder('b')];
    a.onEvict = () => budget.release(a);
    budget.hold(a, 60);
    budget.hold(b, 60);
    expect(a.evictions).toHaveLength(1);
    expect(budget.total).toBe(60);
    expect(budget.holders).toBe(1);
  });

  it('a holder that throws while evicted is logged, and the others still go', () => {
    const { lines, logger } = recordingLogger();
    const budget = budgetWith(100, logger);
    const [a, b, c] = [new Holder('a'), new Holder('b'), new Holder('c')];
    a.onEvict = () => {
      throw new Error('boom');
    };
    budget.hold(a, 50);
    budget.hold(b, 50);
    budget.hold(c, 60);
    expect([a, b, c].map((h) => h.evictions.length)).toEqual([1, 1, 0]);
    expect(lines.some((l) => l.event === 'inflight.evict_failed')).toBe(true);
  });

  it('logs inflight.full at most once a second, with what was evicted since', () => {
    const { lines, logger } = recordingLogger();
    const clock = clockAt();
    const budget = budgetWith(100, logger, clock);
    const flood = (n: number): void => {
      for (let i = 0; i < n; i++) budget.hold(new Holder(`x${i}`), 60);
    };
    flood(4); // the 2nd, 3rd and 4th each evict one; the first eviction is logged
    expect(lines.filter((l) => l.event === 'inflight.full')).toHaveLength(1);
    clock.at = 999;
    flood(3);
    expect(lines.filter((l) => l.event === 'inflight.full')).toHaveLength(1);
    clock.at = 1000;
    flood(1);
    const full = lines.filter((l) => l.event === 'inflight.full');
    expect(full).toHaveLength(2);
    expect(full[0]).toMatchObject({ level: 'warn', limit: 100, evicted: 1 });
    expect(full[1]).toMatchObject({ evicted: 6 });
  });

  it('names the limit in its reason, short enough for a close frame', () => {
    const reason = new InflightBudget(64 * 1024 * 1024).reason;
    expect(reason).toBe('Server is receiving too much at once (maxInflightBytes 67108864); try again later');
    expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(123);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses %s as a limit', (value) => {
    expect(() => new InflightBudget(value)).toThrow(RangeError);
  });

  it('charges each chunk held beyond its bytes', () => {
    expect(inflightCharge(1000, 0)).toBe(1000);
    expect(inflightCharge(1000, 3)).toBe(1000 + 3 * CHUNK_COST);
  });
});
