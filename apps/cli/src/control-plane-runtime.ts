import type { ResourceSchedulerOptions } from "@operon/api";
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { ControlPlane, startApiServer, type ApiServer } from "@operon/api";
import { createUser } from "@operon/api/user-accounts";
import { storeControlPlaneKey } from "@operon/api/control-plane-key";
import type { Database } from "@operon/db";
import type { Logger } from "@operon/gateway/logger";
import type { ApiKeyGrant } from "@operon/protocol/api-keys";
import type { ControlPlaneDirs } from "./control-plane-setup.js";

/**
 * The control plane's share of `operon serve`, run on its own thread
 * (control-plane-thread.ts): the control plane services and the API server.
 * It reaches the gateway only through the gateway's HTTP endpoints; the API
 * keys the gateway checks travel as messages (control-plane-messages.ts).
 */
/** Creates the first admin from --admin-email/--admin-password when no account exists yet. */
export async function ensureFirstAdmin(
  db: Database,
  flags: { email?: string; password?: string },
  logger: Logger,
): Promise<void> {
  if (!flags.email && !flags.password) return;
  if (!flags.email || !flags.password)
    throw new Error("--admin-email and --admin-password (or $OPERON_ADMIN_PASSWORD) go together");
  if ((await db.prisma.user.count()) > 0) {
    logger.info({ email: flags.email }, "accounts exist already: --admin-email/--admin-password ignored");
    return;
  }
  await createUser(
    db.prisma,
    { userId: null, ip: "cli" },
    { email: flags.email, role: "ADMIN", password: flags.password },
  );
  logger.info({ email: flags.email }, "created the first admin");
}

export interface RunningControlPlane {
  controlPlane: ControlPlane;
  api: ApiServer;
  /** Give it to the console's server (startConsole): the API believes the client addresses it forwards. */
  proxyToken: string;
  /** Writes the last-used times the gateway gathered (key id -> epoch ms). */
  recordKeyUsage(used: Map<string, number>): Promise<void>;
  stop(): Promise<void>;
}

export async function startControlPlane(options: {
  db: Database;
  /**
   * Called with the stored keys' grants on every change (the gateway's ring
   * gets them and the internal grant), and whether any key was ever issued
   * (the ring then keeps model control locked for good).
   */
  onGrants: (grants: ApiKeyGrant[], everIssued: boolean) => void;
  internal: { key: string; grant: ApiKeyGrant };
  gatewayHttpUrl: string;
  gatewayMetricsUrl: string | undefined;
  dirs: ControlPlaneDirs;
  maxUploadBytes: number;
  usageSampleIntervalSecs: number;
  usageRetentionDays: number;
  resourceScheduler?: Partial<ResourceSchedulerOptions>;
  batch?: {
    serverPathRoots: string[];
    postgresConnections?: Record<string, string>;
    budgetMs?: number;
    windowMs?: number;
    sampleMs?: number;
    laneRefreshMs?: number;
    rowsPerRequest?: number;
  };
  secureCookies: boolean;
  apiAddress: string;
  apiPort: number;
  /** The resource scheduler's desired gateway replica count: the stored one at start, then each period's. */
  onDesiredGatewayReplicas?: (replicas: number) => void;
  logger: Logger;
}): Promise<RunningControlPlane> {
  const { logger } = options;
  // Before anything reads a gateway: the cluster's gateways accept the key once they read this row.
  const { revoked } = await storeControlPlaneKey(options.db.prisma, options.internal.key);
  logger.info(
    { revokedPrevious: revoked },
    "control plane internal key stored (hash only; the gateways accept it, the previous one is revoked)",
  );
  const controlPlane = await ControlPlane.create({
    db: options.db,
    gateway: { httpUrl: options.gatewayHttpUrl, metricsUrl: options.gatewayMetricsUrl, adminKey: options.internal.key },
    modelStoreDir: options.dirs.modelStoreDir,
    uploadStagingDir: options.dirs.uploadStagingDir,
    maxUploadBytes: options.maxUploadBytes,
    usageSampleIntervalSecs: options.usageSampleIntervalSecs,
    usageRetentionDays: options.usageRetentionDays,
    ...(options.resourceScheduler !== undefined ? { resourceScheduler: options.resourceScheduler } : {}),
    batch: {
      dir: options.dirs.batchDir,
      serverPathRoots:
        options.batch !== undefined && options.batch.serverPathRoots.length > 0
          ? options.batch.serverPathRoots.map((root) => resolve(root))
          : [options.dirs.datasetsDir],
      ...(options.batch?.postgresConnections !== undefined
        ? { postgresConnections: options.batch.postgresConnections }
        : {}),
      ...(options.batch?.budgetMs !== undefined ? { budgetMs: options.batch.budgetMs } : {}),
      ...(options.batch?.windowMs !== undefined ? { windowMs: options.batch.windowMs } : {}),
      ...(options.batch?.sampleMs !== undefined ? { sampleMs: options.batch.sampleMs } : {}),
      ...(options.batch?.laneRefreshMs !== undefined ? { laneRefreshMs: options.batch.laneRefreshMs } : {}),
      ...(options.batch?.rowsPerRequest !== undefined ? { rowsPerRequest: options.batch.rowsPerRequest } : {}),
    },
    secureCookies: options.secureCookies,
    logger: logger.child({ component: "control-plane" }),
  });
  const apiKeys = controlPlane.services.apiKeys;
  const unsubscribeKeys = apiKeys.subscribe((grants) => options.onGrants([...grants], apiKeys.keysEverIssued()));
  const unsubscribeReplicas =
    options.onDesiredGatewayReplicas === undefined
      ? () => undefined
      : controlPlane.services.resourceScheduler.onDesiredReplicas(options.onDesiredGatewayReplicas);
  const unsubscribe = (): void => {
    unsubscribeKeys();
    unsubscribeReplicas();
  };
  const recordKeyUsage = async (used: Map<string, number>): Promise<void> => {
    used.delete(options.internal.grant.id);
    if (used.size > 0)
      await controlPlane.services.apiKeys
        .markUsed(used)
        .catch((error: unknown) => logger.warn({ err: (error as Error).message }, "could not record API key use"));
  };
  // Shared with the console's server only (startConsole), in memory: it vouches for the browser addresses the console forwards.
  const proxyToken = randomBytes(24).toString("base64url");
  let api: ApiServer;
  try {
    api = await startApiServer(controlPlane.services, { host: options.apiAddress, port: options.apiPort, proxyToken });
  } catch (error) {
    unsubscribe();
    await controlPlane.stop();
    throw error;
  }
  return {
    controlPlane,
    api,
    proxyToken,
    recordKeyUsage,
    async stop() {
      unsubscribe();
      await api.stop();
      await controlPlane.stop();
    },
  };
}
