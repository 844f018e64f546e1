/**
 * Invocation counts and latencies, kept in flat arrays on the call path and read by /metrics on
 * scrape. A prom-client counter and histogram hash their labels and allocate on every update
 * (about a microsecond, 1–3 % of a skill read); an array slot costs a few nanoseconds.
 *
 *   call ends ─▶ record(): counts[route × outcome]++, buckets[route × bucket]++, sums[route] += s
 *   scrape    ─▶ the metrics read the arrays (metrics.ts)
 */
import type { CallRecord, InvokeRoute } from '@mdp/core';
import { ERROR_CODES } from '@mdp/protocol';

export const CALL_ROUTES: readonly InvokeRoute[] = ['skill', 'host', 'mcp', 'cluster', 'bus'];

/**
 * Outcome labels: `ok`, the error codes of the protocol (`ERROR_CODES`), and `other` for codes a
 * client made up (one label each would let clients grow the series without bound).
 */
export const CALL_OUTCOMES = ['ok', ...ERROR_CODES, 'other'] as const;

/** Upper bounds of the latency histogram, seconds: 1 ms to the longest invocation time-out worth telling apart. */
export const DURATION_BUCKETS_S: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const OTHER = CALL_OUTCOMES.length - 1;
const OUTCOME_INDEX = new Map<string, number>(CALL_OUTCOMES.map((outcome, i) => [outcome, i]));
/** Slots per route in `buckets`: one per bound, then +Inf. */
const SLOTS = DURATION_BUCKETS_S.length + 1;

function routeIndex(route: InvokeRoute): number {
  switch (route) {
    case 'skill':
      return 0;
    case 'host':
      return 1;
    case 'mcp':
      return 2;
    case 'cluster':
      return 3;
    case 'bus':
      return 4;
  }
}

export class CallStats {
  /** Calls by route and outcome: `counts[route * CALL_OUTCOMES.length + outcome]`. */
  readonly counts = new Float64Array(CALL_ROUTES.length * CALL_OUTCOMES.length);
  /** Calls by route and latency bucket, not cumulative: `buckets[route * (bounds + 1) + bucket]`, the last slot +Inf. */
  readonly buckets = new Float64Array(CALL_ROUTES.length * SLOTS);
  /** Seconds spent by route. */
  readonly sums = new Float64Array(CALL_ROUTES.length);

  /** Count one call that ended. */
  record(record: CallRecord): void {
    const route = routeIndex(record.route);
    const outcome = record.outcome.ok ? 0 : (OUTCOME_INDEX.get(record.outcome.error.code) ?? OTHER);
    const cell = route * CALL_OUTCOMES.length + outcome;
    this.counts[cell] = (this.counts[cell] as number) + 1;
    const seconds = record.durationMs / 1000;
    let bucket = 0;
    while (bucket < DURATION_BUCKETS_S.length && seconds > (DURATION_BUCKETS_S[bucket] as number)) bucket++;
    const slot = route * SLOTS + bucket;
    this.buckets[slot] = (this.buckets[slot] as number) + 1;
    this.sums[route] = (this.sums[route] as number) + seconds;
  }

  /** Calls of `route` that ended with `outcome`. */
  count(route: InvokeRoute, outcome: (typeof CALL_OUTCOMES)[number]): number {
    return this.counts[routeIndex(route) * CALL_OUTCOMES.length + (OUTCOME_INDEX.get(outcome) as number)] as number;
  }

  /** Cumulative bucket counts of `route` (one per bound, then +Inf = all calls) and their sum, seconds. */
  histogram(route: InvokeRoute): { readonly cumulative: number[]; readonly sum: number } {
    const start = routeIndex(route) * SLOTS;
    const cumulative: number[] = [];
    let total = 0;
    for (let i = 0; i < SLOTS; i++) cumulative.push((total += this.buckets[start + i] as number));
    return { cumulative, sum: this.sums[routeIndex(route)] as number };
  }
}
