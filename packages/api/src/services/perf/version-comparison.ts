/**
 * How a version's perf report compares with the previous version's, for the
 * model's version list ("v3 is 18 % slower at c8 than v2"). Pure.
 *
 * The two reports are compared at one concurrency both measured: the one at
 * which the newer report reached its highest throughput (its headline), so
 * the sentence speaks of the load the new version is best at. Without a
 * common concurrency there is no comparison.
 */
export interface ComparableSample {
  concurrency: number;
  /** Inferences per second. */
  throughput: number;
  latencyP99Us: number | null;
}

export interface ComparableReport {
  version: string;
  samples: readonly ComparableSample[];
}

export interface VersionComparison {
  version: string;
  previousVersion: string;
  concurrency: number;
  throughput: number;
  previousThroughput: number;
  /** (new − old) / old × 100, rounded to 0.1; positive = faster. */
  throughputDeltaPercent: number;
  /** (new − old) / old × 100, rounded to 0.1; positive = slower tail; null when either p99 is unknown. */
  p99DeltaPercent: number | null;
  /** One sentence for people, e.g. "v3 is 18 % slower at c8 than v2 (p99 +25 %)". */
  text: string;
}

/** Changes smaller than this (in %) read as "about as fast". */
export const SAME_SPEED_PERCENT = 1;

export function compareVersionReports(previous: ComparableReport, current: ComparableReport): VersionComparison | null {
  const before = new Map(
    previous.samples.filter((sample) => sample.throughput > 0).map((sample) => [sample.concurrency, sample]),
  );
  let headline: ComparableSample | undefined;
  for (const sample of current.samples) {
    if (
      sample.throughput > 0 &&
      before.has(sample.concurrency) &&
      (headline === undefined || sample.throughput > headline.throughput)
    )
      headline = sample;
  }
  if (headline === undefined) return null;
  const old = before.get(headline.concurrency)!;
  const throughputDeltaPercent = round1(((headline.throughput - old.throughput) / old.throughput) * 100);
  const p99DeltaPercent =
    headline.latencyP99Us !== null && old.latencyP99Us !== null && old.latencyP99Us > 0
      ? round1(((headline.latencyP99Us - old.latencyP99Us) / old.latencyP99Us) * 100)
      : null;
  const speed =
    Math.abs(throughputDeltaPercent) < SAME_SPEED_PERCENT
      ? "about as fast"
      : `${Math.round(Math.abs(throughputDeltaPercent))} % ${throughputDeltaPercent > 0 ? "faster" : "slower"}`;
  const tail =
    p99DeltaPercent === null
      ? ""
      : ` (p99 ${p99DeltaPercent >= 0 ? "+" : "−"}${Math.round(Math.abs(p99DeltaPercent))} %)`;
  const than = speed === "about as fast" ? "as" : "than";
  return {
    version: current.version,
    previousVersion: previous.version,
    concurrency: headline.concurrency,
    throughput: headline.throughput,
    previousThroughput: old.throughput,
    throughputDeltaPercent,
    p99DeltaPercent,
    text: `v${current.version} is ${speed} at c${headline.concurrency} ${than} v${previous.version}${tail}`,
  };
}

/**
 * Each version's comparison with the nearest lower version that has a
 * report; `reports` holds the latest successful report per version, in any
 * order. Versions are compared as numbers when both are, else as text.
 */
export function compareVersionList(reports: readonly ComparableReport[]): Map<string, VersionComparison> {
  const sorted = [...reports].sort((a, b) => versionOrder(a.version, b.version));
  const result = new Map<string, VersionComparison>();
  for (let index = 1; index < sorted.length; index += 1) {
    const comparison = compareVersionReports(sorted[index - 1]!, sorted[index]!);
    if (comparison !== null) result.set(sorted[index]!.version, comparison);
  }
  return result;
}

function versionOrder(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
