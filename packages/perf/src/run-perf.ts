import { readFile } from "node:fs/promises";
import {
  DEFAULT_PORTS,
  type InferenceClient,
  type InferenceClientOptions,
  type PerfProtocol,
  parseServerAddress,
} from "./inference-client.js";
import { createInferenceClient } from "./create-inference-client.js";
import { type InputDataSource, prepareInputSets, resolveInputSpecs } from "./input-data.js";
import { LatencyRecorder, percentileOfSorted, round1, summarizeLatencies } from "./latency-stats.js";
import { type LoadSetting, type StepMeasurement, measureStep, windowFigures } from "./load-generator.js";
import { type LoadRange, expandLoadRange, validateLoadRange } from "./load-range.js";
import { PerfError, messageOf } from "./perf-error.js";
import {
  DEFAULT_OUTPUT_SHARED_MEMORY_BYTES,
  type PerfSharedMemory,
  setUpSystemSharedMemory,
} from "./perf-shared-memory.js";
import type { PerfProgress } from "./perf-progress.js";
import {
  DEFAULT_SEQUENCE_ID_RANGE,
  DEFAULT_SEQUENCE_LENGTH,
  type SequenceIdRange,
  SequenceDriver,
} from "./sequence-driver.js";
import {
  PERF_REPORT_SCHEMA_VERSION,
  type PerfReport,
  type PerfStep,
  type PerfWindow,
  type RequestDistribution,
} from "./perf-report.js";
import {
  ServerStatsProbe,
  type ServerStatsSnapshot,
  addSnapshots,
  diffSnapshots,
  summarizeServerStats,
} from "./server-stats.js";

/** What a perf run measures; every field but `model` has a default (PERF_DEFAULTS). */
export interface PerfOptions {
  model: string;
  /** Empty or undefined: the server's default version. */
  version?: string;
  protocol?: PerfProtocol;
  /** host:port; default localhost:8000 (HTTP) or localhost:8001 (gRPC). */
  url?: string;
  /** At most one of the two ranges; neither = concurrency 1. */
  concurrencyRange?: LoadRange;
  requestRateRange?: LoadRange;
  requestDistribution?: RequestDistribution;
  measurementIntervalMs?: number;
  /** Request-count mode: each step sends exactly this many requests. */
  requestCount?: number;
  stabilityPercentage?: number;
  maxTrials?: number;
  batchSize?: number;
  /** Dims (without the batch dimension) for inputs with variable dims. */
  shapes?: Record<string, number[]>;
  /** "zero", "random", or the path of a perf_analyzer --input-data JSON file. */
  inputData?: string;
  /**
   * The content of an --input-data file already read (the console's uploaded
   * sample): takes the place of `inputData`; `name` names it in messages and
   * the report.
   */
  inputDataFile?: { name: string; json: unknown };
  /** Variable dims that `shapes` leaves out get suggested sizes (suggested-dims.ts) instead of an error. */
  fillVariableDims?: boolean;
  /** HTTP: binary tensor data (default) or JSON. */
  binaryData?: boolean;
  /** Stops the run at once; the report holds the completed windows (an interrupted step is marked not stable). */
  signal?: AbortSignal;
  /** Sent with every request (HTTP headers / gRPC metadata), e.g. `{ authorization: "Bearer <key>" }`; never written to the report. */
  headers?: Readonly<Record<string, string>>;
  /**
   * The request parameter `priority` on every request: a model with priority levels queues the run's requests at
   * that level (1 = highest), so a run measured at its lowest level yields to users' requests. Unset = none.
   */
  priority?: number;
  /** perf_analyzer's --percentile (1-99): stability uses this latency percentile, and each step reports it. */
  percentile?: number;
  /** perf_analyzer's --shared-memory: "system" sends every tensor through registered POSIX shared memory. */
  sharedMemory?: "none" | "system";
  /** --output-shared-memory-size: bytes reserved per output with --shared-memory system (default 102400). */
  outputSharedMemorySize?: number;
  /** perf_analyzer's --streaming (gRPC only): every request over one ModelStreamInfer call; needed for decoupled models. */
  streaming?: boolean;
  /** perf_analyzer's --sequence-length: requests per sequence for a model with sequence_batching (default 20). */
  sequenceLength?: number;
  /** perf_analyzer's --sequence-id-range: the correlation ids sequences take, in turn (default from 1). */
  sequenceIdRange?: SequenceIdRange;
}

