import type { OnlineLatency } from "@operon/protocol/online-latency";

/**
 * The latest latencies of one model version's online requests (neither a
 * batch job's nor tagged perf traffic), each with the time it finished, so
 * a batch job can ask "what p99 did online clients see over the last N ms"
 * and back off before they notice it (issue 24). Recording is two array
 * writes, no allocation; the quantiles are computed when asked (a job asks
 * about once a second), from at most `capacity` latest requests.
 */
export class OnlineLatencyWindow {
  private readonly finishedAtMs: Float64Array;
  private readonly latencyUs: Float64Array;
  private written = 0;

  constructor(private readonly capacity = 4096) {
    this.finishedAtMs = new Float64Array(capacity);
    this.latencyUs = new Float64Array(capacity);
  }

  record(requestNs: number, nowMs = performance.now()): void {
    const slot = this.written % this.capacity;
    this.finishedAtMs[slot] = nowMs;
    this.latencyUs[slot] = requestNs / 1000;
    this.written += 1;
  }

  /** p50 and p99 (nearest rank) of the requests that finished within the last `windowMs`. */
  quantiles(windowMs: number, nowMs = performance.now()): Omit<OnlineLatency, "model_name" | "model_version"> {
    const since = nowMs - windowMs;
    const values: number[] = [];
    for (let i = this.written - 1; i >= Math.max(0, this.written - this.capacity); i -= 1) {
      const slot = i % this.capacity;
      if (this.finishedAtMs[slot]! < since) break;
      values.push(this.latencyUs[slot]!);
    }
    values.sort((a, b) => a - b);
    return {
      window_ms: windowMs,
      count: values.length,
      p50_us: nearestRank(values, 0.5),
      p99_us: nearestRank(values, 0.99),
    };
  }
}

function nearestRank(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
