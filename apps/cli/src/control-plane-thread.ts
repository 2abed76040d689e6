import { parentPort, workerData } from "node:worker_threads";
import type { Database } from "@operon/db";
import { ApiKeyService } from "@operon/api/api-key-service";
import { createLogger } from "@operon/gateway/logger";
import type { ControlPlaneThreadOptions, FromControlPlane, ToControlPlane } from "./control-plane-messages.js";
import { ensureFirstAdmin, startControlPlane, type RunningControlPlane } from "./control-plane-runtime.js";
import { controlPlaneDirs } from "./control-plane-setup.js";
import { describeDatabase, openMigratedDatabase } from "./database-flags.js";

/**
 * The control plane's thread of `operon serve` (see control-plane-messages.ts):
 * opens and migrates the database, sends the stored API keys, waits for the
 * gateway's URLs, then runs the control plane services and the API server
 * until told to stop.
 */
const port = parentPort;
if (port === null) throw new Error("control-plane-thread.js runs as a worker_thread of operon serve");
const options = workerData as ControlPlaneThreadOptions;
const logger = createLogger({ verbose: options.logVerbose, file: options.logFile });
const post = (message: FromControlPlane): void => port.postMessage(message);

let db: Database | undefined;
let running: RunningControlPlane | undefined;
type GatewayUrls = Extract<ToControlPlane, { type: "gateway" }>;
let resolveGateway: (message: GatewayUrls) => void = () => undefined;
/** Resolves with the gateway's URLs once it listens (the main thread says so). */
const gateway = new Promise<GatewayUrls>((resolve) => {
  resolveGateway = resolve;
});

async function start(): Promise<void> {
  const opened = await openMigratedDatabase(options.databaseUrl);
  db = opened.db;
  await ensureFirstAdmin(db, { email: options.adminEmail, password: options.adminPassword }, logger);
  const keys = await ApiKeyService.create(db.prisma);
  post({
    type: "keys",
    grants: keys.currentGrants(),
    everIssued: keys.keysEverIssued(),
    database: describeDatabase(options.databaseUrl),
    embedded: db.kind === "embedded",
    appliedMigrations: opened.migrations.applied.length,
  });
  const urls = await gateway;
  running = await startControlPlane({
    db,
    onGrants: (grants, everIssued) =>
      post({
        type: "keys",
        grants,
        everIssued,
        database: describeDatabase(options.databaseUrl),
        embedded: db!.kind === "embedded",
        appliedMigrations: 0,
      }),
    internal: options.internal,
    gatewayHttpUrl: urls.httpUrl,
    gatewayMetricsUrl: urls.metricsUrl,
    dirs: controlPlaneDirs(options.dataDir, options.modelStore),
    maxUploadBytes: options.maxUploadBytes,
    usageSampleIntervalSecs: options.usageSampleIntervalSecs,
    usageRetentionDays: options.usageRetentionDays,
    ...(options.resourceScheduler !== undefined ? { resourceScheduler: options.resourceScheduler } : {}),
    ...(options.batch !== undefined ? { batch: options.batch } : {}),
    secureCookies: options.secureCookies,
    apiAddress: options.apiAddress,
    apiPort: options.apiPort,
    onDesiredGatewayReplicas: (replicas) => post({ type: "desired-gateway-replicas", replicas }),
    logger,
  });
  post({
    type: "started",
    apiUrl: running.api.url,
    proxyToken: running.proxyToken,
    setupToken: running.controlPlane.setupToken,
  });
}

async function stop(): Promise<void> {
  await running
    ?.stop()
    .catch((error: unknown) =>
      logger.error({ err: (error as Error).message }, "error while stopping the control plane"),
    );
  await db?.close().catch(() => undefined);
  post({ type: "stopped" });
  port!.close();
}

port.on("message", (message: ToControlPlane) => {
  switch (message.type) {
    case "gateway":
      resolveGateway(message);
      return;
    case "key-usage":
      void running?.recordKeyUsage(new Map(message.used));
      return;
    case "model-control":
      running?.controlPlane.services.apiKeys
        .recordGatewayChange(message.event)
        .catch((error: unknown) =>
          logger.error(
            { err: (error as Error).message, event: message.event },
            "could not write a gateway model control change to the audit log",
          ),
        );
      return;
    case "stop":
      void stop();
      return;
  }
});

start().catch(async (error: unknown) => {
  post({ type: "failed", message: (error as Error).message });
  await db?.close().catch(() => undefined);
  port.close();
});
