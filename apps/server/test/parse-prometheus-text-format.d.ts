/** Types for `parse-prometheus-text-format` (it ships none): the prom2json shape it returns. */
declare module 'parse-prometheus-text-format' {
  export interface PromSample {
    readonly labels?: Record<string, string>;
    /** Counters, gauges, untyped. */
    readonly value?: string;
    /** Histograms: cumulative counts by upper bound, and their count and sum. */
    readonly buckets?: Record<string, string>;
    readonly count?: string;
    readonly sum?: string;
  }
  export interface PromFamily {
    readonly name: string;
    readonly help: string;
    readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    readonly metrics: readonly PromSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PromFamily[];
}
