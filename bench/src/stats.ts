/** Exact order statistics over recorded samples (no histograms, no rounding to whole ms). */

/** Nearest-rank percentile of an ascending-sorted array; `p` in 0…100. NaN for no samples. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sorted[rank - 1] as number;
}

export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const n = finite.length;
  if (n === 0) return Number.NaN;
  const mid = n >> 1;
  return n % 2 === 1 ? (finite[mid] as number) : ((finite[mid - 1] as number) + (finite[mid] as number)) / 2;
}

/** A growable Float64 buffer: latencies of one run without boxing every sample. */
export class SampleBuffer {
  private data = new Float64Array(1 << 14);
  private n = 0;

  push(value: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = value;
  }

  get length(): number {
    return this.n;
  }

  /** Sorted copy of the samples. */
  sorted(): Float64Array {
    return this.data.slice(0, this.n).sort();
  }
}

export interface LatencySummary {
  /** Milliseconds, exact nearest-rank percentiles of every completed request. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function summarize(samples: SampleBuffer): LatencySummary {
  const sorted = samples.sorted();
  return { p50: percentileSorted(sorted, 50), p99: percentileSorted(sorted, 99), max: percentileSorted(sorted, 100) };
}

/** xorshift32: a fast, seeded generator so runs pick the same targets. */
export function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}
