import type { PerfReportDetail } from "./perf-types";

/**
 * A perf report as files to take away: the whole report (facts, summary and
 * samples) as JSON, and the samples as CSV, one row per concurrency, with the
 * columns of Triton's perf table (latencies in µs, as stored).
 */
export const PERF_CSV_COLUMNS = [
  "concurrency",
  "batch_size",
  "throughput_infer_per_sec",
  "latency_avg_us",
  "latency_p50_us",
  "latency_p90_us",
  "latency_p95_us",
  "latency_p99_us",
  "server_queue_us",
  "server_compute_us",
  "errors",
] as const;

export function perfReportCsv(report: PerfReportDetail): string {
  const rows = report.samples.map((sample) =>
    [
      sample.concurrency,
      sample.batchSize,
      sample.throughput,
      sample.latencyAvgUs,
      sample.latencyP50Us,
      sample.latencyP90Us,
      sample.latencyP95Us,
      sample.latencyP99Us,
      sample.queueUs,
      sample.computeUs,
      sample.errorCount,
    ]
      .map((value) => (value === null ? "" : String(value)))
      .join(","),
  );
  return `${[PERF_CSV_COLUMNS.join(","), ...rows].join("\n")}\n`;
}

export function perfReportJson(report: PerfReportDetail): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

/** `perf-<target>-v<version>-<id prefix>.<ext>`, safe as a file name. */
export function perfReportFileName(report: PerfReportDetail, extension: "json" | "csv"): string {
  const target = report.targetName.replace(/[^A-Za-z0-9._-]+/g, "_");
  const version = report.targetVersion ? `-v${report.targetVersion}` : "";
  return `perf-${target}${version}-${report.id.slice(0, 8)}.${extension}`;
}

/** Why an automatic run's sweep ended, in words. */
export function stopReasonLabel(reason: string | null | undefined, minGainPercent?: number): string | null {
  switch (reason) {
    case "plateau":
      return `the throughput stopped rising (a step gained less than ${minGainPercent ?? "the minimum"} %)`;
    case "max-concurrency":
      return "it reached the highest concurrency of the plan";
    case "time-bound":
      return "it reached the run's time bound (the steps measured are kept)";
    case "aborted":
      return "it was stopped (cancelled, or the control plane stopped)";
    case "no-throughput":
      return "a step measured no throughput (every request failed)";
    case "p99-budget":
      return "the p99 latency went over the budget";
    default:
      return null;
  }
}
