import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { OperonError } from "@operon/protocol/errors";
import { GatewayAccessPolicy } from "./auth/access-policy.js";
import { isLoopbackHost } from "./auth/loopback.js";
import { Engine } from "./engine/engine.js";
import { registerTenantMetrics } from "./admission/tenant-metrics.js";
import { TenantShares } from "./admission/tenant-shares.js";
import { startGrpcFrontend } from "./frontends/grpc/grpc-frontend.js";
import { startHttpFrontend } from "./frontends/http/http-frontend.js";
import { SystemSharedMemory } from "./frontends/shared-memory/system-shared-memory.js";
import type { LoggingControl } from "./frontends/log-settings-api.js";
import { LogSettings } from "./observability/log-settings.js";
import { OpenTelemetryTracing } from "./frontends/tracing/request-tracing.js";
import { parseTraceConfig } from "./frontends/tracing/trace-config.js";
import { type Logger, applyLogSettings, logSettingsOf } from "./observability/logger.js";
import { defaultMaxConnections } from "./frontends/http/connection-limits.js";
import { DecodePool } from "./frontends/decode/decode-pool.js";
import { GatewayMetrics } from "./observability/metrics.js";
import { GpuMetrics } from "./observability/gpu-metrics.js";
import { cudaVisibleDevices } from "./instances/gpu-inventory.js";
import { startMetricsServer } from "./observability/metrics-server.js";
import { ModelManager } from "./repository/model-manager.js";
import { ResponseCache } from "./engine/response-cache.js";
import { defaultResourceLimits } from "./repository/resource-limits.js";
import { OPERON_VERSION } from "./version.js";
import {
  GATEWAY_DEFAULTS,
  resolveOperonServerOptions,
  type OperonServerOptions,
  type ResolvedOperonServerOptions,
} from "./server-options.js";

/** A model control change made through the gateway's API (see GatewayAccessPolicy.onModelControl), for the control plane's audit log. */
export type { ModelControlEvent } from "./auth/access-policy.js";
export { defaultResourceLimits, type ResourceLimits } from "./repository/resource-limits.js";
export { DEFAULT_PARKED_MODEL_POLICY, type ParkedModelPolicy } from "./repository/parked-models.js";

/**
 * Starts a whole Operon server: the model manager with its workers, the
 * HTTP and gRPC frontends and the metrics endpoint. Options and their
 * (tritonserver's) defaults: server-options.ts.
 */
export type { OperonServerOptions };
export { GATEWAY_DEFAULTS };

export interface OperonServer {
  httpPort: number | undefined;
  grpcPort: number | undefined;
  metricsPort: number | undefined;
  engine: Engine;
  /** The frontends' access policy; undefined when started without `access`. */
  access: GatewayAccessPolicy | undefined;
  /** Drains in-flight requests (up to exitTimeoutSecs), then stops everything; idempotent. */
  stop(): Promise<void>;
  /** Call first thing on a shutdown signal: backend workers that exit are not restarted any more (stop() does it too). */
  haltRestarts(): void;
  /**
   * One pass of the repository poller, in any control mode: loads new models, reloads changed ones,
   * unloads removed ones (operators registered through the API stay). For a gateway told that the
   * shared model store changed (`operon serve --role gateway`).
   */
  syncRepository(): Promise<void>;
  /**
   * Sets a gauge this process's metrics endpoint exports for a part of Operon outside the gateway (the control
   * plane's thread: operon_desired_gateway_replicas), created at its first value. Names must start with operon_.
   */
  setGauge(name: string, help: string, value: number): void;
}

