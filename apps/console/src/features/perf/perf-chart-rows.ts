import type { ChartRow } from "@/features/charts/chart-series";
import { inUnit, type PerfLatencyUnit } from "./perf-latency-unit";
import type { PerfSample } from "./perf-types";

export type LatencyPercentile = "p95" | "p99";

const PERCENTILE_KEY = { p95: "latencyP95Us", p99: "latencyP99Us" } as const;

/** One point per step: x = the percentile's latency (in the report's unit), y = inferences/s; `c` labels the point with its concurrency. */
export function throughputLatencyRows(
  samples: readonly PerfSample[],
  percentile: LatencyPercentile,
  unit: PerfLatencyUnit,
): ChartRow[] {
  return samples
    .filter((sample) => sample[PERCENTILE_KEY[percentile]] !== null)
    .map((sample) => ({
      latency: inUnit(sample[PERCENTILE_KEY[percentile]], unit),
      throughput: sample.throughput,
      c: `c=${sample.concurrency}`,
    }));
}

export function byConcurrencyRows(samples: readonly PerfSample[], unit: PerfLatencyUnit): ChartRow[] {
  return samples.map((sample) => ({
    concurrency: sample.concurrency,
    throughput: sample.throughput,
    p50: inUnit(sample.latencyP50Us, unit),
    p90: inUnit(sample.latencyP90Us, unit),
    p95: inUnit(sample.latencyP95Us, unit),
    p99: inUnit(sample.latencyP99Us, unit),
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
