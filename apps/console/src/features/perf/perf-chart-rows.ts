import { usToMs } from "@/lib/number-format";
import type { ChartRow } from "@/features/charts/chart-series";
import type { PerfSample } from "./perf-types";

export type LatencyPercentile = "p95" | "p99";

const PERCENTILE_KEY = { p95: "latencyP95Us", p99: "latencyP99Us" } as const;

/** One point per step: x = the percentile's latency (ms), y = inferences/s; `c` labels the point with its concurrency. */
export function throughputLatencyRows(samples: readonly PerfSample[], percentile: LatencyPercentile): ChartRow[] {
  return samples
    .filter((sample) => sample[PERCENTILE_KEY[percentile]] !== null)
    .map((sample) => ({ latencyMs: usToMs(sample[PERCENTILE_KEY[percentile]]), throughput: sample.throughput, c: `c=${sample.concurrency}` }));
}

export function byConcurrencyRows(samples: readonly PerfSample[]): ChartRow[] {
  return samples.map((sample) => ({
    concurrency: sample.concurrency,
    throughput: sample.throughput,
    p50: usToMs(sample.latencyP50Us),
    p90: usToMs(sample.latencyP90Us),
    p95: usToMs(sample.latencyP95Us),
    p99: usToMs(sample.latencyP99Us),
  }));
}

export function batchSizes(samples: readonly PerfSample[]): number[] {
  return [...new Set(samples.map((sample) => sample.batchSize))].sort((a, b) => a - b);
}

/** The best throughput each batch size reached. */
export function byBatchSizeRows(samples: readonly PerfSample[]): ChartRow[] {
  return batchSizes(samples).map((size) => ({
    category: `batch ${size}`,
    throughput: Math.max(...samples.filter((sample) => sample.batchSize === size).map((sample) => sample.throughput)),
  }));
}
