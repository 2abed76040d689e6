import type { PerfReport, PerfStep } from "./perf-report.js";

/**
 * A PerfReport as perf_analyzer's `-f file.csv` writes it (its
 * ReportWriter), so scripts and Model Analyzer's readers take Operon's runs
 * unchanged:
 *
 *   Concurrency|Request Rate, Inferences/Second, Client Send,
 *   [Network+Server Send/Recv, Server Queue, Server Compute Input,
 *    Server Compute Infer, Server Compute Output,] Client Recv,
 *   p50 latency, p90 latency, p95 latency, p99 latency
 *
 * The server columns are there when the server's statistics were read for
 * every step (perf_analyzer's include_server_stats); a --percentile outside
 * 50/90/95/99 adds its own "pN latency" column in numeric order, as
 * perf_analyzer's percentile map does. Rows are sorted by increasing
 * inferences/second, times are whole microseconds (perf_analyzer divides
 * nanoseconds by 1000), and throughput prints as C++'s default ostream does
 * (6 significant digits).
 *
 * Operon's client measures each request as one span: Client Send and
 * Client Recv are 0, and Network+Server Send/Recv is the average latency
 * less the server's queue and compute times (floored at 0, as perf_analyzer
 * floors it). With `verbose`, the --verbose-csv columns follow:
 * Avg latency (only without --percentile, as perf_analyzer does),
 * request/response, response wait.
 */
export function formatPerfAnalyzerCsv(report: PerfReport, options: { verbose?: boolean } = {}): string {
  const percentile = report.config.percentile;
  const percentiles = [...new Set([50, 90, 95, 99, ...(percentile !== undefined ? [percentile] : [])])].sort(
    (a, b) => a - b,
  );
  const withServer = report.steps.length > 0 && report.steps.every((step) => step.server !== undefined);
  const header = [report.mode === "concurrency" ? "Concurrency" : "Request Rate", "Inferences/Second", "Client Send"];
  if (withServer) {
    header.push(
      "Network+Server Send/Recv",
      "Server Queue",
      "Server Compute Input",
      "Server Compute Infer",
      "Server Compute Output",
    );
  }
  header.push("Client Recv", ...percentiles.map((p) => `p${p} latency`));
  if (options.verbose === true) {
    if (percentile === undefined) header.push("Avg latency");
    header.push("request/response", "response wait");
  }
  const rows = [...report.steps]
    .sort((a, b) => a.throughputInferPerSec - b.throughputInferPerSec)
    .map((step) => rowOf(step, percentiles, withServer, options.verbose === true && percentile === undefined, options));
  return `${[header.join(","), ...rows].join("\n")}\n`;
}

function rowOf(
  step: PerfStep,
  percentiles: number[],
  withServer: boolean,
  avgColumn: boolean,
  options: { verbose?: boolean },
): string {
  const load = step.concurrency ?? step.requestRate;
  const cells: string[] = [cppDouble(load), cppDouble(step.throughputInferPerSec), "0"];
  const avgUs = step.latencyUs.avg;
  if (withServer && step.server !== undefined) {
    const { queueUs, computeInputUs, computeInferUs, computeOutputUs } = step.server;
    const accounted = queueUs + computeInputUs + computeInferUs + computeOutputUs;
    cells.push(
      wholeUs(Math.max(0, avgUs - accounted)),
      wholeUs(queueUs),
      wholeUs(computeInputUs),
      wholeUs(computeInferUs),
      wholeUs(computeOutputUs),
    );
  }
  cells.push("0", ...percentiles.map((p) => wholeUs(latencyAt(step, p))));
  if (options.verbose === true) {
    if (avgColumn) cells.push(wholeUs(avgUs));
    // request/response = send + receive (0 here); response wait = the whole request time less those.
    cells.push("0", wholeUs(avgUs));
  }
  return cells.join(",");
}

function latencyAt(step: PerfStep, p: number): number {
  switch (p) {
    case 50:
      return step.latencyUs.p50;
    case 90:
      return step.latencyUs.p90;
    case 95:
      return step.latencyUs.p95;
    case 99:
      return step.latencyUs.p99;
    default:
      return step.percentileLatencyUs ?? 0;
  }
}

/** perf_analyzer's `ns / 1000` on a uint64: whole microseconds, truncated. */
function wholeUs(us: number): string {
  return String(Math.max(0, Math.trunc(us)));
}

/**
 * A double as `std::ostream << double` prints it by default (%g with 6
 * significant digits): 6.21969, 1234.5, 1.23457e+06, 0.000123457, 1e-05.
 */
export function cppDouble(value: number): string {
  if (value === 0 || !Number.isFinite(value)) return value === 0 ? "0" : String(value);
  const exponent = Math.floor(Math.log10(Math.abs(Number(value.toPrecision(6)))));
  if (exponent < -4 || exponent >= 6) {
    const [mantissa, exp] = value.toExponential(5).split("e") as [string, string];
    const sign = exp.startsWith("-") ? "-" : "+";
    const digits = exp.replace(/^[+-]/, "").padStart(2, "0");
    return `${trimZeros(mantissa)}e${sign}${digits}`;
  }
  return trimZeros(value.toFixed(Math.max(0, 5 - exponent)));
}

function trimZeros(text: string): string {
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}
