import type { PerfReport, PerfStep } from "./perf-report.js";

/**
 * A PerfReport as perf_analyzer's `-f file.csv` writes it (its
 * ReportWriter), so scripts and Model Analyzer's readers take Operon's runs
 * unchanged:
 *
 *   Concurrency|Request Rate, Inferences/Second, Client Send,
 *   [Network+Server Send/Recv, Server Queue, Server Compute Input,
 *    Server Compute Infer, Server Compute Output,
 *    [Server Cache Hit, Server Cache Miss,]] Client Recv,
 *   p50 latency, p90 latency, p95 latency, p99 latency
 *
 * The server columns are there when the server's statistics were read for
 * every step (perf_analyzer's include_server_stats); the two cache columns
 * only when the model's config enables the response cache (perf_analyzer
 * leaves them out otherwise, for older readers), each the average time of
 * one hit / one miss, and counted with the server's time when Network+Server
 * is derived. A --percentile outside
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
  const withCache = withServer && report.config.responseCache === true;
  const header = [report.mode === "concurrency" ? "Concurrency" : "Request Rate", "Inferences/Second", "Client Send"];
  if (withServer) {
    header.push(
      "Network+Server Send/Recv",
      "Server Queue",
      "Server Compute Input",
      "Server Compute Infer",
      "Server Compute Output",
    );
    if (withCache) header.push("Server Cache Hit", "Server Cache Miss");
  }
  header.push("Client Recv", ...percentiles.map((p) => `p${p} latency`));
  if (options.verbose === true) {
    if (percentile === undefined) header.push("Avg latency");
    header.push("request/response", "response wait");
  }
  const rows = [...report.steps]
    .sort((a, b) => a.throughputInferPerSec - b.throughputInferPerSec)
    .map((step) =>
      rowOf(
        step,
        percentiles,
        { withServer, withCache },
        options.verbose === true && percentile === undefined,
        options,
      ),
    );
  return `${[header.join(","), ...rows].join("\n")}\n`;
}

function rowOf(
  step: PerfStep,
  percentiles: number[],
  { withServer, withCache }: { withServer: boolean; withCache: boolean },
  avgColumn: boolean,
  options: { verbose?: boolean },
): string {
  const load = step.concurrency ?? step.requestRate;
  const cells: string[] = [cppDouble(load), cppDouble(step.throughputInferPerSec), "0"];
  const avgUs = step.latencyUs.avg;
  if (withServer && step.server !== undefined) {
    const { queueUs, computeInputUs, computeInferUs, computeOutputUs } = step.server;
    const cacheHitUs = withCache ? (step.server.cacheHitUs ?? 0) : 0;
    const cacheMissUs = withCache ? (step.server.cacheMissUs ?? 0) : 0;
    const accounted = queueUs + computeInputUs + computeInferUs + computeOutputUs + cacheHitUs + cacheMissUs;
    cells.push(
      wholeUs(Math.max(0, avgUs - accounted)),
      wholeUs(queueUs),
      wholeUs(computeInputUs),
      wholeUs(computeInferUs),
      wholeUs(computeOutputUs),
    );
    if (withCache) cells.push(wholeUs(cacheHitUs), wholeUs(cacheMissUs));
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

/** One row of a perf_analyzer CSV, in Operon's units (µs, inferences/s). */
export interface PerfAnalyzerCsvRow {
  concurrency: number;
  throughputInferPerSec: number;
  latencyUs: { p50: number; p90: number; p95: number; p99: number };
  /** Client Send + Network + Server times + Client Recv when the server columns are there, else the verbose "Avg latency" column. */
  avgLatencyUs?: number;
  server?: { queueUs: number; computeInputUs: number; computeInferUs: number; computeOutputUs: number };
}

/** The most rows an imported CSV may have (perf_analyzer writes one per load step). */
export const MAX_PERF_ANALYZER_CSV_ROWS = 1024;

const SERVER_COLUMNS = [
  "Network+Server Send/Recv",
  "Server Queue",
  "Server Compute Input",
  "Server Compute Infer",
  "Server Compute Output",
] as const;

