import { writeFile } from "node:fs/promises";
import { Command, InvalidArgumentError, Option } from "commander";
import { parseShapeFlag } from "@operon/perf/input-data";
import { type LoadRange, type RangeKind, parseLoadRange } from "@operon/perf/load-range";
import { isPerfError, messageOf } from "@operon/perf/perf-error";
import { progressWriter } from "@operon/perf/perf-progress";
import { formatPerfReport } from "@operon/perf/perf-table";
import { formatPerfAnalyzerCsv } from "@operon/perf/perf-analyzer-csv";
import { type PerfOptions, PERF_DEFAULTS, runPerf } from "@operon/perf/run-perf";
import { type SequenceIdRange, parseSequenceIdRange } from "@operon/perf/sequence-driver";

/** Exit codes: 0 done, 1 the run failed or requests failed, 2 bad flags (usage), 130 interrupted. */
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;
const EXIT_INTERRUPTED = 130;

/**
 * `operon perf`: a load generator in the spirit of Triton's perf_analyzer,
 * with its flag names where they exist (-m, -x, -u, -i, -b, -p, -s, -r,
 * --concurrency-range, --request-rate-range, --request-distribution,
 * --request-count, --shape, --input-data, -f, --percentile, -H, --streaming,
 * --sequence-length, --sequence-id-range,
 * --profile-export-file, --verbose-csv). Ranges are start:end:step and
 * step additively as in perf_analyzer: 1:8:2 measures 1, 3, 5, 7. The
 * table goes to stdout (or, with --json, only the PerfReport JSON);
 * progress and errors go to stderr. `-f` writes perf_analyzer's CSV
 * (perf-analyzer-csv.ts); the PerfReport JSON goes to --profile-export-file.
 */
export function perfCommand(): Command {
  return new Command("perf")
    .description("Measure a model's throughput and latency under load (like Triton's perf_analyzer)")
    .requiredOption("-m, --model-name <name>", "model to measure")
    .option("-x, --model-version <version>", "model version (default: the server's choice, the latest)")
    .option("-u, --url <host:port>", "server address (default localhost:8000 for http, localhost:8001 for grpc)")
    .option("-i, --protocol <protocol>", "http or grpc", parseProtocol, PERF_DEFAULTS.protocol)
    .option(
      "--concurrency-range <start:end:step>",
      "concurrency sweep, stepping additively: 1:8:2 measures 1, 3, 5, 7 (default 1)",
      rangeParser("integer", "--concurrency-range"),
    )
    .option(
      "--request-rate-range <start:end:step>",
      "request-rate sweep in requests/sec (open loop), stepping additively: 100:400:100 measures 100, 200, 300, 400",
      rangeParser("number", "--request-rate-range"),
    )
    .addOption(
      new Option("--request-distribution <kind>", "intervals between requests in request-rate mode")
        .choices(["constant", "poisson"])
        .default(PERF_DEFAULTS.requestDistribution),
    )
    .option(
      "-p, --measurement-interval <ms>",
      "length of a measurement window",
      parsePositiveInt,
      PERF_DEFAULTS.measurementIntervalMs,
    )
    .option(
      "--request-count <n>",
      "send exactly n requests per step, measured as one window (instead of time windows)",
      parsePositiveInt,
    )
    .option(
      "-s, --stability-percentage <pct>",
      "a step is stable when 3 consecutive windows agree within pct% on throughput and latency",
      parsePositiveNumber,
      PERF_DEFAULTS.stabilityPercentage,
    )
    .option(
      "-r, --max-trials <n>",
      "most windows per step before giving up on stability",
      parsePositiveInt,
      PERF_DEFAULTS.maxTrials,
    )
    .option(
      "-b, --batch-size <n>",
      "batch size of each request (models with max_batch_size > 0)",
      parsePositiveInt,
      PERF_DEFAULTS.batchSize,
    )
    .option(
      "--shape <name:dims>",
      "dims of an input with variable dims, batch dim excluded, e.g. input:1,512 (repeatable)",
      collectShape,
    )
    .option(
      "--input-data <zero|random|file>",
      "input values: zero, random, or a perf_analyzer JSON data file",
      PERF_DEFAULTS.inputData,
    )
    .option(
      "-H, --header <'Name: value'>",
      "a header sent with every request (HTTP header, gRPC metadata), e.g. 'Authorization: Bearer opk_…' (repeatable)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option("--binary", "http: send tensors as binary data (binary_tensor_data extension; the default)")
    .option("--no-binary", "http: send tensors as JSON")
    .addOption(
      new Option("--shared-memory <kind>", "send tensors through registered shared memory (system) or in the requests")
        .choices(["none", "system"])
        .default("none"),
    )
    .option(
      "--output-shared-memory-size <bytes>",
      "--shared-memory system: bytes reserved for each output (default 102400)",
      parsePositiveInt,
    )
    .option("--streaming", "grpc: send every request over one ModelStreamInfer stream (needed for decoupled models)")
    .option(
      "--sequence-length <n>",
      "sequence models: requests per sequence, first marked start and last end (default 20)",
      parsePositiveInt,
    )
    .option(
      "--sequence-id-range <start[:end]>",
      "sequence models: the correlation ids sequences take in turn (default 1 upwards)",
      parseSequenceIds,
    )
    .option("--json", "print only the PerfReport JSON on stdout")
    .option("-f, --latency-report-file <path>", "also write perf_analyzer's CSV report to this file")
    .option("--verbose-csv", "-f: add perf_analyzer's --verbose-csv columns")
    .option("--profile-export-file <path>", "also write the PerfReport JSON to this file")
    .option(
      "--percentile <p>",
      "judge stability on the p-th latency percentile (1-99) instead of the average, and report it",
      parsePercentile,
    )
    .exitOverride((error) => {
      // Help and version exit 0; every parse error is a usage error.
      process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE);
    })
    .action(async (flags: PerfFlags) => {
      await runPerfCommand(flags);
    });
}

