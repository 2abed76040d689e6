import { Command, Option } from "commander";
import { RESOURCE_SCHEDULER_DEFAULTS } from "@operon/api/resource-scheduler-defaults";
import { DEFAULT_PARKED_MODEL_POLICY, defaultResourceLimits, GATEWAY_DEFAULTS } from "@operon/gateway/server";
import { parseBackendConfig } from "./backend-config-flag.js";
import {
  collect,
  parseBool,
  parseCacheConfig,
  parseFraction,
  parseNonNegativeInt,
  parsePort,
  parsePositiveInt,
  parsePositiveNumber,
  parseTrustedProxy,
} from "./serve-flag-parsers.js";
import { withFlagEnvironmentVariables } from "./serve-flag-environment.js";

/**
 * `operon serve`'s flags: tritonserver's names and defaults, so that
 * scripts written for Triton start Operon unchanged, then Operon's own.
 * Booleans take Triton's `--flag=true|false` form; a bare `--flag` means
 * true. Each flag can also be set by its environment variable
 * (serve-flag-environment.ts). serve-flags.ts checks the parsed whole;
 * serve-command.ts wires the server from it.
 */
export function addServeFlags(command: Command): Command {
  return (
    withFlagEnvironmentVariables(command)
      .requiredOption(
        "--model-repository <path>",
        "model repository folder (repeatable; the first one wins on name clashes)",
        collect,
      )
      .option(
        "--http-port <port>",
        "HTTP/REST port (KServe v2 + Triton extensions)",
        parsePort,
        GATEWAY_DEFAULTS.httpPort,
      )
      .option(
        "--grpc-port <port>",
        "gRPC port (inference.GRPCInferenceService + grpc.health.v1)",
        parsePort,
        GATEWAY_DEFAULTS.grpcPort,
      )
      .option(
        "--metrics-port <port>",
        "Prometheus metrics port (GET /metrics)",
        parsePort,
        GATEWAY_DEFAULTS.metricsPort,
      )
      .option(
        "--http-address <address>",
        "HTTP listen address; default 127.0.0.1 (loopback only), unlike Triton's 0.0.0.0",
        GATEWAY_DEFAULTS.httpAddress,
      )
      .option(
        "--grpc-address <address>",
        "gRPC listen address; default 127.0.0.1 (loopback only), unlike Triton's 0.0.0.0",
        GATEWAY_DEFAULTS.grpcAddress,
      )
      .option(
        "--metrics-address <address>",
        "metrics listen address; default 127.0.0.1 (loopback only)",
        GATEWAY_DEFAULTS.metricsAddress,
      )
      .option("--allow-http [bool]", "serve HTTP/REST", parseBool, GATEWAY_DEFAULTS.allowHttp)
      .option("--allow-grpc [bool]", "serve gRPC", parseBool, GATEWAY_DEFAULTS.allowGrpc)
      .option("--allow-metrics [bool]", "serve Prometheus metrics", parseBool, GATEWAY_DEFAULTS.allowMetrics)
      .option(
        "--allow-gpu-metrics [bool]",
        "export nv_gpu_* (read through NVML, libnvidia-ml.so.1; OPERON_NVML_LIB overrides the path) when the host has NVIDIA GPUs",
        parseBool,
        GATEWAY_DEFAULTS.allowGpuMetrics,
      )
      .option(
        "--metrics-interval-ms <ms>",
        "how often CPU and GPU metrics are read (at least 100)",
        parsePositiveInt,
        GATEWAY_DEFAULTS.metricsIntervalMs,
      )
      .addOption(
        new Option(
          "--model-control-mode <mode>",
          "none: load every model at start, no load/unload API; poll: also reload on repository changes every --repository-poll-secs; explicit: load only --load-model models, then the load/unload API",
        )
          .choices(["none", "poll", "explicit"])
          .default(GATEWAY_DEFAULTS.modelControlMode),
      )
      .addOption(
        new Option(
          "--backend-isolation <mode>",
          "where ONNX Runtime (and echo) instances run unless a model's config parameter operon_isolation says otherwise: auto = on the gateway's event loop for a CPU ONNX model that proves tiny (its largest batch runs in under 250 µs; moved to a thread if it runs long), else a thread; thread = a thread of the gateway process (fastest; a native crash takes the server down, as in Triton), process = a worker process each (isolated). TypeScript models always run in processes",
        )
          .choices(["auto", "thread", "process"])
          .default(GATEWAY_DEFAULTS.backendIsolation),
      )
      .option("--load-model <name>", "model to load at start in explicit mode (repeatable; '*' = all)", collect, [])
      .option(
        "--repository-poll-secs <secs>",
        "poll interval of the repositories in poll mode",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.repositoryPollSecs,
      )
      .option(
        "--strict-model-config [bool]",
        "require a complete config.pbtxt; do not auto-complete from the model file",
        parseBool,
        GATEWAY_DEFAULTS.strictModelConfig,
      )
      .option(
        "--strict-readiness [bool]",
        "report ready only when every model is ready",
        parseBool,
        GATEWAY_DEFAULTS.strictReadiness,
      )
      .option(
        "--exit-on-error [bool]",
        "exit when a model fails to load at start",
        parseBool,
        GATEWAY_DEFAULTS.exitOnError,
      )
      .option(
        "--exit-timeout-secs <secs>",
        "on SIGTERM/SIGINT, how long to wait for in-flight requests",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.exitTimeoutSecs,
      )
      .option("--log-verbose <level>", "verbose logging level; >0 logs debug detail", parseNonNegativeInt, 0)
      .option(
        "--log-file <path>",
        "where the JSON log goes: a file, or - for stdout; default stdout, or <data-dir>/logs/operon.log when stdout is a terminal",
      )
      .option("--data-dir <path>", "where Operon keeps its own files (uploaded models)", GATEWAY_DEFAULTS.dataDir)
      .option(
        "--max-upload-bytes <bytes>",
        "largest total size of files uploaded with one model load request",
        parsePositiveInt,
        GATEWAY_DEFAULTS.maxUploadBytes,
      )
      .option(
        "--http-max-body-bytes <bytes>",
        "largest HTTP request body accepted (Triton's --http-max-input-size default, 64 MiB); a model load request may carry up to --max-upload-bytes of files besides",
        parsePositiveInt,
        GATEWAY_DEFAULTS.httpMaxBodyBytes,
      )
      .option(
        "--http-max-inflight-body-bytes <bytes>",
        "request body bytes held at once over all HTTP requests; beyond it new bodies get 503 with Retry-After (default: 4 x --http-max-body-bytes, at least one upload more)",
        parsePositiveInt,
      )
      .option(
        "--grpc-infer-max-message-bytes <bytes>",
        "largest gRPC ModelInfer / ModelStreamInfer message (RESOURCE_EXHAUSTED beyond)",
        parsePositiveInt,
        GATEWAY_DEFAULTS.grpcInferMaxMessageBytes,
      )
      .option(
        "--grpc-max-inflight-message-bytes <bytes>",
        "ModelInfer / ModelStreamInfer message bytes held at once over all gRPC calls and streams; beyond it a new message gets RESOURCE_EXHAUSTED (default: 4 x --grpc-infer-max-message-bytes)",
        parsePositiveInt,
      )
      .option(
        "--max-bytes-elements <n>",
        "most elements in one BYTES tensor (each becomes a JS value somewhere); beyond it the request is refused with 400 / INVALID_ARGUMENT",
        parsePositiveInt,
        GATEWAY_DEFAULTS.maxBytesElements,
      )
      .option(
        "--http-body-timeout-secs <secs>",
        "longest pause inside an HTTP request body, and the grace before --http-min-body-bytes-per-sec applies; a slower body gets 408 and its connection is closed",
        parsePositiveInt,
        GATEWAY_DEFAULTS.httpBodyTimeoutSecs,
      )
      .option(
        "--http-min-body-bytes-per-sec <bytes>",
        "slowest average rate an HTTP request body may arrive at after the grace (0 = no minimum)",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.httpMinBodyBytesPerSec,
      )
      .option(
        "--http-headers-timeout-secs <secs>",
        "a connection whose request headers are not complete this long after the request began is closed with 408",
        parsePositiveInt,
        GATEWAY_DEFAULTS.httpHeadersTimeoutSecs,
      )
      .option(
        "--http-max-connections <n>",
        "open HTTP connections at once; beyond it a new connection gets 503 and is closed (default: half the process's open-file limit, at most 16384)",
        parsePositiveInt,
      )
      .option(
        "--http-max-connections-per-address <n>",
        "open HTTP connections at once from one client address (503 and closed beyond)",
        parsePositiveInt,
        GATEWAY_DEFAULTS.httpMaxConnectionsPerAddress,
      )
      .option(
        "--http-max-inflate-ratio <n>",
        "a gzip/deflate request body may inflate to at most this many times its size (413 beyond)",
        parsePositiveInt,
        GATEWAY_DEFAULTS.httpMaxInflateRatio,
      )
      .option(
        "--decode-threads <n>",
        "threads that decode large request bodies off the event loop (default: 1 per 4 cores, at least 2, at most 4)",
        parsePositiveInt,
      )
      .option(
        "--decode-max-heap-mb <MiB>",
        "heap of each decode thread; a body that needs more fails alone (400) and its thread is replaced",
        parsePositiveInt,
        GATEWAY_DEFAULTS.decodeMaxHeapMb,
      )
      .option(
        "--decode-timeout-secs <secs>",
        "longest one body may take to decode; beyond it the body fails alone (400) and its thread is replaced",
        parsePositiveInt,
        GATEWAY_DEFAULTS.decodeTimeoutSecs,
      )
      .option(
        "--cache-config <cache,key=value>",
        "response cache, Triton's syntax: 'local,size=<bytes>' (repeatable, one or more key=value per use); models opt in with response_cache { enable: true }. Default: no cache",
        parseCacheConfig,
      )
      .option(
        "--max-instances-per-model <n>",
        "most backend instances one model may ask for (instance_group counts summed); default 2 × CPU cores",
        parsePositiveInt,
        defaultResourceLimits().maxInstancesPerModel,
      )
      .option(
        "--max-threads-per-instance <n>",
        "most intra_op/inter_op threads one instance may ask for (0 counts as the core count); default the CPU cores",
        parsePositiveInt,
        defaultResourceLimits().maxThreadsPerInstance,
      )
      .option(
        "--max-instances <n>",
        "most backend instances of all models at once on this host; default 8 × CPU cores",
        parsePositiveInt,
        defaultResourceLimits().maxInstancesPerHost,
      )
      .option(
        "--backend-directory <dir>",
        "where native (Triton C++ API) backends are found: <dir>/<name>/libtriton_<name>.so, after the model's version folder and folder (default: Operon's built backends, native/build/tritonserver/backends)",
      )
      .option(
        "--backend-config <backend,key=value>",
        "a setting of a native backend, Triton's syntax (repeatable); the backend reads it with TRITONBACKEND_BackendConfig",
        parseBackendConfig,
        {},
      )
      .option(
        "--trace-config <setting>",
        "tritonserver's trace settings (repeatable): mode=opentelemetry, level=OFF|TIMESTAMPS|TENSORS, rate=N, count=N, opentelemetry,url=<OTLP/HTTP endpoint>, opentelemetry,resource=<key>=<value>, opentelemetry,bsp_schedule_delay=<ms>",
        (value: string, previous: string[]) => [...previous, value],
        [] as string[],
      )
      .option(
        "--allow-native-uploads [bool]",
        "let the load API's file: uploads bring a native backend (a .so, or a config naming a non-built-in backend); native code runs with the server's rights, so even then only the admin scope may",
        parseBool,
        false,
      )
      .option(
        "--worker-user <name>",
        "when the server runs as root: run backend worker processes (TypeScript models, process instances) as this unprivileged account, e.g. nobody, so that user code cannot read root's files (/etc/shadow, the database) or the server's memory",
      )
      .option(
        "--worker-memory-limit-mb <mb>",
        "memory cap of each backend worker process (resident MiB; 0 = none): a worker over it is recycled between requests without failing any; a model's parameter worker_memory_limit_mb wins",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.workerMemoryLimitMb,
      )
      .option(
        "--sandbox-memory-mb <mb>",
        "memory of each sandboxed worker (custom steps uploaded from the console, models with operon_sandbox): resident MiB, and half of it as its JavaScript heap; a worker over it is stopped and its requests fail naming the limit",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.sandboxMemoryMb,
      )
      .option(
        "--sandbox-cpu-ms <ms>",
        "CPU time one execution of a sandboxed model may use; a worker over it is stopped and its requests fail naming the limit",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.sandboxCpuMs,
      )
      .option(
        "--default-max-batch-size <n>",
        "max_batch_size given to models whose config leaves it unset and that can batch (Triton's backend-config default-max-batch-size)",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.defaultMaxBatchSize,
      )
      // Operon's control plane and console (not tritonserver flags).
      .addOption(
        new Option(
          "--role <role>",
          "all: gateway and control plane in one process (one host); gateway: only the gateway, on the PostgreSQL of --database-url: the control plane's API keys, the models of its model store (this gateway's --model-repository) and its operators, followed (LISTEN/NOTIFY, resync every --shared-state-resync-secs); model control always behind an admin key; control-plane: the control plane (API, console, schedulers, uploads into --model-store) with the gateway it uses itself, on PostgreSQL, for N gateways beside it",
        )
          .choices(["all", "gateway", "control-plane"])
          .default("all"),
      )
      .option(
        "--shared-state-resync-secs <secs>",
        "--role gateway: re-read the shared state (API keys, the model store, operators) this often even without a notification, the safety net for notifications lost while disconnected",
        parsePositiveInt,
        30,
      )
      .option(
        "--model-store <path>",
        "where the control plane stores uploaded models (a model repository its gateway serves too); on a cluster, the volume every gateway reads as its --model-repository; default <data-dir>/models",
      )
      .option(
        "--control-plane [bool]",
        "run the control plane (database, API, API keys, console) beside the gateway; false = a plain Triton-style server",
        parseBool,
        true,
      )
      .option("--console [bool]", "serve the web console (needs the control plane)", parseBool, true)
      .option("--console-address <address>", "console listen address", "127.0.0.1")
      .option("--console-port <port>", "console port (0 picks a free port)", parsePort, 3000)
      .option(
        "--trusted-proxy <address|cidr>",
        "reverse proxies in front of the console whose X-Forwarded-For names the browser: an IP address, a CIDR range (10.0.0.0/8, as ingress pods change addresses) or loopback|linklocal|uniquelocal; repeatable, or comma-separated; without it, the console counts every request as coming from its direct peer",
        parseTrustedProxy,
        [],
      )
      .option(
        "--secure-cookies [bool]",
        "mark the console's cookies Secure (serve the console over HTTPS, e.g. behind a TLS proxy); also set per request when a --trusted-proxy sends X-Forwarded-Proto: https",
        parseBool,
        false,
      )
      .option("--api-address <address>", "control plane API listen address (the console proxies to it)", "127.0.0.1")
      .option("--api-port <port>", "control plane API port (tRPC under /api/trpc)", parsePort, 8003)
      .option(
        "--database-url <url>",
        "postgres(ql)://… for PostgreSQL, file:<dir> or memory: for the embedded database; default $OPERON_DATABASE_URL, then $DATABASE_URL, else <data-dir>/db",
      )
      .option("--admin-email <email>", "create this first admin at start when no account exists")
      .option(
        "--admin-password <password>",
        "the first admin's password (shows in ps: prefer --admin-password-file or $OPERON_ADMIN_PASSWORD)",
      )
      .option("--admin-password-file <path>", "file holding the first admin's password (one trailing newline ignored)")
      .option(
        "--require-api-key [bool]",
        "inference needs an API key (Authorization: Bearer <key>); model control always does beyond loopback",
        parseBool,
        false,
      )
      .option(
        "--metrics-require-key [bool]",
        "the metrics port (:8002/metrics) answers only requests with an API key (Authorization: Bearer <key>); default: open, as in Triton",
        parseBool,
        GATEWAY_DEFAULTS.metricsRequireKey,
      )
      .option(
        "--anonymous-model-control [bool]",
        "on a loopback-only server, keep model control (load/unload) open to callers without a key even after API keys were issued (default: it locks for good once any key exists)",
        parseBool,
        false,
      )
      .option(
        "--usage-sample-secs <secs>",
        "how often the control plane samples the gateway's usage for charts and costs (0 = never)",
        parseNonNegativeInt,
        15,
      )
      .option(
        "--usage-retention-days <days>",
        "how long usage samples are kept; older ones are deleted hourly (0 = forever)",
        parseNonNegativeInt,
        30,
      )
      // The resource scheduler (README "Resource scheduler"); admins can also switch it in the console.
      .option(
        "--resource-scheduler [bool]",
        "let the control plane set each model's instance count from its demand and unload idle models when memory is short (within --max-instances-per-model and --max-instances); the console's switch overrides this once set",
        parseBool,
        RESOURCE_SCHEDULER_DEFAULTS.enabledByDefault,
      )
      .option(
        "--scheduler-period-secs <secs>",
        "seconds between the scheduler's decisions",
        parsePositiveInt,
        RESOURCE_SCHEDULER_DEFAULTS.periodSecs,
      )
      .option(
        "--scheduler-headroom <fraction>",
        "spare capacity kept above demand (0.25 = 25 %)",
        parseFraction,
        RESOURCE_SCHEDULER_DEFAULTS.headroom,
      )
      .option(
        "--scheduler-cooldown-secs <secs>",
        "a model scales down only this long after its last change and its last peak of demand",
        parseNonNegativeInt,
        RESOURCE_SCHEDULER_DEFAULTS.scaleDownCooldownSecs,
      )
      .option(
        "--scheduler-idle-unload-secs <secs>",
        "a model without a request for this long may be unloaded when memory is short (it loads again on its next request)",
        parseNonNegativeInt,
        RESOURCE_SCHEDULER_DEFAULTS.idleUnloadSecs,
      )
      .option(
        "--scheduler-cpu-slots <n>",
        "instances of CPU models the scheduler lets run at once; default 2 × CPU cores",
        parsePositiveInt,
      )
      .option(
        "--scheduler-gpu-slots <n>",
        "instances of GPU models the scheduler lets each GPU run at once (a model on gpus [a, b] takes one on each per step); default 2",
        parsePositiveInt,
      )
      .option(
        "--scheduler-memory-budget-bytes <bytes>",
        "memory the models' instances may use together; default 75 % of the host's memory",
        parsePositiveInt,
      )
      .option(
        "--scheduler-min-gateways <n>",
        'fewest gateways the scheduler\'s desired gateway replica count asks for (the operon_desired_gateway_replicas gauge an HPA follows; README "Deploy")',
        parsePositiveInt,
        RESOURCE_SCHEDULER_DEFAULTS.minGateways,
      )
      .option(
        "--scheduler-max-gateways <n>",
        "most gateways the scheduler's desired gateway replica count asks for",
        parsePositiveInt,
        RESOURCE_SCHEDULER_DEFAULTS.maxGateways,
      )
      .option(
        "--scheduler-default-capacity-rps <rps>",
        "requests/s one instance is assumed to serve when the model has no perf report (conservative)",
        parsePositiveNumber,
        RESOURCE_SCHEDULER_DEFAULTS.defaultCapacityRps,
      )
      .option(
        "--batch-data-root <dir>",
        "a folder admins may make batch datasets of files in (repeatable); default: <data-dir>/datasets only",
        collect,
        [],
      )
      .option(
        "--batch-postgres <name=url>",
        "a PostgreSQL database admins may make batch datasets of tables in, by name (repeatable), e.g. warehouse=postgresql://reader@db/warehouse; give the password in PGPASSWORD or ~/.pgpass, not here (a command line is visible to every user of the host)",
        collect,
        [],
      )
      .option(
        "--batch-budget-ms <ms>",
        "latency a batch job's own requests may take (p90) before the job backs off, and online p99's budget until the job has measured online latency without itself; default: twice the p99 at the lowest concurrency of the target's latest perf report (50 ms without one)",
        parsePositiveNumber,
      )
      .option(
        "--batch-window-ms <ms>",
        "how often a batch job adjusts its concurrency to the online p99 the gateway reports (100 to 60000)",
        parsePositiveInt,
      )
      .option(
        "--batch-lane-refresh-ms <ms>",
        "how often a running batch job lists the cluster's gateways again, to send rows to a new one and to try one marked away (1000 to 300000; default 5000)",
        parsePositiveInt,
      )
      .option(
        "--batch-rows-per-request <n>",
        "rows a batch job joins into one request to a model that batches, unless the job asks its own (1 to 1024, at most the model's max_batch_size; default half the model's max_batch_size, at most 8). Operators get one row a request",
        parsePositiveInt,
      )
      .option(
        "--batch-sample-ms <ms>",
        "the interval of a batch job's throughput samples: the Jobs page's chart and the job's cost (1000 to 60000; default 5000)",
        parsePositiveInt,
      )
      .option(
        "--scheduler-p99-budget-ms <ms>",
        "p99 latency a perf report's throughput must meet to count as an instance's capacity",
        parsePositiveNumber,
        RESOURCE_SCHEDULER_DEFAULTS.p99BudgetMs,
      )
      .addOption(
        new Option(
          "--parked-model-policy <policy>",
          "a request for a model the scheduler unloaded: wait = hold it until the model is loaded again (up to --parked-model-wait-ms, then 503 + Retry-After); retry-after = 503 + Retry-After at once. Either way the request starts the load",
        )
          .choices(["wait", "retry-after"])
          .default(DEFAULT_PARKED_MODEL_POLICY.mode),
      )
      .option(
        "--parked-model-wait-ms <ms>",
        "how long a request waits for a parked model to load (policy wait)",
        parseNonNegativeInt,
        DEFAULT_PARKED_MODEL_POLICY.waitMs,
      )
  );
}
