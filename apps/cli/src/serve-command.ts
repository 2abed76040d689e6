import { isIP } from "node:net";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError, Option } from "commander";
import { parseBackendConfig } from "./backend-config-flag.js";
import { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import { createLogger } from "@operon/gateway/logger";
import { RESOURCE_SCHEDULER_DEFAULTS } from "@operon/api";
import {
  DEFAULT_PARKED_MODEL_POLICY,
  defaultResourceLimits,
  GATEWAY_DEFAULTS,
  startOperonServer,
  type OperonServer,
  type OperonServerOptions,
} from "@operon/gateway/server";
import { ConsoleNotBuiltError, startConsole, type ConsoleProcess } from "./console-process.js";
import { ControlPlaneThread } from "./control-plane-host.js";
import { controlPlaneDirs, makeInternalKey } from "./control-plane-runtime.js";
import { databaseUrlOf } from "./database-flags.js";
import { operonEnvironment } from "./environment.js";
import { readSecretFile } from "./secret-file.js";
import { resolveWorkerUser } from "./worker-user.js";
import { serveFlagsSchema, type CacheConfig, type ServeFlags } from "./serve-flags.js";

/**
 * `operon serve`: tritonserver's flags, names and defaults, so that scripts
 * written for Triton start Operon unchanged. Booleans take Triton's
 * `--flag=true|false` form; a bare `--flag` means true.
 */
export function serveCommand(): Command {
  return (
    new Command("serve")
      .description("Serve a Triton-style model repository over KServe v2 HTTP and gRPC, with Prometheus metrics")
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
          "where ONNX Runtime (and echo) instances run unless a model's config parameter operon_isolation says otherwise: thread = a thread of the gateway process (fastest; a native crash takes the server down, as in Triton), process = a worker process each (isolated). TypeScript models always run in processes",
        )
          .choices(["thread", "process"])
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
        "--default-max-batch-size <n>",
        "max_batch_size given to models whose config leaves it unset and that can batch (Triton's backend-config default-max-batch-size)",
        parseNonNegativeInt,
        GATEWAY_DEFAULTS.defaultMaxBatchSize,
      )
      // Operon's control plane and console (not tritonserver flags).
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
        "--trusted-proxy <address>",
        "IP address of a reverse proxy in front of the console whose X-Forwarded-For names the browser (repeatable); without it, the console counts every request as coming from its direct peer",
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
        "postgres(ql)://… for PostgreSQL, file:<dir> or memory: for the embedded database; default $DATABASE_URL, else <data-dir>/db",
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
        "--scheduler-memory-budget-bytes <bytes>",
        "memory the models' instances may use together; default 75 % of the host's memory",
        parsePositiveInt,
      )
      .option(
        "--scheduler-default-capacity-rps <rps>",
        "requests/s one instance is assumed to serve when the model has no perf report (conservative)",
        parsePositiveNumber,
        RESOURCE_SCHEDULER_DEFAULTS.defaultCapacityRps,
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
      .action(async (raw: Record<string, unknown>, command: Command) => {
        const flags = serveFlagsSchema.parse(raw);
        const cache = flags.cacheConfig;
        if (cache !== undefined && cache.settings.size === undefined) {
          command.error("error: --cache-config local needs a size: --cache-config local,size=<bytes>", { exitCode: 1 });
        }
        await runServe(flags);
      })
  );
}