interface PerfFlags {
  modelName: string;
  modelVersion?: string;
  url?: string;
  protocol: "http" | "grpc";
  concurrencyRange?: LoadRange;
  requestRateRange?: LoadRange;
  requestDistribution: "constant" | "poisson";
  measurementInterval: number;
  requestCount?: number;
  stabilityPercentage: number;
  maxTrials: number;
  batchSize: number;
  shape?: Record<string, number[]>;
  inputData: string;
  header?: string[];
  binary?: boolean;
  json?: boolean;
  latencyReportFile?: string;
  verboseCsv?: boolean;
  profileExportFile?: string;
  percentile?: number;
  sharedMemory: "none" | "system";
  outputSharedMemorySize?: number;
  streaming?: boolean;
  sequenceLength?: number;
  sequenceIdRange?: SequenceIdRange;
}

async function runPerfCommand(flags: PerfFlags): Promise<void> {
  const controller = new AbortController();
  let interrupts = 0;
  const onInterrupt = (): void => {
    interrupts += 1;
    if (interrupts > 1) process.exit(EXIT_INTERRUPTED);
    process.stderr.write(
      "\ninterrupted: stopping; the report keeps the windows measured so far (Ctrl-C again to quit now)\n",
    );
    controller.abort();
  };
  // Checked here, not in commander's parser: its message would repeat the whole value (an API key) on the terminal.
  let headers: Record<string, string> | undefined;
  try {
    headers = flags.header === undefined ? undefined : parseHeaders(flags.header);
  } catch (error) {
    process.stderr.write(`error: ${messageOf(error)}\n`);
    process.exitCode = EXIT_USAGE;
    return;
  }
  process.on("SIGINT", onInterrupt);

  const options: PerfOptions = {
    model: flags.modelName,
    ...(flags.modelVersion !== undefined ? { version: flags.modelVersion } : {}),
    ...(flags.url !== undefined ? { url: flags.url } : {}),
    protocol: flags.protocol,
    ...(flags.concurrencyRange !== undefined ? { concurrencyRange: flags.concurrencyRange } : {}),
    ...(flags.requestRateRange !== undefined ? { requestRateRange: flags.requestRateRange } : {}),
    requestDistribution: flags.requestDistribution,
    measurementIntervalMs: flags.measurementInterval,
    ...(flags.requestCount !== undefined ? { requestCount: flags.requestCount } : {}),
    stabilityPercentage: flags.stabilityPercentage,
    maxTrials: flags.maxTrials,
    batchSize: flags.batchSize,
    shapes: flags.shape ?? {},
    inputData: flags.inputData,
    binaryData: flags.binary !== false,
    ...(headers !== undefined ? { headers } : {}),
    signal: controller.signal,
    ...(flags.percentile !== undefined ? { percentile: flags.percentile } : {}),
    sharedMemory: flags.sharedMemory,
    ...(flags.outputSharedMemorySize !== undefined ? { outputSharedMemorySize: flags.outputSharedMemorySize } : {}),
    ...(flags.streaming === true ? { streaming: true } : {}),
    ...(flags.sequenceLength !== undefined ? { sequenceLength: flags.sequenceLength } : {}),
    ...(flags.sequenceIdRange !== undefined ? { sequenceIdRange: flags.sequenceIdRange } : {}),
  };

  const progress = progressWriter(process.stderr);
  let report;
  try {
    report = await runPerf(options, { onProgress: (update) => progress.update(update) });
  } catch (error) {
    progress.finish();
    process.stderr.write(`error: ${messageOf(error)}\n`);
    process.exitCode = isPerfError(error) && error.code === "BAD_OPTIONS" ? EXIT_USAGE : EXIT_FAILURE;
    return;
  } finally {
    process.off("SIGINT", onInterrupt);
  }
  progress.finish();

  const json = `${JSON.stringify(report, null, 2)}\n`;
  process.stdout.write(flags.json === true ? json : formatPerfReport(report));
  const files: Array<[path: string | undefined, text: () => string]> = [
    [flags.latencyReportFile, () => formatPerfAnalyzerCsv(report, { verbose: flags.verboseCsv === true })],
    [flags.profileExportFile, () => json],
  ];
  for (const [path, text] of files) {
    if (path === undefined) continue;
    try {
      await writeFile(path, text());
    } catch (error) {
      process.stderr.write(`error: cannot write ${path}: ${messageOf(error)}\n`);
      process.exitCode = EXIT_FAILURE;
    }
  }
  const failed = report.steps.reduce((sum, step) => sum + step.errors, 0);
  if (failed > 0) {
    process.stderr.write(`error: ${failed} inference requests failed during the measurement\n`);
    process.exitCode = EXIT_FAILURE;
  }
  if (controller.signal.aborted) process.exitCode = EXIT_INTERRUPTED;
}

