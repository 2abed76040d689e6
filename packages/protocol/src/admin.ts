import { z } from "zod";

/**
 * The contract between the gateway and the control plane: Operon's admin
 * extension of the gateway's HTTP API (beyond KServe v2 and Triton's
 * extensions) and the parts of Triton's API the control plane reads. Each
 * shape is written once, as a zod schema, and its type is inferred from it:
 * the gateway builds the types; the control plane parses every answer with
 * the schemas (services/gateway/gateway-client.ts), so a drift between the
 * two is a clear error, not an `undefined` deep inside.
 */

/**
 * GET /v2/operon/workers → WorkersResponse: one entry per model instance
 * (a worker process), for the console's workers page and the usage sampler.
 */
const workerInstanceInfoSchema = z.object({
  model: z.string(),
  version: z.string(),
  /** Triton's instance name, e.g. `add_sub_0_0`. */
  instance: z.string(),
  /** The backend hosting the model (onnxruntime, typescript, ...). */
  backend: z.string(),
  kind: z.enum(["CPU", "GPU"]),
  /** GPU index for KIND_GPU instances; null on CPU. */
  device: z.number().nullable(),
  /**
   * "thread": a thread of the gateway process (pid is the gateway's, tid the
   * thread's; cpuSeconds is the thread's own, its memory is the gateway's, so
   * rssBytes is null); "process": a worker process of its own; "inline": the
   * gateway's event loop itself (pid is the gateway's; cpuSeconds is the time its
   * executions held the event loop, part of the gateway's CPU time; its memory is
   * the gateway's, so rssBytes is null).
   */
  isolation: z.enum(["thread", "process", "inline"]),
  /** Linux thread id of a thread instance; absent for processes and elsewhere. */
  tid: z.number().optional(),
  /** null while the worker is (re)starting. */
  pid: z.number().nullable(),
  state: z.enum(["READY", "RESTARTING", "FAILED"]),
  inFlight: z.number(),
  /** Restarts after crashes since the model version was loaded. */
  restarts: z.number(),
  /** ISO time the current worker process started. */
  startedAt: z.string().nullable(),
  /** CPU time (user + system) the current worker process has used, seconds; null when unknown. */
  cpuSeconds: z.number().nullable(),
  /** Resident memory of the worker process, bytes; null when unknown. */
  rssBytes: z.number().nullable(),
});
export type WorkerInstanceInfo = z.infer<typeof workerInstanceInfoSchema>;

const gpuInfoSchema = z.object({
  /** The CUDA ordinal instance_group gpus and WorkerInstanceInfo.device name; null when CUDA_VISIBLE_DEVICES hides it. */
  device: z.number().nullable(),
  uuid: z.string(),
  /** 0..1; null when the device does not report it. */
  utilization: z.number().nullable(),
  memoryTotalBytes: z.number().nullable(),
  memoryUsedBytes: z.number().nullable(),
  powerUsageWatts: z.number().nullable(),
});
export type GpuInfo = z.infer<typeof gpuInfoSchema>;

export const workersResponseSchema = z.object({
  workers: z.array(workerInstanceInfoSchema),
  /** CPU cores of the gateway's host, for turning CPU seconds into utilization. */
  hostCpuCores: z.number(),
  /** The gateway process's own CPU seconds and resident memory. */
  gateway: z.object({ pid: z.number(), cpuSeconds: z.number(), rssBytes: z.number() }),
  /**
   * The host's GPUs as NVML last read them (the readings behind nv_gpu_*); empty
   * when the gateway has no GPU metrics (no driver library, --allow-gpu-metrics false).
   * Absent from gateways older than the GPU metrics: read as none.
   */
  gpus: z.array(gpuInfoSchema).default([]),
  /**
   * Where this gateway runs ONNX Runtime (and echo) instances whose config names no
   * `operon_isolation` (--backend-isolation). Absent from older gateways: read as unknown.
   */
  defaultIsolation: z.enum(["auto", "thread", "process"]).optional(),
});
/** What the gateway sends and the control plane reads (gpus always present once parsed). */
export type WorkersResponse = z.infer<typeof workersResponseSchema>;

/** GET /v2 (KServe v2 server metadata). */
export const serverMetadataSchema = z.object({
  name: z.string(),
  version: z.string(),
  extensions: z.array(z.string()),
});
export type ServerMetadataResponse = z.infer<typeof serverMetadataSchema>;

/** Triton model states as shown by the repository index. */
const modelStateSchema = z.enum(["UNKNOWN", "READY", "UNAVAILABLE", "LOADING", "UNLOADING"]);
export type ModelState = z.infer<typeof modelStateSchema>;

/** POST /v2/repository/index (Triton's model repository extension): one entry. */
const repositoryIndexEntrySchema = z.object({
  name: z.string(),
  version: z.string().optional(),
  state: modelStateSchema.optional(),
  reason: z.string().optional(),
  /**
   * Operon's addition (HTTP only; gRPC's RepositoryIndex has no field for
   * it): load warnings of a READY version, e.g. config fields Operon does
   * not implement. Absent when there are none.
   */
  warnings: z.array(z.string()).optional(),
});
export type RepositoryIndexEntry = z.infer<typeof repositoryIndexEntrySchema>;
export const repositoryIndexSchema = z.array(repositoryIndexEntrySchema);

/** Triton's statistics JSON (extension_statistics.md). Durations in ns. */
const durationStatSchema = z.object({ count: z.number(), ns: z.number() });
export type DurationStat = z.infer<typeof durationStatSchema>;

