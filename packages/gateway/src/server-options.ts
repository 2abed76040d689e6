import { z } from "zod";
import type { ApiKeyRing } from "./auth/api-key-ring.js";
import type { Logger } from "./observability/logger.js";

/**
 * The gateway's options: one object, checked once by startOperonServer,
 * with tritonserver's defaults kept here (the CLI's flags take their
 * defaults from GATEWAY_DEFAULTS). Names follow tritonserver's flags.
 */
export const GATEWAY_DEFAULTS = {
  httpAddress: "127.0.0.1",
  httpPort: 8000,
  grpcAddress: "127.0.0.1",
  grpcPort: 8001,
  metricsAddress: "127.0.0.1",
  metricsPort: 8002,
  allowHttp: true,
  allowGrpc: true,
  allowMetrics: true,
  /** Triton's --allow-gpu-metrics: nv_gpu_* from NVML when the host has it. */
  allowGpuMetrics: true,
  /** Triton's --metrics-interval-ms: how often CPU and GPU metrics are read. */
  metricsIntervalMs: 2000,
  modelControlMode: "none",
  loadModels: [] as readonly string[],
  repositoryPollSecs: 15,
  strictModelConfig: false,
  strictReadiness: true,
  exitOnError: true,
  exitTimeoutSecs: 30,
  dataDir: ".operon",
  maxUploadBytes: 256 * 1024 * 1024,
  /** Triton's --http-max-input-size default. */
  httpMaxBodyBytes: 64 * 1024 * 1024,
  grpcInferMaxMessageBytes: 64 * 1024 * 1024,
  backendIsolation: "auto",
  /** Memory cap of each backend worker process, MiB; 0 = none (a model's worker_memory_limit_mb parameter wins). */
  workerMemoryLimitMb: 0,
  /** Memory of each sandboxed worker (custom steps), MiB: resident cap, and half of it as its V8 heap. */
  sandboxMemoryMb: 512,
  /** CPU time one execution of a sandboxed model may use, ms. */
  sandboxCpuMs: 10_000,
  defaultMaxBatchSize: 4,
  /** Elements one BYTES tensor may hold (each becomes a JS value somewhere). */
  maxBytesElements: 1 << 20,
  /** Longest pause inside a request body (and the grace before the minimum rate applies). */
  httpBodyTimeoutSecs: 10,
  /** Slowest average rate a request body may arrive at once the grace has passed. */
  httpMinBodyBytesPerSec: 16 * 1024,
  /** Longest time from a connection's first byte (or a keep-alive request's) to its complete headers. */
  httpHeadersTimeoutSecs: 20,
  /** Open HTTP connections from one client address. */
  httpMaxConnectionsPerAddress: 1024,
  /** A gzip/deflate body may inflate to at most this many times its size. */
  httpMaxInflateRatio: 100,
  decodeMaxHeapMb: 1024,
  decodeTimeoutSecs: 10,
  /** The metrics port answers only with an API key when keys are required. */
  metricsRequireKey: false,
} as const;

const port = z.number().int().min(0).max(65535);
const count = z.number().int().min(0);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