async function runServe(flags: ServeFlags): Promise<void> {
  const logger = createLogger({ verbose: flags.logVerbose });
  let workerIdentity: ReturnType<typeof resolveWorkerUser> | undefined;
  try {
    workerIdentity = flags.workerUser !== undefined ? resolveWorkerUser(flags.workerUser) : undefined;
  } catch (error) {
    logger.fatal({ err: (error as Error).message }, "server failed to start");
    process.exitCode = 1;
    return;
  }
  if (workerIdentity === undefined && process.getuid?.() === 0) {
    logger.warn(
      "the server runs as root and so do its worker processes: user code (TypeScript models) can read every file of the host; pass --worker-user nobody (or another unprivileged account)",
    );
  }
  const withControlPlane = flags.controlPlane;
  const requireApiKey = flags.requireApiKey;
  const dataDir = flags.dataDir;
  const dirs = withControlPlane ? controlPlaneDirs(dataDir) : undefined;
  const options = {
    // Uploaded models form one more repository; the first one given wins on name clashes.
    modelRepositories: [...flags.modelRepository, ...(dirs ? [dirs.modelStoreDir] : [])],
    httpAddress: flags.httpAddress,
    httpPort: flags.httpPort,
    grpcAddress: flags.grpcAddress,
    grpcPort: flags.grpcPort,
    metricsAddress: flags.metricsAddress,
    metricsPort: flags.metricsPort,
    allowHttp: flags.allowHttp,
    allowGrpc: flags.allowGrpc,
    allowMetrics: flags.allowMetrics,
    modelControlMode: flags.modelControlMode,
    loadModels: flags.loadModel,
    repositoryPollSecs: flags.repositoryPollSecs,
    strictModelConfig: flags.strictModelConfig,
    strictReadiness: flags.strictReadiness,
    exitOnError: flags.exitOnError,
    exitTimeoutSecs: flags.exitTimeoutSecs,
    dataDir,
    maxUploadBytes: flags.maxUploadBytes,
    httpMaxBodyBytes: flags.httpMaxBodyBytes,
    ...(flags.httpMaxInflightBodyBytes !== undefined
      ? { httpMaxInflightBodyBytes: flags.httpMaxInflightBodyBytes }
      : {}),
    grpcInferMaxMessageBytes: flags.grpcInferMaxMessageBytes,
    maxBytesElements: flags.maxBytesElements,
    httpBodyTimeoutSecs: flags.httpBodyTimeoutSecs,
    httpMinBodyBytesPerSec: flags.httpMinBodyBytesPerSec,
    httpHeadersTimeoutSecs: flags.httpHeadersTimeoutSecs,
    ...(flags.httpMaxConnections !== undefined ? { httpMaxConnections: flags.httpMaxConnections } : {}),
    httpMaxConnectionsPerAddress: flags.httpMaxConnectionsPerAddress,
    httpMaxInflateRatio: flags.httpMaxInflateRatio,
    ...(flags.decodeThreads !== undefined ? { decodeThreads: flags.decodeThreads } : {}),
    decodeMaxHeapMb: flags.decodeMaxHeapMb,
    metricsRequireKey: flags.metricsRequireKey,
    decodeTimeoutSecs: flags.decodeTimeoutSecs,
    defaultMaxBatchSize: flags.defaultMaxBatchSize,
    ...(flags.backendDirectory !== undefined ? { backendDirectory: flags.backendDirectory } : {}),
    backendConfig: flags.backendConfig,
    traceConfig: flags.traceConfig,
    allowNativeUploads: flags.allowNativeUploads,
    resourceLimits: {
      maxInstancesPerModel: flags.maxInstancesPerModel,
      maxThreadsPerInstance: flags.maxThreadsPerInstance,
      maxInstancesPerHost: flags.maxInstances,
    },
    cacheSizeBytes: flags.cacheConfig?.settings.size,
    workerEntry: fileURLToPath(import.meta.resolve("@operon/worker/main")),
    ...(workerIdentity !== undefined ? { workerIdentity } : {}),
    backendIsolation: flags.backendIsolation,
    parkedModels: {
      mode: flags.parkedModelPolicy,
      waitMs: flags.parkedModelWaitMs,
      retryAfterSecs: DEFAULT_PARKED_MODEL_POLICY.retryAfterSecs,
    },
    logger,
  } satisfies OperonServerOptions;
  const loopbackOnly = [
    options.allowHttp ? options.httpAddress : "127.0.0.1",
    options.allowGrpc ? options.grpcAddress : "127.0.0.1",
  ].every(isLoopback);

  let controlPlane: ControlPlaneThread | undefined;
  let api: { apiUrl: string; proxyToken: string; setupToken: string | undefined } | undefined;
  let embeddedDatabase = false;
  let server: OperonServer | undefined;
  let consoleProcess: ConsoleProcess | undefined;
  const stopAll = async (): Promise<void> => {
    await consoleProcess?.stop().catch(() => undefined);
    await controlPlane
      ?.stop()
      .catch((error: unknown) =>
        logger.error({ err: (error as Error).message }, "error while stopping the control plane"),
      );
    await server?.stop();
  };
  try {
    const ring = new ApiKeyRing();
    const internal = makeInternalKey();
    if (withControlPlane) {
      // The control plane runs on its own thread (control-plane-thread.ts): its database, API,
      // sampler and perf runs never share the gateway's event loop.
      if (flags.adminPassword !== undefined) {
        logger.warn(
          "--admin-password is visible to every local user (ps, /proc); use --admin-password-file or $OPERON_ADMIN_PASSWORD",
        );
      }
      const adminPassword =
        flags.adminPassword ??
        (flags.adminPasswordFile !== undefined
          ? readSecretFile(flags.adminPasswordFile, "--admin-password-file")
          : operonEnvironment().OPERON_ADMIN_PASSWORD);
      const opened = await ControlPlaneThread.open(
        {
          databaseUrl: databaseUrlOf({ databaseUrl: flags.databaseUrl, dataDir }),
          dataDir,
          ...(flags.adminEmail !== undefined ? { adminEmail: flags.adminEmail } : {}),
          ...(adminPassword !== undefined ? { adminPassword } : {}),
          internal,
          maxUploadBytes: options.maxUploadBytes,
          usageSampleIntervalSecs: flags.usageSampleSecs,
          usageRetentionDays: flags.usageRetentionDays,
          resourceScheduler: {
            enabledByDefault: flags.resourceScheduler,
            periodSecs: flags.schedulerPeriodSecs,
            headroom: flags.schedulerHeadroom,
            scaleDownCooldownSecs: flags.schedulerCooldownSecs,
            idleUnloadSecs: flags.schedulerIdleUnloadSecs,
            ...(flags.schedulerMemoryBudgetBytes !== undefined
              ? { memoryBudgetBytes: flags.schedulerMemoryBudgetBytes }
              : {}),
            ...(flags.schedulerCpuSlots !== undefined ? { cpuSlots: flags.schedulerCpuSlots } : {}),
            defaultCapacityRps: flags.schedulerDefaultCapacityRps,
            p99BudgetMs: flags.schedulerP99BudgetMs,
            maxInstancesPerModel: flags.maxInstancesPerModel,
            maxInstancesPerHost: flags.maxInstances,
          },
          secureCookies: flags.secureCookies,
          apiAddress: flags.apiAddress,
          apiPort: flags.apiPort,
          logVerbose: flags.logVerbose,
        },
        (grants, everIssued) => {
          if (everIssued) ring.noteKeysEverIssued();
          ring.replaceAll([...grants, internal.grant]);
        },
      );
      controlPlane = opened.thread;
      embeddedDatabase = opened.info.embedded;
      logger.info(
        { database: opened.info.database, applied: opened.info.appliedMigrations },
        "control plane database ready",
      );
    }
    // Beyond loopback, model control must not be open to whoever reaches the port.
    if (!loopbackOnly && options.modelControlMode !== "none" && !requireApiKey && !ring.hasUserAdminKeys()) {
      throw new Error(
        "refusing to expose model control (load/unload) beyond loopback without API keys: create an admin-scoped key " +
          "(operon keys create --scopes admin,infer ...) and/or pass --require-api-key, listen on 127.0.0.1, or use --model-control-mode none",
      );
    }
    const anonymousModelControl = flags.anonymousModelControl;
    server = await startOperonServer({
      ...options,
      ...(withControlPlane || requireApiKey ? { access: { ring, requireApiKey, anonymousModelControl } } : {}),
    });
    if (controlPlane !== undefined) {
      if (server.httpPort === undefined)
        throw new Error(
          "the control plane needs the gateway's HTTP endpoint: drop --allow-http=false or pass --control-plane=false",
        );
      api = await controlPlane.attachGateway(
        {
          httpUrl: `http://${connectHost(options.httpAddress)}:${server.httpPort}`,
          metricsUrl:
            server.metricsPort !== undefined
              ? `http://${connectHost(options.metricsAddress)}:${server.metricsPort}/metrics`
              : undefined,
        },
        () => ring.drainUsage(),
      );
      // Model control through the gateway's own API goes to the audit log too (the console's own calls use the internal key and are audited by the API).
      const thread = controlPlane;
      server.access?.onModelControl((event) => {
        if (event.keyId !== internal.grant.id) thread.recordModelControl(event);
      });
      if (flags.console) {
        const port = flags.consolePort === 0 ? await freePort(flags.consoleAddress) : flags.consolePort;
        try {
          consoleProcess = await startConsole({
            address: flags.consoleAddress,
            port,
            apiUrl: api.apiUrl,
            proxyToken: api.proxyToken,
            trustedProxies: flags.trustedProxy,
            logger,
          });
        } catch (error) {
          if (!(error instanceof ConsoleNotBuiltError)) throw error;
          logger.warn({ reason: error.message }, "serving without the console");
        }
      }
    }
  } catch (error) {
    logger.fatal({ err: (error as Error).message }, "server failed to start");
    await stopAll().catch(() => undefined);
    process.exitCode = 1;
    return;
  }
  logger.info(
    {
      http: server.httpPort !== undefined ? `http://${options.httpAddress}:${server.httpPort}` : "off",
      grpc: server.grpcPort !== undefined ? `${options.grpcAddress}:${server.grpcPort}` : "off",
      metrics:
        server.metricsPort !== undefined ? `http://${options.metricsAddress}:${server.metricsPort}/metrics` : "off",
      api: api?.apiUrl ?? "off",
      console: consoleProcess?.url ?? "off",
      modelControlMode: options.modelControlMode,
    },
    "Operon is serving",
  );
  if (options.modelControlMode !== "none") {
    const open = server.access ? server.access.modelControlOpen() : true;
    if (open) {
      logger.warn(
        !loopbackOnly
          ? "model control (load/unload) is open and the server listens beyond loopback: anyone who can reach it can load models"
          : server.access?.anonymousModelControl && server.access.ring.modelControlLocked()
            ? "model control (load/unload) is open to any local client without a key because of --anonymous-model-control, although API keys were issued"
            : "model control (load/unload) is open to any local client without a key, as in Triton: the server listens on loopback only and no API key was ever issued",
      );
    } else {
      logger.info("model control (load/unload) needs an admin-scoped API key (or the console)");
    }
  }
  if (requireApiKey) logger.info("inference needs an API key (--require-api-key)");
  // Print lines a person can act on even when logs go to a collector.
  process.stderr.write(
    `Operon ${server.httpPort !== undefined ? `HTTP on http://${options.httpAddress}:${server.httpPort}` : ""}` +
      `${server.grpcPort !== undefined ? `, gRPC on ${options.grpcAddress}:${server.grpcPort}` : ""}` +
      `${server.metricsPort !== undefined ? `, metrics on http://${options.metricsAddress}:${server.metricsPort}/metrics` : ""}\n`,
  );
  if (api) process.stderr.write(`Operon API on ${api.apiUrl}/api/trpc\n`);
  if (consoleProcess) {
    process.stderr.write(`Operon console on ${consoleProcess.url}\n`);
    const token = api?.setupToken;
    if (token !== undefined) {
      process.stderr.write(
        `First run: open ${consoleProcess.url}/setup?token=${token} to create the admin account` +
          ` (or ${embeddedDatabase ? "stop Operon and run" : "run"}: operon admin create)\n`,
      );
    }
  } else if (api?.setupToken !== undefined) {
    process.stderr.write(
      `First run: no account exists yet; create the admin with: operon admin create${embeddedDatabase ? " (after stopping Operon: the embedded database is for one process)" : ""}\n`,
    );
  }
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    // First: a signal sent to the whole process group reached the workers too; they must not be restarted.
    server.haltRestarts();
    logger.info({ signal, timeoutSecs: options.exitTimeoutSecs }, "draining in-flight requests, then exiting");
    stopAll().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: (error as Error).message }, "error while stopping");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

