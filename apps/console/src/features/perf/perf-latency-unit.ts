/**
 * A perf report's latency unit: the console's one latency unit, milliseconds, for its charts, its table and its
 * summaries, as on every other page (number-format.ts formatLatencyValue). Reports used to pick µs, ms or s by their
 * largest latency, so a p99 read "412" (µs) on the report and "0.412 ms" on the model's page (issue 27 item 10).
 * The API measures in µs.
 */
export interface PerfLatencyUnit {
  /** For labels such as "p99 (ms)". */
  symbol: "ms";
  /** In words, for captions. */
  name: "milliseconds";
  /** Microseconds per unit. */
  us: number;
}

export const PERF_LATENCY_UNIT: PerfLatencyUnit = { symbol: "ms", name: "milliseconds", us: 1000 };

/** A latency in µs (or null) in the report's unit. */
export function inUnit(valueUs: number | null | undefined, unit: PerfLatencyUnit = PERF_LATENCY_UNIT): number | null {
  return valueUs === null || valueUs === undefined ? null : valueUs / unit.us;
}
