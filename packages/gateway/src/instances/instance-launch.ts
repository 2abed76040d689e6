import type { WorkerIdentity } from "./worker-environment.js";
import { ISOLATION_PARAMETER } from "@operon/model-config/model-config-types";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo, NativeLoadSpec } from "@operon/protocol/worker-wire";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { AdaptiveInstance } from "./adaptive-instance.js";
import { type BackendInstance, type InstanceIsolation, THREAD_CAPABLE_BACKENDS } from "./backend-instance.js";
import { hostGpus, type GpuInventory } from "./gpu-inventory.js";
import { placementOf, type InstancePlacement } from "./instance-placement.js";
import { inlineCandidacy } from "./inline-fit.js";
import { InlineInstance } from "./inline-instance.js";
import { ThreadInstance } from "./thread-instance.js";
import { type BlsRequest, WorkerProcess } from "./worker-process.js";
import { runWarmup, type WarmupSample } from "./model-warmup.js";
import { SandboxGuard } from "./sandbox-guard.js";
import {
  DEFAULT_SANDBOX_LIMITS,
  isSandboxed,
  networkIsolationWrapper,
  type SandboxLimits,
  sandboxHeapLimitMb,
  workerRuntimeReadPaths,
} from "./worker-sandbox.js";

/** The typescript backend's default execute timeout (its execute_timeout_ms parameter). */
const DEFAULT_EXECUTE_TIMEOUT_MS = 30_000;

/**
 * Launching one backend instance of a model version (ModelInstances, in
 * model-instances.ts, keeps a pool of them): where it runs (thread or
 * process, isolationOf), where it is placed (assertPlaceable), its load and
 * warmup, and the options the pool and its launches share.
 */

export interface InstanceLaunchSpec {
  model: string;
  version: string;
  backend: string;
  modelPath: string;
  /** The model's folder (config.pbtxt, version folders); default two levels above modelPath. A sandboxed worker reads only there. */
  modelDir?: string;
  /** Config handed to the backend (the raw or completed model config). */
  config: Record<string, unknown>;
  parameters?: Record<string, string>;
  /** Backend "native": the resolved Triton backend library (see native-backend-resolver.ts). */
  native?: NativeLoadSpec;
  /** model_warmup samples every instance runs after it loads, before it serves (see model-warmup.ts). */
  warmup?: WarmupSample[];
  /** Bytes of each implicit state's initial_state.data_file, by state input name (sequence models). */
  initialStates?: ReadonlyMap<string, Buffer>;
}

export interface ModelInstancesOptions {
  /** Path of the worker process entry (packages/worker/dist/main.js). */
  workerEntry: string;
  /** Path of the backend thread entry; default thread-main.js beside workerEntry. */
  threadEntry?: string;
  /**
   * Where instances of thread-capable backends (onnxruntime, echo) run
   * unless their config says otherwise (parameter `operon_isolation`):
   * "auto" (the default: inline for a model that proves tiny, else a
   * thread; adaptive-instance.ts), "thread" or "process". User code always
   * runs in processes.
   */
  defaultIsolation?: IsolationChoice;
  /** The account worker processes run as (--worker-user); default the server's own. */
  workerIdentity?: WorkerIdentity;
  logger: Logger;
  metrics: GatewayMetrics;
  /**
   * Executions sent to one worker at a time. Unbatched models pipeline 2 to
   * hide the round trip; batching models send 1 so that requests gather into
   * the next batch while an instance is busy.
   */
  maxInFlightPerInstance?: number;
  /** Give up restarting an instance after this many failed restarts in a row. */
  maxRestartFailures?: number;
  loadTimeoutMs?: number;
  /** Serves the BLS calls of the models (an inference through the engine); unset = BLS is not available. */
  blsHandler?: InstanceBlsHandler;
  /** The GPUs KIND_GPU instances may use; default: this host's (hostGpus()). */
  gpus?: GpuInventory;
  /** Server default of each worker process's memory cap, MiB (0/absent = none); see worker-memory-cap.ts. */
  workerMemoryLimitMb?: number;
  /** Limits of sandboxed workers (worker-sandbox.ts); default DEFAULT_SANDBOX_LIMITS. */
  sandboxLimits?: SandboxLimits;
}

/** Runs one BLS call of a model at BLS depth `depth` (1 for a call made while serving a client's request). */
export type InstanceBlsHandler = (call: BlsRequest, depth: number) => Promise<{ outputs: Tensor[] }>;

export { ISOLATION_PARAMETER };

/**
 * Where a model's instances are asked to run: an InstanceIsolation, or "auto": on the gateway's event loop
 * when the model proves tiny (inline-fit.ts), on a thread otherwise (AdaptiveInstance decides, per instance).
 */
export type IsolationChoice = InstanceIsolation | "auto";

const ISOLATION_CHOICES: readonly string[] = ["auto", "thread", "process", "inline"];

