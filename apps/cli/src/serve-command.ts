import { createServer } from "node:net";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import { createLogger } from "@operon/gateway/logger";
import {
  checkRepositoryFolders,
  DEFAULT_PARKED_MODEL_POLICY,
  startOperonServer,
  type OperonServer,
  type OperonServerOptions,
} from "@operon/gateway/server";
import { ConsoleNotBuiltError, startConsole, type ConsoleProcess } from "./console-process.js";
import { ControlPlaneThread } from "./control-plane-host.js";
import { controlPlaneDirs, makeInternalKey } from "./control-plane-setup.js";
import { databaseUrlOf } from "./database-flags.js";
import { operonEnvironment } from "./environment.js";
import { readSecretFile } from "./secret-file.js";
import { resolveWorkerUser } from "./worker-user.js";
import { addServeFlags } from "./serve-flag-definitions.js";
import { serveRoleOf, withModelStore, type ServeRole } from "./serve-role.js";
import type { SharedState } from "./shared-state.js";
import { serveFlagsSchema, type ServeFlags } from "./serve-flags.js";
import { adminCreateCommand } from "./admin-create-hint.js";
import { logFileOf } from "./log-file.js";
import { tuneServingHeap } from "./serving-heap.js";
import { DESIRED_GATEWAY_REPLICAS_METRIC } from "@operon/api/resource-scheduler-defaults";

/**
 * `operon serve`: the command (its flags are serve-flag-definitions.ts) and
 * the wiring of the server from the checked flags: the gateway, and with
 * --control-plane the control plane's thread and the console's process.
 */
export function serveCommand(): Command {
  return addServeFlags(
    new Command("serve").description(
      "Serve a Triton-style model repository over KServe v2 HTTP and gRPC, with Prometheus metrics",
    ),
  ).action(async (raw: Record<string, unknown>, command: Command) => {
    const parsed = serveFlagsSchema.safeParse(raw);
    // A flag the parsers let through but the schema refuses (a range, flags that must agree): its name and why.
    if (!parsed.success) command.error(`error: ${flagProblems(parsed.error.issues)}`, { exitCode: 1 });
    const flags = parsed.data;
    const cache = flags.cacheConfig;
    if (cache !== undefined && cache.settings.size === undefined) {
      command.error("error: --cache-config local needs a size: --cache-config local,size=<bytes>", { exitCode: 1 });
    }
    await runServe(flags);
  });
}

/** The schema's issues as the flags they are about: `--batch-window-ms: Too big: …`, or the message naming its flags. */
export function flagProblems(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .map((issue) => {
      if (issue.message.startsWith("--") || typeof issue.path[0] !== "string") return issue.message;
      return `--${issue.path[0].replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}: ${issue.message}`;
    })
    .join("; ");
}