export const PERF_DEFAULTS = {
  protocol: "http" as PerfProtocol,
  concurrencyRange: { start: 1, end: 1, step: 1 } as LoadRange,
  requestDistribution: "constant" as RequestDistribution,
  measurementIntervalMs: 5000,
  stabilityPercentage: 10,
  maxTrials: 10,
  batchSize: 1,
  inputData: "random",
  binaryData: true,
} as const;

export interface PerfHooks {
  onProgress?(progress: PerfProgress): void;
}

/** The options with defaults applied and checked; throws PerfError BAD_OPTIONS. */
export interface ResolvedPerfOptions {
  model: string;
  version: string;
  protocol: PerfProtocol;
  url: string;
  mode: PerfReport["mode"];
  range: LoadRange;
  requestDistribution: RequestDistribution;
  measurementIntervalMs: number;
  requestCount: number | undefined;
  stabilityPercentage: number;
  maxTrials: number;
  batchSize: number;
  shapes: Record<string, number[]>;
  inputData: string;
  binaryData: boolean;
  percentile: number | undefined;
  priority: number | undefined;
  sharedMemory: "none" | "system";
  outputSharedMemorySize: number;
  streaming: boolean;
  sequenceLength: number;
  sequenceIdRange: SequenceIdRange;
}

export function resolvePerfOptions(options: PerfOptions): ResolvedPerfOptions {
  if (typeof options.model !== "string" || options.model.trim() === "") throw bad("a model name is required (-m)");
  const protocol = options.protocol ?? PERF_DEFAULTS.protocol;
  if (protocol !== "http" && protocol !== "grpc") throw bad(`protocol must be http or grpc, got '${String(protocol)}'`);
  if (options.concurrencyRange !== undefined && options.requestRateRange !== undefined) {
    throw bad("--concurrency-range and --request-rate-range cannot be used together");
  }
  const mode = options.requestRateRange !== undefined ? "request-rate" : "concurrency";
  const range =
    mode === "request-rate"
      ? validateLoadRange(options.requestRateRange!, "number", "--request-rate-range")
      : validateLoadRange(options.concurrencyRange ?? PERF_DEFAULTS.concurrencyRange, "integer", "--concurrency-range");
  const url = options.url ?? `localhost:${DEFAULT_PORTS[protocol]}`;
  parseServerAddress(url, protocol);
  const requestDistribution = options.requestDistribution ?? PERF_DEFAULTS.requestDistribution;
  if (requestDistribution !== "constant" && requestDistribution !== "poisson") {
    throw bad(`--request-distribution must be constant or poisson, got '${String(requestDistribution)}'`);
  }
  const resolved: ResolvedPerfOptions = {
    model: options.model,
    version: options.version ?? "",
    protocol,
    url,
    mode,
    range,
    requestDistribution,
    measurementIntervalMs: positiveInteger(
      options.measurementIntervalMs ?? PERF_DEFAULTS.measurementIntervalMs,
      "--measurement-interval",
    ),
    requestCount:
      options.requestCount === undefined ? undefined : positiveInteger(options.requestCount, "--request-count"),
    stabilityPercentage: options.stabilityPercentage ?? PERF_DEFAULTS.stabilityPercentage,
    maxTrials: positiveInteger(options.maxTrials ?? PERF_DEFAULTS.maxTrials, "--max-trials"),
    batchSize: positiveInteger(options.batchSize ?? PERF_DEFAULTS.batchSize, "--batch-size"),
    shapes: { ...(options.shapes ?? {}) },
    inputData: options.inputData ?? PERF_DEFAULTS.inputData,
    binaryData: options.binaryData ?? PERF_DEFAULTS.binaryData,
    percentile: options.percentile === undefined ? undefined : percentileOption(options.percentile),
    priority: options.priority === undefined ? undefined : positiveInteger(options.priority, "--priority"),
    sharedMemory: options.sharedMemory ?? "none",
    outputSharedMemorySize: positiveInteger(
      options.outputSharedMemorySize ?? DEFAULT_OUTPUT_SHARED_MEMORY_BYTES,
      "--output-shared-memory-size",
    ),
    streaming: options.streaming ?? false,
    sequenceLength: positiveInteger(options.sequenceLength ?? DEFAULT_SEQUENCE_LENGTH, "--sequence-length"),
    sequenceIdRange: sequenceIdRangeFor(protocol, options.sequenceIdRange),
  };
  if (resolved.streaming && protocol !== "grpc") throw bad("--streaming needs the gRPC protocol (-i grpc)");
  if (resolved.streaming && resolved.sharedMemory === "system") {
    throw bad(
      "--streaming and --shared-memory system cannot be used together (ModelStreamInfer carries tensors in the messages)",
    );
  }
  if (resolved.sharedMemory !== "none" && resolved.sharedMemory !== "system") {
    throw bad(`--shared-memory must be none or system, got '${String(resolved.sharedMemory)}' (cuda is not offered)`);
  }
  if (!(resolved.stabilityPercentage > 0) || !Number.isFinite(resolved.stabilityPercentage)) {
    throw bad(`--stability-percentage must be a number > 0, got ${resolved.stabilityPercentage}`);
  }
  if (resolved.inputData.trim() === "") throw bad("--input-data must be zero, random or a JSON file path");
  return resolved;
}

