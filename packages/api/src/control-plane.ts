import { announceChange } from "@operon/db";
import { randomBytes } from "node:crypto";
import { resolveControlPlaneOptions, type ControlPlaneOptions, type ResolvedControlPlaneOptions } from "./options.js";
import type { ApiServices } from "./services.js";
import { ApiKeyService } from "./services/api-keys/api-key-service.js";
import { GatewayClient } from "./services/gateway/gateway-client.js";
import { clusterGateways } from "./services/cluster/cluster-gateways.js";
import { HardwareProfiles } from "./services/costs/hardware-profiles.js";
import { OperatorRegistry, type SyncFailure } from "./services/operators/operator-registry.js";
import { PerfRuns } from "./services/perf/perf-runs.js";
import { PerfImports } from "./services/perf/perf-imports.js";
import type { TargetChangeListener } from "./services/target-changes.js";
import { ConfigSearches } from "./services/config-search/config-searches.js";
import { UsageSampler } from "./services/usage/usage-sampler.js";
import { TenantGroups } from "./services/tenants/tenant-groups.js";
import { TenantUsageSampler } from "./services/tenants/tenant-usage-sampler.js";
import { ResourceScheduler } from "./services/resource-scheduler/resource-scheduler.js";
import { LoginRateLimiter } from "./services/accounts/login-rate-limiter.js";
import { noticeAccountLocked } from "./services/accounts/account-lock-notice.js";
import { createModelServices } from "./services/models/model-services.js";
import { ModelStore } from "./services/models/model-store.js";
import { UploadSessions } from "./services/models/upload-sessions.js";
import { SessionStore } from "./services/accounts/session-store.js";
import { Datasets } from "./services/batch/datasets.js";
import { BatchJobs } from "./services/batch/batch-jobs.js";
import { dirname, join } from "node:path";
import type { Logger } from "@operon/protocol/logger";

/**
 * The control plane: the API's services over one database and one gateway,
 * plus its background work. `operon serve` creates one beside the gateway;
 * the HTTP API (http/api-server.ts) and in-process callers share it.
 */
export class ControlPlane {
  private stopped = false;

  private constructor(
    readonly services: ApiServices,
    private readonly backgroundStops: Array<() => Promise<void> | void>,
  ) {}