/**
 * Where the instances of a model run: the config's `operon_isolation`
 * parameter, else the server default for thread-capable backends; user
 * code (any other backend) always in processes. Throws INVALID_ARG for an
 * unknown value or a thread asked for a backend that cannot have one.
 */
export function isolationOf(spec: InstanceLaunchSpec, defaultIsolation: IsolationChoice = "auto"): IsolationChoice {
  const parameters = spec.config["parameters"] as Record<string, { string_value?: string }> | undefined;
  const asked = spec.parameters?.[ISOLATION_PARAMETER] ?? parameters?.[ISOLATION_PARAMETER]?.string_value;
  const threadCapable = THREAD_CAPABLE_BACKENDS.has(spec.backend);
  if (asked === undefined || asked === "") return threadCapable ? defaultIsolation : "process";
  if (!ISOLATION_CHOICES.includes(asked)) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${spec.model}': parameter ${ISOLATION_PARAMETER} must be "auto", "thread", "process" or "inline", got "${asked}"`,
    );
  }
  if (asked !== "process" && !threadCapable) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${spec.model}': backend '${spec.backend}' runs user code, which always runs in a worker process (${ISOLATION_PARAMETER} "${asked}" is for ${[...THREAD_CAPABLE_BACKENDS].join(", ")})`,
    );
  }
  return asked as IsolationChoice;
}

/**
 * Starts one instance (thread or process, see isolationOf) where the config
 * places it (instancePlacements: its kind and GPU reach the backend as the
 * load's instanceKind/deviceId) and loads the model into it; ends it if the
 * load fails. A KIND_GPU instance on a host without that GPU is refused
 * before anything starts (never run on the CPU instead). The config's
 * model_warmup samples (spec.warmup) run before it returns.
 */
export async function launchInstance(
  spec: InstanceLaunchSpec,
  instanceName: string,
  options: ModelInstancesOptions,
): Promise<{ worker: BackendInstance; io: { inputs: IoInfo[]; outputs: IoInfo[] }; config?: Record<string, unknown> }> {
  const isolation = isolationOf(spec, options.defaultIsolation);
  const gpus = options.gpus ?? hostGpus();
  const placement = placementOf(spec.model, spec.config, instanceName, gpus.count);
  assertPlaceable(spec, placement, gpus);
  // "auto": a candidate for the event loop proves it fits once loaded (AdaptiveInstance); any other model gets a thread.
  const unfit = isolation === "auto" ? await inlineCandidacy(spec.backend, spec.modelPath, placement) : undefined;
  if (unfit !== undefined) options.logger.debug({ instance: instanceName, reason: unfit }, "instance runs on a thread");
  const startThread = (): BackendInstance =>
    ThreadInstance.start({
      entry: options.threadEntry ?? join(dirname(options.workerEntry), "thread-main.js"),
      instanceName,
      onLog: (level, message, fields) =>
        options.logger[level]({ ...fields, instance: instanceName, thread: true }, message),
    });
  const startInline = (onDuration?: (ns: number) => void): BackendInstance =>
    InlineInstance.start({
      entry: join(dirname(options.workerEntry), "in-process-backend.js"),
      instanceName,
      onLog: (level, message, fields) =>
        options.logger[level]({ ...fields, instance: instanceName, inline: true }, message),
      // An adaptive instance moves itself to a thread instead of warning.
      ...(onDuration !== undefined ? { onDuration, slowExecuteMs: Number.POSITIVE_INFINITY } : {}),
    });
  const worker: BackendInstance =
    isolation === "auto"
      ? unfit !== undefined
        ? startThread()
        : new AdaptiveInstance({
            instanceName,
            startInline,
            startThread,
            prepareThread: async (thread) => {
              if (spec.warmup !== undefined && spec.warmup.length > 0)
                await runWarmup(thread, spec.model, instanceName, spec.warmup);
            },
            maxBatchSize: Number(spec.config["max_batch_size"] ?? 0),
            onPlaced: (where, reason) =>
              options.logger.info(
                { instance: instanceName, isolation: where, reason },
                where === "inline"
                  ? `instance '${instanceName}' runs on the gateway's event loop: ${reason}`
                  : `instance '${instanceName}' runs on a thread: ${reason}`,
              ),
            onMoveFailed: (error) =>
              options.logger.error(
                { instance: instanceName, err: error },
                `instance '${instanceName}' could not move to a thread and stays on the event loop: ${error.message}`,
              ),
          })
      : isolation === "thread"
        ? startThread()
        : isolation === "inline"
          ? startInline()
          : await spawnWorker(spec, instanceName, options);
  try {
    const load = {
      backend: spec.backend,
      modelPath: spec.modelPath,
      config: spec.config,
      ...(spec.parameters !== undefined ? { parameters: spec.parameters } : {}),
      ...(spec.native !== undefined ? { native: spec.native } : {}),
      instanceKind: placement.kind,
      ...(placement.device !== null ? { deviceId: placement.device } : {}),
    };
    const loaded = await withTimeout(
      worker.load(load),
      options.loadTimeoutMs ?? 120_000,
      `loading instance '${instanceName}'`,
    );
    // Triton: an instance is warmed before it serves, so the model is READY only after its warmup.
    if (spec.warmup !== undefined && spec.warmup.length > 0)
      await runWarmup(worker, spec.model, instanceName, spec.warmup);
    const io = { inputs: loaded.inputs, outputs: loaded.outputs };
    return { worker, io, ...("config" in loaded && loaded.config !== undefined ? { config: loaded.config } : {}) };
  } catch (error) {
    await worker.stop(1000).catch(() => undefined);
    throw error;
  }
}