/**
 * Runs a perf sweep against a server and returns its report. Reads the
 * model's metadata and config first (so an unreachable server or unknown
 * model fails fast with PerfError), builds the requests once, sends one
 * warm-up request, then measures each load value of the range in turn.
 */
export async function runPerf(options: PerfOptions, hooks: PerfHooks = {}): Promise<PerfReport> {
  const resolved = resolvePerfOptions(options);
  const source: InputDataSource =
    options.inputDataFile !== undefined
      ? { kind: "file", path: options.inputDataFile.name, json: options.inputDataFile.json }
      : await loadInputData(resolved.inputData);
  const startedAt = new Date().toISOString();
  const loads = expandLoadRange(resolved.range);
  const clientOptions: InferenceClientOptions = {
    url: resolved.url,
    model: resolved.model,
    version: resolved.version,
    binaryData: resolved.binaryData,
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    ...(resolved.priority !== undefined ? { priority: resolved.priority } : {}),
  };

  const control = await createInferenceClient(resolved.protocol, clientOptions);
  let loadClient: InferenceClient | undefined;
  let shm: PerfSharedMemory | undefined;
  let sequences: SequenceDriver | undefined;
  try {
    const metadata = await control.modelMetadata();
    const { maxBatchSize, sequenceBatching, decoupled, responseCache } = await control.modelConfig();
    if (decoupled && !resolved.streaming) {
      throw bad(
        `model '${resolved.model}' is decoupled: its responses only come over a stream; measure it with --streaming -i grpc`,
      );
    }
    const specs = resolveInputSpecs(metadata.inputs, {
      maxBatchSize,
      batchSize: resolved.batchSize,
      shapes: resolved.shapes,
      ...(options.fillVariableDims === true ? { fillVariableDims: true } : {}),
    });
    // The report records every shape the run chose, given or suggested.
    const shapes = { ...resolved.shapes };
    for (const spec of specs) if (spec.suggested === true) shapes[spec.name] = spec.dims;
    const inputSets = prepareInputSets(specs, resolved.batchSize, source);
    if (resolved.sharedMemory === "system") {
      const outputs = metadata.outputs.map((output) => output.name);
      shm = await setUpSystemSharedMemory(control, inputSets, outputs, resolved.outputSharedMemorySize);
    }
    loadClient = await createInferenceClient(resolved.protocol, {
      ...clientOptions,
      ...(shm !== undefined ? { sharedMemory: shm.plan } : {}),
      ...(resolved.streaming ? { streaming: true } : {}),
      inputSets,
      maxConnections: resolved.mode === "concurrency" ? Math.max(...loads) : Infinity,
    });
    const client = loadClient;
    sequences = sequenceBatching
      ? new SequenceDriver((flags) => client.infer(flags), resolved.sequenceLength, resolved.sequenceIdRange)
      : undefined;
    const sendOne = sequences !== undefined ? sequences.infer.bind(sequences) : () => client.infer();
    await warmUp(sequences !== undefined ? () => sequences!.single() : sendOne, resolved);

    const probe = new ServerStatsProbe(control);
    const steps: PerfStep[] = [];
    for (const [stepIndex, value] of loads.entries()) {
      if (options.signal?.aborted) break;
      const load: LoadSetting =
        resolved.mode === "concurrency"
          ? { kind: "concurrency", concurrency: value }
          : { kind: "request-rate", requestRate: value, distribution: resolved.requestDistribution };
      const progressLoad = resolved.mode === "concurrency" ? { concurrency: value } : { requestRate: value };
      const maxWindows = resolved.requestCount !== undefined ? 1 : resolved.maxTrials;
      hooks.onProgress?.({
        phase: "step",
        stepIndex,
        stepCount: loads.length,
        load: progressLoad,
        window: 0,
        maxWindows,
        requests: 0,
        errors: 0,
        throughputInferPerSec: 0,
        avgLatencyUs: 0,
        stable: false,
      });
      const measurement = await measureStep(sendOne, load, resolved, {
        snapshot: () => probe.snapshot(),
        ...(options.signal ? { signal: options.signal } : {}),
        onWindow: (window, index, stable) => {
          const figures = windowFigures(window, resolved.batchSize, resolved.percentile);
          hooks.onProgress?.({
            phase: "window",
            stepIndex,
            stepCount: loads.length,
            load: progressLoad,
            window: index + 1,
            maxWindows,
            requests: window.requests,
            errors: window.errors,
            ...figures,
            stable,
          });
        },
      });
      // An interrupted step keeps the windows it completed (reported as not stable).
      if (measurement.windows.length > 0)
        steps.push(stepOf(load, measurement, resolved.batchSize, resolved.percentile));
      if (measurement.aborted) break;
    }

    const first = inputSets[0] ?? [];
    return {
      schemaVersion: PERF_REPORT_SCHEMA_VERSION,
      model: resolved.model,
      version: resolved.version !== "" ? resolved.version : defaultVersion(metadata.versions),
      protocol: resolved.protocol,
      mode: resolved.mode,
      startedAt,
      finishedAt: new Date().toISOString(),
      config: {
        url: resolved.url,
        batchSize: resolved.batchSize,
        maxBatchSize,
        inputData: source.kind,
        ...(source.kind === "file" ? { inputDataFile: source.path } : {}),
        shapes,
        binaryData: resolved.binaryData,
        measurementIntervalMs: resolved.measurementIntervalMs,
        stabilityPercentage: resolved.stabilityPercentage,
        maxTrials: resolved.maxTrials,
        ...(resolved.requestCount !== undefined ? { requestCount: resolved.requestCount } : {}),
        ...(resolved.percentile !== undefined ? { percentile: resolved.percentile } : {}),
        ...(resolved.priority !== undefined ? { priority: resolved.priority } : {}),
        ...(resolved.sharedMemory === "system"
          ? { sharedMemory: "system" as const, outputSharedMemorySize: resolved.outputSharedMemorySize }
          : {}),
        ...(responseCache ? { responseCache: true } : {}),
        ...(resolved.streaming ? { streaming: true } : {}),
        ...(sequenceBatching
          ? {
              sequenceLength: resolved.sequenceLength,
              sequenceIdStart: resolved.sequenceIdRange.start.toString(),
            }
          : {}),
        ...(resolved.mode === "concurrency"
          ? { concurrencyRange: resolved.range }
          : { requestRateRange: resolved.range, requestDistribution: resolved.requestDistribution }),
        inputs: first.map((input) => ({ name: input.name, datatype: input.datatype, shape: input.shape })),
      },
      steps,
    };
  } finally {
    // Open sequences are ended, so the server's sequence slots are free at once rather than at the idle timeout.
    await sequences?.finish();
    loadClient?.close();
    await shm?.release();
    control.close();
  }
}