export async function startOperonServer(given: OperonServerOptions): Promise<OperonServer> {
  const options = resolveOperonServerOptions(given);
  const logger = options.logger;
  await checkRepositories(options.modelRepositories);
  const metrics = new GatewayMetrics({ cpuIntervalMs: options.metricsIntervalMs });
  // Triton exports GPU metrics only with metrics on; read off the event loop (gpu-metrics.ts).
  const gpuMetrics =
    options.allowMetrics && options.allowGpuMetrics
      ? GpuMetrics.start({ registry: metrics.registry, logger, intervalMs: options.metricsIntervalMs })
      : undefined;
  // The first reading before the first scrape can come (milliseconds, on a pool thread); a driver that hangs
  // does not hold the start up for more than FIRST_GPU_READING_MS (the gauges follow once it answers).
  if (gpuMetrics !== undefined) await firstReading(gpuMetrics.sampleNow(), FIRST_GPU_READING_MS);
  const responseCache = options.cacheSizeBytes !== undefined ? new ResponseCache(options.cacheSizeBytes) : undefined;
  if (responseCache !== undefined) metrics.observeResponseCache(() => responseCache.stats());
  const manager = new ModelManager({
    repositories: options.modelRepositories.map((repository) => resolve(repository)),
    controlMode: options.modelControlMode,
    strictModelConfig: options.strictModelConfig,
    uploadDir: join(resolve(options.dataDir), "uploaded-models"),
    maxUploadBytes: options.maxUploadBytes,
    defaultMaxBatchSize: options.defaultMaxBatchSize,
    resourceLimits: options.resourceLimits ?? defaultResourceLimits(),
    responseCacheEnabled: responseCache !== undefined,
    ...(options.parkedModels !== undefined ? { parkedModels: options.parkedModels } : {}),
    allowNativeUploads: options.allowNativeUploads,
    nativeBackends: {
      ...(options.backendDirectory !== undefined ? { backendDirectory: resolve(options.backendDirectory) } : {}),
      backendConfig: options.backendConfig,
    },
    instances: {
      workerEntry: options.workerEntry,
      defaultIsolation: options.backendIsolation,
      workerMemoryLimitMb: options.workerMemoryLimitMb,
      sandboxLimits: { memoryMb: options.sandboxMemoryMb, cpuMsPerExecution: options.sandboxCpuMs },
      ...(options.workerIdentity !== undefined ? { workerIdentity: options.workerIdentity } : {}),
      logger,
      metrics,
    },
    logger,
    metrics,
  });
  const access = accessPolicyOf(options);
  // Traffic shares per tenant: configured by the key grants (a grant's tenant), off while none has one.
  const tenantShares = access !== undefined ? new TenantShares() : undefined;
  if (access !== undefined && tenantShares !== undefined) {
    access.ring.onTenants((tenants) => tenantShares.configure(tenants));
    registerTenantMetrics(metrics.registry, tenantShares);
  }
  const engine = new Engine(manager, {
    version: OPERON_VERSION,
    strictReadiness: options.strictReadiness,
    responseCache,
    metrics,
    tenantShares,
    maxBytesElements: options.maxBytesElements,
    defaultIsolation: options.backendIsolation,
    ...(gpuMetrics !== undefined ? { gpus: () => gpuMetrics.readings(cudaVisibleDevices()) } : {}),
  });

  const failures = await manager.loadAtStartup(options.loadModels);
  for (const failure of failures) {
    if (failure.hostLimited === true)
      logger.warn(
        { model: failure.name, reason: failure.reason },
        "model not loaded: native backends are unavailable on this host",
      );
    else logger.error({ model: failure.name, reason: failure.reason }, "model failed to load at startup");
  }
  // A model this host cannot run at all (native backends not built) does not stop a start that loads every model.
  if (failures.some((failure) => failure.hostLimited !== true) && options.exitOnError) {
    await manager.stop(0);
    metrics.stop();
    void gpuMetrics?.stop();
    throw new OperonError(
      "UNAVAILABLE",
      `${failures.length} model(s) failed to load at startup (${failures.map((f) => f.name).join(", ")}); exiting because --exit-on-error is true`,
    );
  }
  manager.startPolling(options.repositoryPollSecs);

  const stoppers: Array<() => Promise<void>> = [];
  let httpPort: number | undefined;
  let grpcPort: number | undefined;
  let metricsPort: number | undefined;
  try {
    // Large request bodies are decoded here, off the event loop (frontends/decode).
    const decodePool = new DecodePool({
      ...(options.decodeThreads !== undefined ? { threads: options.decodeThreads } : {}),
      maxHeapMb: options.decodeMaxHeapMb,
      maxDecodeMs: options.decodeTimeoutSecs * 1000,
    });
    stoppers.push(() => decodePool.close());
    // One registry for both transports: a region registered over HTTP is usable over gRPC (as in Triton).
    const sharedMemory = new SystemSharedMemory();
    stoppers.push(() => sharedMemory.close());
    const logging = loggingControlOf(logger);
    const tracer = new OpenTelemetryTracing(parseTraceConfig(options.traceConfig), OPERON_VERSION);
    stoppers.push(() => tracer.stop());
    const tracing = { tracer, control: tracer.control() };
    // A model load carries its files base64-encoded in the JSON body.
    const maxLoadBodyBytes = Math.max(
      options.httpMaxBodyBytes,
      Math.ceil((options.maxUploadBytes * 4) / 3) + 1024 * 1024,
    );
    if (options.allowHttp) {
      const http = await startHttpFrontend(engine, {
        host: options.httpAddress,
        port: options.httpPort,
        maxBodyBytes: options.httpMaxBodyBytes,
        maxLoadBodyBytes,
        maxInflightBodyBytes:
          options.httpMaxInflightBodyBytes ??
          Math.max(4 * options.httpMaxBodyBytes, maxLoadBodyBytes + options.httpMaxBodyBytes),
        decodePool,
        logger,
        maxBytesElements: options.maxBytesElements,
        slowBodies: { pauseMs: options.httpBodyTimeoutSecs * 1000, minBytesPerSec: options.httpMinBodyBytesPerSec },
        headersTimeoutMs: options.httpHeadersTimeoutSecs * 1000,
        connections: {
          max: options.httpMaxConnections ?? defaultMaxConnections(),
          perAddress: options.httpMaxConnectionsPerAddress,
        },
        maxInflateRatio: options.httpMaxInflateRatio,
        sharedMemory,
        logging,
        tracing,
        ...(access !== undefined ? { access } : {}),
      });
      httpPort = http.port;
      stoppers.push(() => http.stop(1000));
    }
    if (options.allowGrpc) {
      const grpc = await startGrpcFrontend(engine, {
        host: options.grpcAddress,
        port: options.grpcPort,
        decodePool,
        ...(options.grpcInferMaxMessageBytes !== undefined
          ? { maxInferMessageBytes: options.grpcInferMaxMessageBytes }
          : {}),
        ...(options.grpcMaxInflightMessageBytes !== undefined
          ? { maxInflightInferBytes: options.grpcMaxInflightMessageBytes }
          : {}),
        logger,
        sharedMemory,
        logging,
        tracing,
        ...(access !== undefined ? { access } : {}),
      });
      grpcPort = grpc.port;
      stoppers.push(() => grpc.stop(1000));
    }
    if (options.allowMetrics) {
      const server = await startMetricsServer(metrics, {
        host: options.metricsAddress,
        port: options.metricsPort,
        ...(options.metricsRequireKey ? { authorize: metricsAuthorizer(access) } : {}),
      });
      metricsPort = server.port;
      stoppers.push(() => server.stop());
    }
  } catch (error) {
    await Promise.all(stoppers.map((stop) => stop()));
    await manager.stop(0);
    metrics.stop();
    void gpuMetrics?.stop();
    throw error;
  }
  engine.markStartupDone();
  if (access !== undefined) {
    logger.info(
      {
        requireApiKey: access.requireApiKey,
        loopbackOnly: access.loopbackOnly,
        modelControlOpen: access.modelControlOpen(),
        keys: access.ring.size,
      },
      access.modelControlOpen()
        ? "API keys: model control is open on this loopback-only server"
        : "API keys: model control needs an admin key",
    );
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      manager.haltRestarts();
      engine.beginDrain();
      const deadline = Date.now() + options.exitTimeoutSecs * 1000;
      while (engine.inFlightRequests > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      if (engine.inFlightRequests > 0)
        logger.warn({ inFlight: engine.inFlightRequests }, "exit timeout reached with requests in flight");
      await Promise.all(stoppers.map((stopOne) => stopOne().catch(() => undefined)));
      await manager.stop(Math.max(0, deadline - Date.now()));
      metrics.stop();
      await gpuMetrics?.stop();
    })();
    return stopping;
  };
  return {
    httpPort,
    grpcPort,
    metricsPort,
    engine,
    access,
    stop,
    haltRestarts: () => manager.haltRestarts(),
    syncRepository: () => manager.pollOnce(),
    setGauge: (name, help, value) => metrics.setGauge(name, help, value),
  };
}