/**
 * Reads a CSV as perf_analyzer's `-f` writes it (and `operon perf -f`):
 * a concurrency sweep, with or without the server columns and the verbose
 * ones. Columns are found by name, so their order and extra columns do not
 * matter. Request-rate CSVs are refused (Operon's reports are concurrency
 * sweeps). Throws an Error naming the line and column of the first problem.
 */
export function parsePerfAnalyzerCsv(text: string): PerfAnalyzerCsvRow[] {
  const lines = text
    .replace(/^\uFEFF/, "")
    .split(/\r?\n/)
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line !== "");
  const [headerLine, ...dataLines] = lines;
  if (headerLine === undefined) throw new Error("the file is empty: expected perf_analyzer's CSV header line");
  const header = headerLine.line.split(",").map((name) => name.trim());
  if (header[0] === "Request Rate") {
    throw new Error("this is a request-rate CSV; only concurrency sweeps (first column 'Concurrency') can be imported");
  }
  const column = (name: string): number => header.indexOf(name);
  const required = ["Concurrency", "Inferences/Second", "p50 latency", "p90 latency", "p95 latency", "p99 latency"];
  const missing = required.filter((name) => column(name) < 0);
  if (missing.length > 0) {
    throw new Error(
      `line ${headerLine.number}: not perf_analyzer's CSV header: missing ${missing.map((name) => `'${name}'`).join(", ")}`,
    );
  }
  const withServer = SERVER_COLUMNS.every((name) => column(name) >= 0);
  if (dataLines.length === 0) throw new Error("the file has a header but no rows");
  if (dataLines.length > MAX_PERF_ANALYZER_CSV_ROWS) {
    throw new Error(`the file has ${dataLines.length} rows; at most ${MAX_PERF_ANALYZER_CSV_ROWS} can be imported`);
  }
  const rows = dataLines.map(({ line, number }) => {
    const cells = line.split(",").map((cell) => cell.trim());
    if (cells.length < header.length) {
      throw new Error(`line ${number}: ${cells.length} values for ${header.length} columns`);
    }
    const value = (name: string, whole = false): number => {
      const cell = cells[column(name)]!;
      const parsed = Number(cell);
      if (cell === "" || !Number.isFinite(parsed) || parsed < 0 || (whole && !Number.isSafeInteger(parsed))) {
        throw new Error(
          `line ${number}, column '${name}': '${cell}' is not ${whole ? "a whole number" : "a number"} >= 0`,
        );
      }
      return parsed;
    };
    const concurrency = value("Concurrency", true);
    if (concurrency < 1) throw new Error(`line ${number}, column 'Concurrency': must be at least 1`);
    const row: PerfAnalyzerCsvRow = {
      concurrency,
      throughputInferPerSec: value("Inferences/Second"),
      latencyUs: {
        p50: value("p50 latency"),
        p90: value("p90 latency"),
        p95: value("p95 latency"),
        p99: value("p99 latency"),
      },
    };
    if (withServer) {
      row.server = {
        queueUs: value("Server Queue"),
        computeInputUs: value("Server Compute Input"),
        computeInferUs: value("Server Compute Infer"),
        computeOutputUs: value("Server Compute Output"),
      };
      const clientUs =
        (column("Client Send") >= 0 ? value("Client Send") : 0) +
        (column("Client Recv") >= 0 ? value("Client Recv") : 0);
      // perf_analyzer subtracts the cache hit and miss times too when it derives Network+Server.
      const cacheUs =
        (column("Server Cache Hit") >= 0 ? value("Server Cache Hit") : 0) +
        (column("Server Cache Miss") >= 0 ? value("Server Cache Miss") : 0);
      row.avgLatencyUs =
        clientUs +
        cacheUs +
        value("Network+Server Send/Recv") +
        row.server.queueUs +
        row.server.computeInputUs +
        row.server.computeInferUs +
        row.server.computeOutputUs;
    } else if (column("Avg latency") >= 0) {
      row.avgLatencyUs = value("Avg latency");
    }
    return row;
  });
  const seen = new Set<number>();
  for (const row of rows) {
    if (seen.has(row.concurrency)) throw new Error(`concurrency ${row.concurrency} appears twice`);
    seen.add(row.concurrency);
  }
  return rows.sort((a, b) => a.concurrency - b.concurrency);
}