/** Builds a step from its measurement: the merged windows give the figures; all windows are listed. */
export function stepOf(
  load: LoadSetting,
  measurement: StepMeasurement<ServerStatsSnapshot>,
  batchSize: number,
  percentile?: number,
): PerfStep {
  const merged = measurement.windows.slice(measurement.mergedFrom);
  const latencies = new LatencyRecorder();
  let requests = 0;
  let errors = 0;
  let durationMs = 0;
  let server: ServerStatsSnapshot | undefined;
  let serverComplete = merged.length > 0;
  for (const window of merged) {
    latencies.addAll(window.latencies);
    requests += window.requests;
    errors += window.errors;
    durationMs += window.durationMs;
    if (window.serverBefore !== undefined && window.serverAfter !== undefined) {
      const delta = diffSnapshots(window.serverBefore, window.serverAfter);
      server = server === undefined ? delta : addSnapshots(server, delta);
    } else {
      serverComplete = false;
    }
  }
  const seconds = durationMs / 1000;
  const windows: PerfWindow[] = measurement.windows.map((window, index) => {
    const figures = windowFigures(window, batchSize);
    return {
      durationMs: round1(window.durationMs),
      requests: window.requests,
      errors: window.errors,
      throughputInferPerSec: round2(figures.throughputInferPerSec),
      avgLatencyUs: round1(figures.avgLatencyUs),
      merged: index >= measurement.mergedFrom,
    };
  });
  const result = {
    throughputInferPerSec: seconds > 0 ? round2((requests * batchSize) / seconds) : 0,
    throughputRequestsPerSec: seconds > 0 ? round2(requests / seconds) : 0,
    latencyUs: summarizeLatencies(latencies.view()),
    ...(percentile !== undefined
      ? { percentileLatencyUs: round1(percentileOfSorted(Float64Array.from(latencies.view()).sort(), percentile)) }
      : {}),
    requests,
    errors,
    errorSamples: measurement.errorSamples,
    ...(serverComplete && server !== undefined ? { server: summarizeServerStats(server) } : {}),
    stable: measurement.stable,
    windows,
  };
  return load.kind === "concurrency"
    ? { concurrency: load.concurrency, ...result }
    : { requestRate: load.requestRate, ...result };
}