/** The policy of `options.access`: loopback-only when every enabled frontend (HTTP, gRPC) binds a loopback address. */
function accessPolicyOf(options: ResolvedOperonServerOptions): GatewayAccessPolicy | undefined {
  if (options.access === undefined) return undefined;
  const hosts = [
    ...(options.allowHttp ? [options.httpAddress] : []),
    ...(options.allowGrpc ? [options.grpcAddress] : []),
  ];
  return new GatewayAccessPolicy({
    ring: options.access.ring,
    requireApiKey: options.access.requireApiKey,
    loopbackOnly: hosts.every(isLoopbackHost),
    ...(options.access.anonymousModelControl !== undefined
      ? { anonymousModelControl: options.access.anonymousModelControl }
      : {}),
  });
}

/** At least one repository, and each an existing folder. */
async function checkRepositories(repositories: string[]): Promise<void> {
  if (repositories.length === 0) throw new OperonError("INVALID_ARG", "no model repository given (--model-repository)");
  await checkRepositoryFolders(repositories);
}

/**
 * Every --model-repository must be an existing folder; say so plainly instead of a raw ENOENT later.
 * Exported so `operon serve` checks them before it starts anything slow (the control plane's database).
 */
export async function checkRepositoryFolders(repositories: readonly string[]): Promise<void> {
  for (const repository of repositories) {
    const info = await stat(repository).catch(() => undefined);
    if (info === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `model repository '${resolve(repository)}' does not exist (--model-repository ${repository})`,
      );
    }
    if (!info.isDirectory()) {
      throw new OperonError(
        "INVALID_ARG",
        `model repository '${resolve(repository)}' is not a folder (--model-repository ${repository})`,
      );
    }
  }
}