function parseProtocol(value: string): "http" | "grpc" {
  const lowered = value.toLowerCase();
  if (lowered !== "http" && lowered !== "grpc") throw new InvalidArgumentError("use http or grpc");
  return lowered;
}

function rangeParser(kind: RangeKind, flag: string): (value: string) => LoadRange {
  return (value) => {
    try {
      return parseLoadRange(value, kind, flag);
    } catch (error) {
      // Commander already names the flag and the value: keep only the problem.
      throw new InvalidArgumentError(messageOf(error).replace(`${flag} '${value}': `, ""));
    }
  };
}

function collectShape(value: string, previous: Record<string, number[]> = {}): Record<string, number[]> {
  let parsed;
  try {
    parsed = parseShapeFlag(value);
  } catch (error) {
    throw new InvalidArgumentError(messageOf(error));
  }
  if (parsed.name in previous) throw new InvalidArgumentError(`input '${parsed.name}' is given twice`);
  return { ...previous, [parsed.name]: parsed.dims };
}

function parsePercentile(value: string): number {
  const parsed = /^[0-9]+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed < 1 || parsed > 99)
    throw new InvalidArgumentError(`'${value}' is not a whole number from 1 to 99`);
  return parsed;
}

function parseSequenceIds(value: string): SequenceIdRange {
  try {
    return parseSequenceIdRange(value);
  } catch (error) {
    throw new InvalidArgumentError(messageOf(error));
  }
}

function parsePositiveInt(value: string): number {
  const parsed = /^[0-9]+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError(`'${value}' is not a whole number >= 1`);
  return parsed;
}

function parsePositiveNumber(value: string): number {
  const parsed = Number(value);
  if (value.trim() === "" || !Number.isFinite(parsed) || parsed <= 0)
    throw new InvalidArgumentError(`'${value}' is not a number > 0`);
  return parsed;
}

/** HTTP's token characters: what a header name may hold (RFC 9110). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** -H 'Name: value', repeatable (perf_analyzer's form; ':' separates, spaces around the value are dropped). */
function parseHeaders(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const value of values) {
    const colon = value.indexOf(":");
    const name = colon > 0 ? value.slice(0, colon).trim() : "";
    const text = colon > 0 ? value.slice(colon + 1).trim() : "";
    if (!HEADER_NAME.test(name))
      throw new Error(`-H '${shownHeader(value)}': expected 'Name: value', e.g. 'Authorization: Bearer <key>'`);
    if (text === "" || /[\r\n\0]/.test(text)) throw new Error(`-H '${name}': the value is empty or holds a line break`);
    headers[name.toLowerCase()] = text;
  }
  return headers;
}

/** The flag with its value cut off: an API key must not be printed back to the terminal. */
function shownHeader(value: string): string {
  const colon = value.indexOf(":");
  if (colon >= 0) return `${value.slice(0, colon)}: …`;
  return value.length > 8 ? `${value.slice(0, 8)}…` : value;
}