function isLoopback(address: string): boolean {
  return address === "localhost" || address === "::1" || address.startsWith("127.");
}

/** Where the control plane reaches a listener bound to `address` (a wildcard is reached on loopback). */
function connectHost(address: string): string {
  if (address === "0.0.0.0" || address === "") return "127.0.0.1";
  if (address === "::") return "[::1]";
  return address.includes(":") ? `[${address}]` : address;
}

/** A free TCP port (the console server needs a number, not 0). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port")),
      );
    });
  });
}

/** Repeatable options. No default array: a default would make commander treat a required option as given. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * One `--cache-config` value: `<cache>,<key>=<value>[,<key>=<value>...]`,
 * as tritonserver takes it (e.g. `local,size=1048576`); repeating the flag
 * adds settings. Only the `local` (in-process) cache exists; its one
 * setting is `size` in bytes.
 */
function parseCacheConfig(value: string, previous: CacheConfig | undefined): CacheConfig {
  const [cache = "", ...pairs] = value.split(",").map((part) => part.trim());
  if (cache === "redis") throw new InvalidArgumentError("the 'redis' cache is not supported; use 'local,size=<bytes>'");
  if (cache !== "local") throw new InvalidArgumentError(`unknown cache '${cache}'; use 'local,size=<bytes>'`);
  if (pairs.length === 0) throw new InvalidArgumentError("expected '<cache>,<key>=<value>', e.g. 'local,size=1048576'");
  const config: CacheConfig = previous ?? { cache, settings: {} };
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    const key = equals < 0 ? pair : pair.slice(0, equals);
    const setting = equals < 0 ? "" : pair.slice(equals + 1);
    if (equals <= 0 || setting === "") throw new InvalidArgumentError(`'${pair}' is not a <key>=<value> setting`);
    if (key !== "size")
      throw new InvalidArgumentError(`unknown setting '${key}' of the local cache; it takes size=<bytes>`);
    const size = Number(setting);
    if (!/^[0-9]+$/.test(setting) || !Number.isSafeInteger(size) || size <= 0) {
      throw new InvalidArgumentError(`size '${setting}' is not a positive number of bytes`);
    }
    config.settings.size = size;
  }
  return config;
}