const inferStatisticsSchema = z.object({
  success: durationStatSchema,
  fail: durationStatSchema,
  queue: durationStatSchema,
  compute_input: durationStatSchema,
  compute_infer: durationStatSchema,
  compute_output: durationStatSchema,
  cache_hit: durationStatSchema,
  cache_miss: durationStatSchema,
});
export type InferStatistics = z.infer<typeof inferStatisticsSchema>;

const batchStatisticsSchema = z.object({
  batch_size: z.number(),
  compute_input: durationStatSchema,
  compute_infer: durationStatSchema,
  compute_output: durationStatSchema,
});
export type BatchStatistics = z.infer<typeof batchStatisticsSchema>;

/** Tagged perf requests of a model version (perf-traffic.ts): counts and summed request durations. */
const perfTrafficCountsSchema = z.object({
  success_count: z.number(),
  success_ns: z.number(),
  fail_count: z.number(),
  fail_ns: z.number(),
  inference_count: z.number(),
});
export type PerfTrafficCounts = z.infer<typeof perfTrafficCountsSchema>;

/** One model version's entry of GET /v2/models[/<name>]/stats (Triton's statistics extension). */
const modelStatisticsSchema = z.object({
  name: z.string(),
  version: z.string(),
  /** ms since epoch of the last inference, 0 if none. */
  last_inference: z.number(),
  inference_count: z.number(),
  execution_count: z.number(),
  inference_stats: inferStatisticsSchema,
  /** Decoupled models' per-response statistics, keyed by the response's index. */
  response_stats: z.record(z.string(), z.unknown()),
  batch_stats: z.array(batchStatisticsSchema),
  memory_usage: z.array(z.object({ type: z.string(), id: z.number(), byte_size: z.number() })),
  /** Operon's extension (HTTP only): the requests above that were tagged perf traffic (perf-traffic.ts). */
  operon_perf_traffic: perfTrafficCountsSchema.optional(),
});
export type ModelStatistics = z.infer<typeof modelStatisticsSchema>;

/** GET /v2/models[/<name>]/stats: the envelope. */
export const modelStatisticsResponseSchema = z.object({ model_stats: z.array(modelStatisticsSchema) });

/** POST /v2/operon/models/<name>/instances: the resource scheduler's lever. */
export const scaleModelResponseSchema = z.object({
  model: z.string(),
  from: z.number(),
  to: z.number(),
  /** The kind its instances run on now (a body's `kind` moves them); absent from gateways older than the move. */
  kind: z.enum(["KIND_CPU", "KIND_GPU"]).optional(),
});
export type ScaleModelResponse = z.infer<typeof scaleModelResponseSchema>;

/** A served model's instances now and as its config asked at load (GET /v2/operon/scaling). */
export const modelScalingSchema = z.object({
  model: z.string(),
  instances: z.number(),
  configuredInstances: z.number(),
  queued: z.number(),
  /** The kind its instances run on; absent from gateways older than the hardware fit (read as CPU). */
  kind: z.enum(["CPU", "GPU"]).default("CPU"),
  /** Its config's operon_hardware_kinds parameter as written (e.g. "CPU,GPU"); null when it has none. */
  hardwareKinds: z.string().nullable().default(null),
});
export type ModelScaling = z.infer<typeof modelScalingSchema>;
/**
 * A served operator's requests in flight now, and the calls of each model its steps completed since it was loaded
 * (each try of a retry and a fallback model's calls included; GET /v2/operon/scaling: operators). The resource
 * scheduler takes the calls' change per period from each model's completions to find its direct requests.
 */
export const operatorLoadSchema = z.object({
  operator: z.string(),
  inFlight: z.number(),
  /** Absent from gateways older than the per-model call counts. */
  modelCalls: z.record(z.string(), z.number()).optional(),
});
export type OperatorLoad = z.infer<typeof operatorLoadSchema>;
export const scalingStateSchema = z.object({
  models: z.array(modelScalingSchema),
  parked: z.array(z.string()),
  /** Absent from gateways older than the operator-aware scheduler. */
  operators: z.array(operatorLoadSchema).default([]),
});

/** GET /v2/operon/parked: models the resource scheduler unloaded (they load again on demand). */
export const parkedModelsSchema = z.object({ models: z.array(z.string()) });

/** An operator as the gateway serves it (GET /v2/operators, POST /v2/operators/<name>). */
export const gatewayOperatorSchema = z.object({
  name: z.string(),
  version: z.string(),
  source: z.enum(["api", "repository"]),
  spec: z.record(z.string(), z.unknown()),
  /** Step models that cannot serve now (the operator is degraded while any is listed). */
  unreadyModels: z.array(z.string()).optional(),
  /** Each step's circuit breaker state now (steps with a `circuitBreaker` only); absent from older gateways. */
  breakers: z.array(z.object({ step: z.string(), state: z.enum(["closed", "open", "half-open"]) })).optional(),
});
export type GatewayOperator = z.infer<typeof gatewayOperatorSchema>;
export const operatorListSchema = z.object({ operators: z.array(gatewayOperatorSchema) });

/** One problem in an operator spec; `path` names the field when the gateway knows it, `code` is stable for programs. */
export const operatorProblemSchema = z.object({
  code: z.string().optional(),
  path: z.string().optional(),
  message: z.string(),
});
export type OperatorProblem = z.infer<typeof operatorProblemSchema>;

/** POST /v2/operators/<name>/validate: problems are data; a spec refused outright answers 400 with `error`. */
export const operatorValidationSchema = z.object({ valid: z.boolean(), problems: z.array(operatorProblemSchema) });
export type OperatorValidation = z.infer<typeof operatorValidationSchema>;