  static async create(options: ControlPlaneOptions): Promise<ControlPlane> {
    const resolved: ResolvedControlPlaneOptions = resolveControlPlaneOptions(options);
    const prisma = resolved.db.prisma;
    const needsSetup = (await prisma.user.count()) === 0;
    const gateway = new GatewayClient(resolved.gateway);
    const perfRuns = new PerfRuns(prisma, gateway, resolved.gateway, resolved.logger, resolved.perfRuns);
    // Automatic perf reports: every stored upload, new version, config change and operator version queues a run (unless turned off).
    const onChange: TargetChangeListener = (change) => {
      // Gateways beside this control plane (operon serve --role gateway) re-read the model store or the operators.
      announceChange(prisma, change.kind === "MODEL" ? "models" : "operators").catch((error: unknown) =>
        resolved.logger.warn({ err: (error as Error).message, change }, "could not announce a change to the gateways"),
      );
      if (change.action.endsWith(".delete")) return perfRuns.targetDeleted({ kind: change.kind, name: change.name });
      void perfRuns.requestAutomatic(
        { kind: change.kind, name: change.name, version: change.version },
        `${change.action}${change.version !== undefined ? ` version ${change.version}` : ""}`,
      );
    };
    const uploads = await UploadSessions.create({
      stagingDir: resolved.uploadStagingDir,
      prisma,
      logger: resolved.logger,
    });
    const store = await ModelStore.create(resolved.modelStoreDir);
    const models = await createModelServices({
      prisma,
      locks: resolved.db.locks,
      gateway,
      store,
      uploads,
      maxUploadBytes: resolved.maxUploadBytes,
      logger: resolved.logger,
      onChange,
    });
    const hardware = new HardwareProfiles(prisma, resolved.db.locks);
    const apiKeys = await ApiKeyService.create(prisma);
    const batchStorage = {
      dir: resolved.batch.dir ?? join(dirname(resolved.uploadStagingDir), "batch"),
      serverPathRoots: resolved.batch.serverPathRoots,
      postgresConnections: resolved.batch.postgresConnections,
    };
    const datasets = new Datasets(prisma, batchStorage);
    const services: ApiServices = {
      prisma,
      options: resolved,
      logger: resolved.logger,
      sessions: new SessionStore(prisma),
      apiKeys,
      loginLimiter: new LoginRateLimiter(
        resolved.loginRateLimits,
        (lock) => void noticeAccountLocked(prisma, resolved.logger, lock),
      ),
      gateway,
      operators: new OperatorRegistry(prisma, gateway, resolved.logger, resolved.db.locks, onChange),
      perfRuns,
      perfInputs: perfRuns.inputs,
      perfImports: new PerfImports(prisma, gateway),
      hardware,
      configSearches: new ConfigSearches({
        prisma,
        gateway,
        gatewayOptions: resolved.gateway,
        store,
        perfRuns,
        configEdit: models.configEdit,
        defaultProfile: () => hardware.defaultProfile(),
        logger: resolved.logger,
      }),
      usageSampler: new UsageSampler(
        prisma,
        gateway,
        { intervalSecs: resolved.usageSampleIntervalSecs, retentionDays: resolved.usageRetentionDays },
        resolved.logger,
        // The cluster's other gateways on this database, with the internal key every gateway accepts.
        () => clusterGateways(prisma, resolved.gateway.adminKey),
      ),
      resourceScheduler: new ResourceScheduler(
        prisma,
        gateway,
        resolved.resourceScheduler,
        resolved.logger,
        Date.now,
        // Its inputs per gateway and summed (issue 23): the cluster's gateways, read with the internal key.
        () => clusterGateways(prisma, resolved.gateway.adminKey),
      ),
      models,
      uploads,
      setup: { token: needsSetup ? randomBytes(18).toString("base64url") : undefined },
      tenants: new TenantGroups(prisma, apiKeys),
      tenantSampler: new TenantUsageSampler(
        prisma,
        gateway,
        { intervalSecs: resolved.usageSampleIntervalSecs, retentionDays: resolved.usageRetentionDays },
        resolved.logger,
        // Every gateway's tenant counters, like the usage sampler's (issue 23).
        () => clusterGateways(prisma, resolved.gateway.adminKey),
      ),
      datasets,
      batchJobs: new BatchJobs(
        prisma,
        gateway,
        apiKeys,
        datasets,
        {
          storage: batchStorage,
          gateway: resolved.gateway,
          maxRunning: resolved.batch.maxRunning,
          chunkRows: resolved.batch.chunkRows,
          ...(resolved.batch.budgetMs !== undefined ? { budgetMs: resolved.batch.budgetMs } : {}),
          ...(resolved.batch.windowMs !== undefined ? { aimdWindowMs: resolved.batch.windowMs } : {}),
          ...(resolved.batch.sampleMs !== undefined ? { throughputSampleMs: resolved.batch.sampleMs } : {}),
          ...(resolved.batch.laneRefreshMs !== undefined ? { laneRefreshMs: resolved.batch.laneRefreshMs } : {}),
          ...(resolved.batch.rowsPerRequest !== undefined ? { rowsPerRequest: resolved.batch.rowsPerRequest } : {}),
        },
        resolved.logger,
      ),
    };
    const backgroundStops: Array<() => Promise<void> | void> = [];
    // The upload sweeper; stopping removes the staged files of unfinished uploads.
    backgroundStops.push(() => uploads.stop());
    // The gateway keeps operators in memory only: register the stored ones before
    // anything resumes that may call them (queued perf runs, batch jobs).
    await registerStoredOperators(services.operators, resolved.logger);
    // Runs a crash left RUNNING cannot be resumed: they end FAILED "interrupted by a restart".
    const interrupted = await services.perfRuns.recoverInterrupted();
    if (interrupted > 0)
      resolved.logger.warn({ reports: interrupted }, "perf runs interrupted by a restart marked failed");
    // QUEUED ones never started: they run now, in order.
    const resumed = await services.perfRuns.resume();
    if (resumed > 0) resolved.logger.info({ reports: resumed }, "queued perf runs resumed");
    backgroundStops.push(() => services.perfRuns.stop());
    const interruptedSearches = await services.configSearches.recoverInterrupted();
    if (interruptedSearches > 0)
      resolved.logger.warn({ searches: interruptedSearches }, "config searches interrupted by a restart marked failed");
    backgroundStops.push(() => services.configSearches.stop());
    services.usageSampler.start();
    backgroundStops.push(() => services.usageSampler.stop());
    services.tenantSampler.start();
    backgroundStops.push(() => services.tenantSampler.stop());
    services.resourceScheduler.start();
    backgroundStops.push(() => services.resourceScheduler.stop());
    // Jobs a restart interrupted resume from their checkpoints; stopping checkpoints what finished.
    const resumedJobs = await services.batchJobs.start();
    if (resumedJobs > 0) resolved.logger.info({ jobs: resumedJobs }, "batch jobs interrupted by a restart resume");
    backgroundStops.push(() => services.batchJobs.stop());
    return new ControlPlane(services, backgroundStops);
  }

  /**
   * Registers every stored operator with the gateway again, for a gateway
   * that restarted with none (create() does it once, before jobs resume).
   * Failures (e.g. a model an operator calls is no longer served) are
   * returned, never thrown.
   */
  async syncOperatorsToGateway(): Promise<{ registered: string[]; failures: SyncFailure[] }> {
    return this.services.operators.syncToGateway();
  }

  /** The first-run setup token while no account exists (print it for the person who started Operon). */
  get setupToken(): string | undefined {
    return this.services.setup.token;
  }

  /** Stops background work; the database stays open (its owner closes it). Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const stop of this.backgroundStops.reverse()) await stop();
  }
}

/**
 * Registers the stored operators with the gateway, logging what it did. The
 * gateway must be up; one it cannot reach fails each operator, which is
 * logged, never thrown: the control plane still starts.
 */
async function registerStoredOperators(operators: OperatorRegistry, logger: Logger): Promise<void> {
  try {
    const { registered, failures } = await operators.syncToGateway();
    if (registered.length > 0)
      logger.info({ operators: registered }, "registered the stored operators with the gateway");
    for (const failure of failures)
      logger.error(
        { operator: failure.name, reason: failure.message },
        "a stored operator could not be registered with the gateway",
      );
  } catch (error) {
    logger.error({ err: (error as Error).message }, "could not register the stored operators with the gateway");
  }
}