async function runServe(flags: ServeFlags): Promise<void> {
  // Before the server starts: full collections paced for a server whose requests are ArrayBuffers (serving-heap.ts).
  tuneServingHeap();
  const logFile = logFileOf(flags.logFile, process.stdout.isTTY === true, flags.dataDir);
  const logger = createLogger({ verbose: flags.logVerbose, file: logFile });
  let workerIdentity: ReturnType<typeof resolveWorkerUser> | undefined;
  try {
    workerIdentity = flags.workerUser !== undefined ? resolveWorkerUser(flags.workerUser) : undefined;
  } catch (error) {
    logger.fatal({ err: (error as Error).message }, "server failed to start");
    process.exitCode = 1;
    return;
  }
  try {
    // Before the control plane starts: its database takes seconds to open, and a typo'd path should not wait for it.
    await checkRepositoryFolders(flags.modelRepository);
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
  const dataDir = flags.dataDir;
  let role: ServeRole;
  try {
    role = serveRoleOf(flags, databaseUrlOf({ databaseUrl: flags.databaseUrl, dataDir }));
  } catch (error) {
    logger.fatal({ err: (error as Error).message }, "server failed to start");
    process.exitCode = 1;
    return;
  }
  const withControlPlane = role.controlPlane;
  const requireApiKey = flags.requireApiKey;
  const dirs = withControlPlane ? controlPlaneDirs(dataDir, flags.modelStore) : undefined;
  const options = {
    // Uploaded models form one more repository (unless it is one of them already); the first one given wins on name clashes.
    modelRepositories: withModelStore(flags.modelRepository, dirs?.modelStoreDir),
    httpAddress: flags.httpAddress,
    httpPort: flags.httpPort,
    grpcAddress: flags.grpcAddress,
    grpcPort: flags.grpcPort,
    metricsAddress: flags.metricsAddress,
    metricsPort: flags.metricsPort,
    allowHttp: flags.allowHttp,
    allowGrpc: flags.allowGrpc,
    allowMetrics: flags.allowMetrics,
    allowGpuMetrics: flags.allowGpuMetrics,
    metricsIntervalMs: flags.metricsIntervalMs,
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
    ...(flags.grpcMaxInflightMessageBytes !== undefined
      ? { grpcMaxInflightMessageBytes: flags.grpcMaxInflightMessageBytes }
      : {}),
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
    workerMemoryLimitMb: flags.workerMemoryLimitMb,
    sandboxMemoryMb: flags.sandboxMemoryMb,
    sandboxCpuMs: flags.sandboxCpuMs,
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
  let shared: SharedState | undefined;
  const stopAll = async (): Promise<void> => {
    await consoleProcess?.stop().catch(() => undefined);
    await shared?.close();
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
          ...(flags.modelStore !== undefined ? { modelStore: flags.modelStore } : {}),
          ...(flags.adminEmail !== undefined ? { adminEmail: flags.adminEmail } : {}),
          ...(adminPassword !== undefined ? { adminPassword } : {}),
          internal,
          maxUploadBytes: options.maxUploadBytes,
          usageSampleIntervalSecs: flags.usageSampleSecs,
          usageRetentionDays: flags.usageRetentionDays,
          batch: {
            serverPathRoots: flags.batchDataRoot,
            // NAME=URL: split at the first '=' (a URL may hold more).
            postgresConnections: Object.fromEntries(
              flags.batchPostgres.map((entry) => [
                entry.slice(0, entry.indexOf("=")),
                entry.slice(entry.indexOf("=") + 1),
              ]),
            ),
            ...(flags.batchBudgetMs !== undefined ? { budgetMs: flags.batchBudgetMs } : {}),
            ...(flags.batchWindowMs !== undefined ? { windowMs: flags.batchWindowMs } : {}),
            ...(flags.batchSampleMs !== undefined ? { sampleMs: flags.batchSampleMs } : {}),
            ...(flags.batchLaneRefreshMs !== undefined ? { laneRefreshMs: flags.batchLaneRefreshMs } : {}),
            ...(flags.batchRowsPerRequest !== undefined ? { rowsPerRequest: flags.batchRowsPerRequest } : {}),
          },
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
            ...(flags.schedulerGpuSlots !== undefined ? { gpuSlots: flags.schedulerGpuSlots } : {}),
            defaultCapacityRps: flags.schedulerDefaultCapacityRps,
            p99BudgetMs: flags.schedulerP99BudgetMs,
            minGateways: flags.schedulerMinGateways,
            maxGateways: flags.schedulerMaxGateways,
            maxInstancesPerModel: flags.maxInstancesPerModel,
            maxInstancesPerHost: flags.maxInstances,
          },
          secureCookies: flags.secureCookies,
          apiAddress: flags.apiAddress,
          apiPort: flags.apiPort,
          logVerbose: flags.logVerbose,
          logFile,
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
    // On a cluster, model control is never anonymous, even on loopback before the first key exists:
    // it needs an admin key (the console uses the control plane's internal one).
    if (role.name !== "all") ring.noteKeysEverIssued();
    if (role.sharedKeysUrl !== undefined) {
      // A gateway beside a control plane: the keys it checks, the models and operators it serves are
      // the control plane's (PostgreSQL and the shared model store). Keys first: the server starts with them.
      // Loaded here, not at the top: they bring the database client, which a gateway of role "all" never needs.
      const { SharedState } = await import("./shared-state.js");
      const { apiKeysPart, modelStorePart, operatorsPart } = await import("./shared-parts.js");
      shared = await SharedState.start({
        url: role.sharedKeysUrl,
        parts: [apiKeysPart(ring), modelStorePart(() => server), operatorsPart(() => server, logger)],
        logger,
        resyncSecs: flags.sharedStateResyncSecs,
      });
    }
    // Beyond loopback, model control must not be open to whoever reaches the port. The cluster roles
    // are never open: their model control needs an admin key (GatewayAccessPolicy, locked above).
    if (
      role.name === "all" &&
      !loopbackOnly &&
      options.modelControlMode !== "none" &&
      !requireApiKey &&
      !ring.hasUserAdminKeys()
    ) {
      throw new Error(
        "refusing to expose model control (load/unload) beyond loopback without API keys: create an admin-scoped key " +
          "(operon keys create --scopes admin,infer ...) and/or pass --require-api-key, listen on 127.0.0.1, or use --model-control-mode none",
      );
    }
    const anonymousModelControl = flags.anonymousModelControl;
    server = await startOperonServer({
      ...options,
      ...(withControlPlane || requireApiKey || shared !== undefined
        ? { access: { ring, requireApiKey, anonymousModelControl: role.name === "all" && anonymousModelControl } }
        : {}),
    });
    if (shared !== undefined) {
      await shared.resync(); // the operators, now that the server runs
      const state = shared;
      server.engine.setReadinessDetail(() => {
        const status = state.status();
        return status.current ? undefined : `shared state stale since ${status.readAt ?? "start"}: ${status.problem}`;
      });
      if (server.httpPort !== undefined) {
        const { gatewaySessionName } = await import("@operon/db");
        await shared.showAs(gatewaySessionName(server.httpPort, hostname(), server.metricsPort));
      }
      logger.info(
        { ...shared.status(), resyncSecs: flags.sharedStateResyncSecs },
        "API keys, models and operators follow the database (LISTEN/NOTIFY, periodic resync)",
      );
    }
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
      // The resource scheduler's desired gateway replicas, exported where Prometheus scrapes this pod (an HPA follows it).
      const gauges = server;
      controlPlane.onDesiredGatewayReplicas((replicas) =>
        gauges.setGauge(
          DESIRED_GATEWAY_REPLICAS_METRIC,
          "Gateways (operon serve --role gateway) the resource scheduler's summed demand needs; an HPA on the gateway Deployment follows it",
          replicas,
        ),
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
      role: flags.role,
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
          ` (or ${embeddedDatabase ? "stop Operon and run" : "run"}: ${adminCreateCommand()})\n`,
      );
    }
  } else if (api?.setupToken !== undefined) {
    process.stderr.write(
      `First run: no account exists yet; create the admin with: ${adminCreateCommand()}${embeddedDatabase ? " (after stopping Operon: the embedded database is for one process)" : ""}\n`,
    );
  }
  if (logFile !== undefined)
    process.stderr.write(
      `Operon log (JSON lines) in ${logFile}; warnings also here (--log-file - prints it all here)\n`,
    );
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