const operonServerOptionsSchema = z.object({
  /** Checked for existence by startOperonServer (its message names the flag). */
  modelRepositories: z.array(z.string()),
  httpAddress: z.string().default(GATEWAY_DEFAULTS.httpAddress),
  httpPort: port.default(GATEWAY_DEFAULTS.httpPort),
  grpcAddress: z.string().default(GATEWAY_DEFAULTS.grpcAddress),
  grpcPort: port.default(GATEWAY_DEFAULTS.grpcPort),
  metricsAddress: z.string().default(GATEWAY_DEFAULTS.metricsAddress),
  metricsPort: port.default(GATEWAY_DEFAULTS.metricsPort),
  allowHttp: z.boolean().default(GATEWAY_DEFAULTS.allowHttp),
  allowGrpc: z.boolean().default(GATEWAY_DEFAULTS.allowGrpc),
  allowMetrics: z.boolean().default(GATEWAY_DEFAULTS.allowMetrics),
  allowGpuMetrics: z.boolean().default(GATEWAY_DEFAULTS.allowGpuMetrics),
  metricsIntervalMs: z.number().int().min(100).max(3_600_000).default(GATEWAY_DEFAULTS.metricsIntervalMs),
  modelControlMode: z.enum(["none", "poll", "explicit"]).default(GATEWAY_DEFAULTS.modelControlMode),
  loadModels: z.array(z.string()).default(() => [...GATEWAY_DEFAULTS.loadModels]),
  repositoryPollSecs: count.default(GATEWAY_DEFAULTS.repositoryPollSecs),
  strictModelConfig: z.boolean().default(GATEWAY_DEFAULTS.strictModelConfig),
  strictReadiness: z.boolean().default(GATEWAY_DEFAULTS.strictReadiness),
  exitOnError: z.boolean().default(GATEWAY_DEFAULTS.exitOnError),
  exitTimeoutSecs: count.default(GATEWAY_DEFAULTS.exitTimeoutSecs),
  dataDir: z.string().default(GATEWAY_DEFAULTS.dataDir),
  maxUploadBytes: z.number().int().positive().default(GATEWAY_DEFAULTS.maxUploadBytes),
  httpMaxBodyBytes: z.number().int().positive().default(GATEWAY_DEFAULTS.httpMaxBodyBytes),
  /** Request body bytes held at once over all HTTP requests; default max(4 × httpMaxBodyBytes, a model upload + httpMaxBodyBytes). */
  httpMaxInflightBodyBytes: z.number().int().positive().optional(),
  /** ModelInfer / ModelStreamInfer bytes held at once over all gRPC calls (GrpcMessageBudget); default 4 × grpcInferMaxMessageBytes. */
  grpcMaxInflightMessageBytes: z.number().int().positive().optional(),
  /** Elements one BYTES tensor may hold (INVALID_ARG beyond, naming --max-bytes-elements). */
  maxBytesElements: z.number().int().positive().default(GATEWAY_DEFAULTS.maxBytesElements),
  /** Slow bodies (frontends/http/slow-body-guard.ts): the longest pause, and the grace before the minimum rate applies. */
  httpBodyTimeoutSecs: z.number().positive().default(GATEWAY_DEFAULTS.httpBodyTimeoutSecs),
  httpMinBodyBytesPerSec: count.default(GATEWAY_DEFAULTS.httpMinBodyBytesPerSec),
  /** A connection that has not sent complete headers this long after its request began is closed with 408. */
  httpHeadersTimeoutSecs: z.number().positive().default(GATEWAY_DEFAULTS.httpHeadersTimeoutSecs),
  /** Open HTTP connections in total (default from the process's file descriptor limit) and per client address. */
  httpMaxConnections: z.number().int().positive().optional(),
  httpMaxConnectionsPerAddress: z.number().int().positive().default(GATEWAY_DEFAULTS.httpMaxConnectionsPerAddress),
  /** A gzip/deflate body inflating to more than this many times its size is refused (413). */
  httpMaxInflateRatio: z.number().positive().default(GATEWAY_DEFAULTS.httpMaxInflateRatio),
  /** The metrics port needs an API key (any valid one) when keys are checked (`access`); default open, as in Triton. */
  metricsRequireKey: z.boolean().default(GATEWAY_DEFAULTS.metricsRequireKey),
  /** Decode threads (frontends/decode/decode-pool.ts); default from the core count. */
  decodeThreads: z.number().int().positive().optional(),
  /** Heap of each decode thread, MiB, and the longest one body may take to decode, seconds. */
  decodeMaxHeapMb: z.number().int().min(16).default(GATEWAY_DEFAULTS.decodeMaxHeapMb),
  decodeTimeoutSecs: z.number().positive().default(GATEWAY_DEFAULTS.decodeTimeoutSecs),
  /** Largest gRPC ModelInfer / ModelStreamInfer message (RESOURCE_EXHAUSTED beyond). */
  grpcInferMaxMessageBytes: z.number().int().positive().default(GATEWAY_DEFAULTS.grpcInferMaxMessageBytes),
  /**
   * Where instances of trusted native backends (onnxruntime, echo) run
   * unless a model's config says otherwise (`operon_isolation`): "auto"
   * (default: on the gateway's event loop for an ONNX Runtime model on the
   * CPU that proves tiny, instances/inline-fit.ts; on a thread otherwise),
   * "thread" or "process". User code (typescript backend) always runs in processes.
   */
  backendIsolation: z.enum(["auto", "thread", "process"]).default(GATEWAY_DEFAULTS.backendIsolation),
  defaultMaxBatchSize: count.default(GATEWAY_DEFAULTS.defaultMaxBatchSize),
  /** Memory cap of each worker process, MiB (0 = none): a worker over it is recycled between requests (instances/worker-memory-cap.ts). */
  workerMemoryLimitMb: count.default(GATEWAY_DEFAULTS.workerMemoryLimitMb),
  /** Limits of sandboxed workers (operon_sandbox models: custom steps); see instances/worker-sandbox.ts. */
  sandboxMemoryMb: z.number().int().min(64).default(GATEWAY_DEFAULTS.sandboxMemoryMb),
  sandboxCpuMs: z.number().int().positive().default(GATEWAY_DEFAULTS.sandboxCpuMs),
  /**
   * Triton's --backend-directory: where a native backend `<name>` is found
   * as <dir>/<name>/libtriton_<name>.so (after the model's version folder and
   * folder). Default: Operon's built backends (native/build/tritonserver/backends).
   */
  backendDirectory: z.string().min(1).optional(),
  /** Triton's --backend-config, gathered per backend: {<name>: {<key>: <value>}}; reaches TRITONBACKEND_BackendConfig. */
  backendConfig: z.record(z.string(), z.record(z.string(), z.string())).default({}),
  /** tritonserver's --trace-config entries, as given (observability/trace-config.ts parses them). */
  traceConfig: z.array(z.string()).default([]),
  /**
   * Let the load API's `file:` uploads bring a native backend (a .so among
   * the files, or a config naming a non-built-in backend): native code runs
   * with the server's rights. Off by default; even on, only the admin scope may.
   */
  allowNativeUploads: z.boolean().default(false),
  /** The admin's limits on instances and threads per model and host (repository/resource-limits.ts); default from the core count. */
  resourceLimits: z
    .object({
      maxInstancesPerModel: z.number().int().positive(),
      maxThreadsPerInstance: z.number().int().positive(),
      maxInstancesPerHost: z.number().int().positive(),
    })
    .optional(),
  /**
   * Size of the server-wide response cache (`--cache-config local,size=<bytes>`);
   * undefined = no cache, as in Triton, and models' response_cache settings are ignored.
   */
  cacheSizeBytes: z.number().int().positive().optional(),
  /**
   * What a request for a model the resource scheduler unloaded gets
   * (repository/parked-models.ts): "wait" for its load up to waitMs (default),
   * or "retry-after": 503 with Retry-After at once. Default DEFAULT_PARKED_MODEL_POLICY.
   */
  parkedModels: z
    .object({
      mode: z.enum(["wait", "retry-after"]),
      waitMs: z.number().int().min(0),
      retryAfterSecs: z.number().int().positive(),
    })
    .optional(),
  /** Path of the worker process entry (packages/worker/dist/main.js); the thread entry is thread-main.js beside it. */
  workerEntry: z.string().min(1),
  /** The account worker processes (user code) run as, when the server runs as root (--worker-user); default the server's own. */
  workerIdentity: z
    .object({
      uid: z.number().int().min(0),
      gid: z.number().int().min(0),
      name: z.string().min(1),
      home: z.string().min(1),
    })
    .optional(),
  logger: z.custom<Logger>((value) => isObject(value) && typeof value["info"] === "function", {
    error: "a logger (createLogger)",
  }),
  /**
   * API keys (the control plane's grants, kept current by the caller with
   * ring.replaceAll). Undefined = no key checks at all, as before keys
   * existed. See GatewayAccessPolicy for the rules; loopback-only is
   * derived from the HTTP and gRPC addresses.
   */
  access: z
    .custom<{ ring: ApiKeyRing; requireApiKey: boolean; anonymousModelControl?: boolean }>(
      (value) => isObject(value) && isObject(value["ring"]) && typeof value["requireApiKey"] === "boolean",
    )
    .optional(),
});

/** What startOperonServer takes: every field with a default may be left out. */
export type OperonServerOptions = z.input<typeof operonServerOptionsSchema>;
/** The options with the defaults filled in. */
export type ResolvedOperonServerOptions = z.output<typeof operonServerOptionsSchema>;

export function resolveOperonServerOptions(options: OperonServerOptions): ResolvedOperonServerOptions {
  return operonServerOptionsSchema.parse(options);
}