async function loadInputData(inputData: string): Promise<InputDataSource> {
  if (inputData === "zero" || inputData === "random") return { kind: inputData };
  let text: string;
  try {
    text = await readFile(inputData, "utf8");
  } catch (error) {
    throw bad(`--input-data '${inputData}' is neither zero, random nor a readable file: ${messageOf(error)}`, error);
  }
  try {
    return { kind: "file", path: inputData, json: JSON.parse(text) as unknown };
  } catch (error) {
    throw bad(`--input-data '${inputData}' is not valid JSON: ${messageOf(error)}`, error);
  }
}

/** One request before measuring: opens the connection and fails the run early if the server rejects the request. */
async function warmUp(send: () => Promise<void>, options: ResolvedPerfOptions): Promise<void> {
  try {
    await send();
  } catch (error) {
    throw new PerfError(
      "SERVER_ERROR",
      `the first inference request to model '${options.model}' failed: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

/** The highest version the metadata lists (Triton's default routing), or "" when it lists none. */
function defaultVersion(versions: readonly string[]): string {
  const sorted = [...versions].sort((a, b) => (Number(a) || 0) - (Number(b) || 0) || a.localeCompare(b));
  return sorted[sorted.length - 1] ?? "";
}

/**
 * The correlation ids a run may use. Over HTTP an id travels as a JSON
 * number, exact only up to 2^53 - 1, so the range is capped there.
 */
function sequenceIdRangeFor(protocol: PerfProtocol, range: SequenceIdRange | undefined): SequenceIdRange {
  const chosen = range ?? DEFAULT_SEQUENCE_ID_RANGE;
  if (protocol !== "http") return chosen;
  const maxJsonId = BigInt(Number.MAX_SAFE_INTEGER);
  if (chosen.start > maxJsonId) {
    throw bad(
      `--sequence-id-range: over HTTP correlation ids go up to ${maxJsonId} (JSON numbers); use -i grpc for larger ids`,
    );
  }
  return { start: chosen.start, end: chosen.end > maxJsonId ? maxJsonId : chosen.end };
}

function percentileOption(value: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > 99) {
    throw bad(`--percentile must be a whole number from 1 to 99, got ${value}`);
  }
  return value;
}

function positiveInteger(value: number, flag: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw bad(`${flag} must be a whole number >= 1, got ${value}`);
  return value;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

function bad(message: string, cause?: unknown): PerfError {
  return new PerfError("BAD_OPTIONS", message, cause === undefined ? undefined : { cause });
}