/** Starts a worker process for the instance, sandboxed (worker-sandbox.ts) when the model asks for it. */
async function spawnWorker(
  spec: InstanceLaunchSpec,
  instanceName: string,
  options: ModelInstancesOptions,
): Promise<WorkerProcess> {
  const sandboxed = isSandboxed(spec.model, spec.backend, spec.config, spec.parameters);
  const limits = options.sandboxLimits ?? DEFAULT_SANDBOX_LIMITS;
  const sandbox = sandboxed
    ? {
        // Its model's folder (config, versions, the files beside them: models read labels from args.modelDir).
        readPaths: [
          ...workerRuntimeReadPaths(options.workerEntry),
          ...realAndGiven(spec.modelDir ?? dirname(dirname(spec.modelPath))),
        ],
        heapLimitMb: sandboxHeapLimitMb(limits),
        wrapper: networkIsolationWrapper(options.workerIdentity),
      }
    : undefined;
  const worker = await WorkerProcess.spawn({
    entry: options.workerEntry,
    instanceName,
    ...(options.workerIdentity !== undefined ? { identity: options.workerIdentity } : {}),
    ...(sandbox !== undefined ? { sandbox } : {}),
    onLog: (line) => relayWorkerLog(options.logger, instanceName, line),
  });
  if (sandbox !== undefined) new SandboxGuard(worker, { ...limits, executeTimeoutMs: executeTimeoutMsOf(spec) });
  return worker;
}

/** A folder as given and by its real path (the permission model compares paths as resolved, without following links). */
function realAndGiven(dir: string): string[] {
  const given = resolve(dir);
  const real = realpathSync(given);
  return real === given ? [given] : [given, real];
}

/** The model's execute_timeout_ms parameter (the typescript backend's, which checks it at load), else its default. */
function executeTimeoutMsOf(spec: InstanceLaunchSpec): number {
  const parameters = spec.config["parameters"] as Record<string, { string_value?: string }> | undefined;
  const raw = spec.parameters?.["execute_timeout_ms"] ?? parameters?.["execute_timeout_ms"]?.string_value;
  const parsed = Number(raw);
  return raw !== undefined && Number.isFinite(parsed) && parsed > 0 ? parsed : DEFAULT_EXECUTE_TIMEOUT_MS;
}

/** Refuses a KIND_GPU instance whose GPU this host does not have (UNAVAILABLE, saying why). */
export function assertPlaceable(spec: InstanceLaunchSpec, placement: InstancePlacement, gpus: GpuInventory): void {
  if (placement.kind !== "KIND_GPU") return;
  const where = `model '${spec.model}': instance '${placement.name}' is KIND_GPU on GPU ${placement.device}`;
  if (gpus.count === 0) {
    throw new OperonError(
      "UNAVAILABLE",
      `${where}, but this host has no usable GPU: ${gpus.reason ?? "none found"}; use kind KIND_CPU to run it on the CPU`,
    );
  }
  if (placement.device === null || placement.device < 0 || placement.device >= gpus.count) {
    throw new OperonError(
      "UNAVAILABLE",
      `${where}, but this host has ${gpus.count} GPU${gpus.count === 1 ? "" : "s"} (0..${gpus.count - 1})${gpus.reason !== undefined ? `: ${gpus.reason}` : ""}`,
    );
  }
}

/** Worker stderr carries JSON log lines; re-log them through the gateway's logger at their level. */
function relayWorkerLog(logger: Logger, instance: string, line: string): void {
  let record: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed !== null && typeof parsed === "object") record = parsed as Record<string, unknown>;
  } catch {
    record = undefined; // plain text, e.g. ONNX Runtime's own native messages
  }
  if (record === undefined) {
    logger.info({ instance, worker: true }, line);
    return;
  }
  const { msg, level, time: _time, pid: workerPid, ...fields } = record;
  const method = level === "error" || level === "warn" || level === "debug" ? level : "info";
  logger[method]({ ...fields, instance, workerPid }, typeof msg === "string" ? msg : line);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OperonError("UNAVAILABLE", `${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
