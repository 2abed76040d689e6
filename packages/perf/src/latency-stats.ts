/**
 * Client-side latency recording and percentiles, in microseconds.
 *
 * Every latency is kept (a growable Float64Array, 8 bytes each) and the
 * percentiles are exact, computed by sorting once per summary. That is what
 * perf_analyzer does, and it costs little here: a Node client tops out at
 * tens of thousands of requests per second, so a 5 s window holds well under
 * a million values (< 8 MB). A histogram (hdr-histogram-js) would bound the
 * memory but trade exactness for a configured precision and add a
 * dependency for no gain at these volumes.
 */

export interface LatencySummary {
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  avg: number;
  min: number;
  max: number;
}

const DEFAULT_CAPACITY = 4096;

export class LatencyRecorder {
  private values: Float64Array;
  private size = 0;
  private sum = 0;

  constructor(initialCapacity = DEFAULT_CAPACITY) {
    this.values = new Float64Array(Math.max(1, initialCapacity));
  }

  /** Records one latency (µs). Amortised O(1): the buffer doubles when full. */
  record(latencyUs: number): void {
    if (this.size === this.values.length) this.grow(this.size * 2);
    this.values[this.size] = latencyUs;
    this.size += 1;
    this.sum += latencyUs;
  }

  get count(): number {
    return this.size;
  }

  /** Mean latency (µs); 0 when nothing was recorded. */
  mean(): number {
    return this.size === 0 ? 0 : this.sum / this.size;
  }

  /** Appends every latency of `other` (merging measurement windows). */
  addAll(other: LatencyRecorder): void {
    const needed = this.size + other.size;
    if (needed > this.values.length) this.grow(Math.max(needed, this.values.length * 2));
    this.values.set(other.values.subarray(0, other.size), this.size);
    this.size = needed;
    this.sum += other.sum;
  }

  /** The recorded values (a view; do not keep it across record calls). */
  view(): Float64Array {
    return this.values.subarray(0, this.size);
  }

  summarize(): LatencySummary {
    return summarizeLatencies(this.view());
  }

  private grow(capacity: number): void {
    const next = new Float64Array(capacity);
    next.set(this.values.subarray(0, this.size));
    this.values = next;
  }
}

/**
 * Percentiles by nearest rank (the smallest value with at least p% of the
 * values at or below it) plus avg/min/max; all zero when there are none.
 * Values are rounded to 0.1 µs. The input is not modified.
 */
export function summarizeLatencies(values: Float64Array | readonly number[]): LatencySummary {
  if (values.length === 0) return { p50: 0, p90: 0, p95: 0, p99: 0, avg: 0, min: 0, max: 0 };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  return {
    p50: round1(percentileOfSorted(sorted, 50)),
    p90: round1(percentileOfSorted(sorted, 90)),
    p95: round1(percentileOfSorted(sorted, 95)),
    p99: round1(percentileOfSorted(sorted, 99)),
    avg: round1(sum / sorted.length),
    min: round1(sorted[0]!),
    max: round1(sorted[sorted.length - 1]!),
  };
}

/** Nearest-rank percentile of ascending values (p in (0, 100]). */
export function percentileOfSorted(sorted: Float64Array | readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  const index = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[index]!;
}

export function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