function parseTrustedProxy(value: string, previous: string[]): string[] {
  const address = value.trim();
  if (isIP(address) === 0)
    throw new InvalidArgumentError(
      `'${value}' is not an IP address (give each proxy's address; repeat the flag for several)`,
    );
  return [...previous, address];
}

function parseBool(value: string | undefined): boolean {
  if (value === undefined) return true;
  const lowered = value.toLowerCase();
  if (["true", "1", "yes", "on"].includes(lowered)) return true;
  if (["false", "0", "no", "off"].includes(lowered)) return false;
  throw new InvalidArgumentError(`'${value}' is not a boolean; use true or false`);
}

function parseNonNegativeInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0)
    throw new InvalidArgumentError(`'${value}' is not a non-negative integer`);
  return parsed;
}

function parsePositiveInt(value: string): number {
  const parsed = parseNonNegativeInt(value);
  if (parsed === 0) throw new InvalidArgumentError(`'${value}' must be greater than 0`);
  return parsed;
}

function parsePositiveNumber(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new InvalidArgumentError(`'${value}' is not a positive number`);
  return parsed;
}

function parseFraction(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > 10)
    throw new InvalidArgumentError(`'${value}' is not a fraction from 0 to 10 (0.25 = 25 %)`);
  return parsed;
}

function parsePort(value: string): number {
  const parsed = parseNonNegativeInt(value);
  if (parsed > 65535) throw new InvalidArgumentError(`'${value}' is not a port (0-65535; 0 picks a free port)`);
  return parsed;
}