/**
 * --metrics-require-key: any valid key (either scope) reads the metrics; a
 * server without key checks has no keys, so it refuses every scrape, which
 * says so rather than serving them open against the flag.
 */
function metricsAuthorizer(access: GatewayAccessPolicy | undefined): (authorizationHeader: string | undefined) => void {
  return (authorizationHeader) => {
    if (access === undefined) {
      throw new OperonError(
        "UNAVAILABLE",
        "the metrics need an API key (--metrics-require-key), but this server checks no keys: run it with the control plane or --require-api-key",
      );
    }
    if (authorizationHeader === undefined) {
      throw new OperonError(
        "UNAUTHENTICATED",
        "the metrics on this server need an API key (Authorization: Bearer <key>; --metrics-require-key)",
      );
    }
    access.authenticate(authorizationHeader, "infer");
  };
}

/**
 * The logging extension's control over the server's logger: the settings
 * createLogger attached to it, or (a logger made elsewhere, as tests pass)
 * settings of its own, which still move the logger's level.
 */
function loggingControlOf(logger: Logger): LoggingControl {
  const settings = logSettingsOf(logger) ?? new LogSettings();
  return {
    get: () => ({ ...settings.get() }),
    update: (changes) => {
      const values = settings.update(changes);
      applyLogSettings(logger, settings);
      return { ...values };
    },
  };
}

const FIRST_GPU_READING_MS = 2000;

async function firstReading(reading: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    reading.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
}
