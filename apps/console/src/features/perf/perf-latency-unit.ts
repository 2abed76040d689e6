/**
 * One latency unit for a whole perf report (its charts, its table, its
 * summaries), picked by the largest latency it shows: µs while that is under
 * 1 ms, ms under 1 s, s beyond. The API measures in µs.
 */
export interface PerfLatencyUnit {
  /** "µs", "ms" or "s", for labels such as "p99 (ms)". */
  symbol: "µs" | "ms" | "s";
  /** In words, for captions. */
  name: "microseconds" | "milliseconds" | "seconds";
  /** Microseconds per unit. */
  us: number;
}

const UNITS: readonly PerfLatencyUnit[] = [
  { symbol: "s", name: "seconds", us: 1_000_000 },
  { symbol: "ms", name: "milliseconds", us: 1000 },
  { symbol: "µs", name: "microseconds", us: 1 },
];

type LatencyFields =
  | "latencyP50Us"
  | "latencyP90Us"
  | "latencyP95Us"
  | "latencyP99Us"
  | "latencyAvgUs"
  | "queueUs"
  | "computeUs";

export function perfLatencyUnit(
  samples: ReadonlyArray<Partial<Record<LatencyFields, number | null>>>,
): PerfLatencyUnit {
  const largest = Math.max(
    0,
    ...samples.flatMap((sample) =>
      Object.values(sample).filter((value): value is number => typeof value === "number" && Number.isFinite(value)),
    ),
  );
  return UNITS.find((unit) => largest >= unit.us) ?? UNITS[UNITS.length - 1]!;
}

/** A latency in µs (or null) in the report's unit. */
export function inUnit(valueUs: number | null | undefined, unit: PerfLatencyUnit): number | null {
  return valueUs === null || valueUs === undefined ? null : valueUs / unit.us;
}
