import { z } from "zod";
import type { Database } from "@operon/db";
import type { GatewayClientOptions } from "./services/gateway/gateway-client.js";
import { DEFAULT_LOGIN_RATE_LIMITS, type LoginRateLimits } from "./services/accounts/login-rate-limiter.js";
import type { Logger } from "@operon/protocol/logger";
import type { PerfRunsOptions } from "./services/perf/perf-run-options.js";
import {
  RESOURCE_SCHEDULER_DEFAULTS,
  type ResourceSchedulerOptions,
} from "./services/resource-scheduler/resource-scheduler.js";

/** What the control plane needs; the CLI builds it from flags, tests from fixtures. */
export interface ControlPlaneOptions {
  /** An open, migrated database (see @operon/db openAndMigrate). */
  db: Database;
  gateway: GatewayClientOptions;
  /**
   * The Triton model repository that uploads are stored in
   * (`<dir>/<model>/<version>/...` + config.pbtxt). The gateway serves it as
   * one of its --model-repository folders.
   */
  modelStoreDir: string;
  /** Where upload chunks are staged until an upload is finished or abandoned. */
  uploadStagingDir: string;
  /** Largest model file accepted (default 512 MiB). */
  maxUploadBytes?: number;
  /** Seconds between usage samples of the gateway (default 15; 0 = no background sampling). */
  usageSampleIntervalSecs?: number;
  /**
   * Days usage samples are kept (default 30, the longest range the console
   * charts; 0 = forever). Older samples are deleted at start and hourly.
   */
  usageRetentionDays?: number;
  /** Mark cookies Secure (set when the console is served over HTTPS). */
  secureCookies?: boolean;
  loginRateLimits?: Omit<LoginRateLimits, "perAccountAllAddresses"> & { perAccountAllAddresses?: number };
  logger?: Logger;
  /** The perf queue's headroom probe and clock (tests inject them); defaults: the gateway's statistics, real time. */
  perfRuns?: PerfRunsOptions;
  /** The resource scheduler (services/resource-scheduler); unset fields take RESOURCE_SCHEDULER_DEFAULTS. */
  resourceScheduler?: Partial<ResourceSchedulerOptions>;
  /**
   * Batch jobs (services/batch): `dir` holds uploaded dataset files, job snapshots and results (default: beside the
   * upload staging folder); `serverPathRoots` the folders admins may make datasets of (default: none).
   */
  batch?: {
    dir?: string;
    serverPathRoots?: string[];
    /** PostgreSQL databases table datasets may read, by name (postgres-table.ts). */
    postgresConnections?: Record<string, string>;
    maxRunning?: number;
    chunkRows?: number;
    budgetMs?: number;
    windowMs?: number;
    /** The interval of a job's throughput samples (job-throughput-recorder.ts). */
    sampleMs?: number;
    /** How often a running job lists the cluster's gateways again (gateway-lanes.ts). */
    laneRefreshMs?: number;
    /** Rows a job's request carries for a model that batches, unless the job asks (rows-per-request.ts). */
    rowsPerRequest?: number;
  };
}

export const CONTROL_PLANE_DEFAULTS = {
  maxUploadBytes: 512 * 1024 * 1024,
  usageSampleIntervalSecs: 15,
  usageRetentionDays: 30,
  secureCookies: false,
  loginRateLimits: DEFAULT_LOGIN_RATE_LIMITS,
} as const;

export const SILENT_LOGGER: Logger = { info: () => {}, warn: () => {}, error: () => {} };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const count = z.number().int().min(0);

/**
 * ControlPlaneOptions checked once, with the defaults filled in. Objects the
 * control plane is handed (database, logger) pass through as they are.
 */
const controlPlaneOptionsSchema = z.object({
  db: z.custom<Database>((value) => isObject(value) && "prisma" in value, {
    error: "an open database (see @operon/db openAndMigrate)",
  }),
  gateway: z.custom<GatewayClientOptions>((value) => isObject(value) && typeof value["httpUrl"] === "string", {
    error: "the gateway's httpUrl",
  }),
  modelStoreDir: z.string().min(1),
  uploadStagingDir: z.string().min(1),
  maxUploadBytes: z.number().int().positive().default(CONTROL_PLANE_DEFAULTS.maxUploadBytes),
  usageSampleIntervalSecs: count.default(CONTROL_PLANE_DEFAULTS.usageSampleIntervalSecs),
  usageRetentionDays: count.default(CONTROL_PLANE_DEFAULTS.usageRetentionDays),
  secureCookies: z.boolean().default(CONTROL_PLANE_DEFAULTS.secureCookies),
  loginRateLimits: z
    .object({
      perAccount: count,
      perAddress: count,
      perAccountAllAddresses: count.default(DEFAULT_LOGIN_RATE_LIMITS.perAccountAllAddresses),
      windowSecs: z.number().positive(),
    })
    .default(CONTROL_PLANE_DEFAULTS.loginRateLimits),
  logger: z
    .custom<Logger>((value) => isObject(value) && typeof value["info"] === "function")
    .default(() => SILENT_LOGGER),
  perfRuns: z
    .custom<PerfRunsOptions>((value) => isObject(value), {
      error: "perf queue options (probe, gateClock, headroomRecheckMs)",
    })
    .optional(),
  batch: z
    .object({
      dir: z.string().min(1).optional(),
      serverPathRoots: z.array(z.string().min(1)).default([]),
      postgresConnections: z.record(z.string(), z.string().min(1)).default({}),
      maxRunning: z.number().int().positive().default(1),
      chunkRows: z.number().int().positive().max(100_000).default(256),
      budgetMs: z.number().positive().optional(),
      windowMs: z.number().int().min(100).max(60_000).optional(),
      sampleMs: z.number().int().min(1000).max(60_000).optional(),
      laneRefreshMs: z.number().int().min(1000).max(300_000).optional(),
      rowsPerRequest: z.number().int().min(1).max(1024).optional(),
    })
    .default({ serverPathRoots: [], postgresConnections: {}, maxRunning: 1, chunkRows: 256 }),
  resourceScheduler: z
    .object({
      enabledByDefault: z.boolean().default(RESOURCE_SCHEDULER_DEFAULTS.enabledByDefault),
      periodSecs: z.number().min(0).default(RESOURCE_SCHEDULER_DEFAULTS.periodSecs),
      headroom: z.number().min(0).max(10).default(RESOURCE_SCHEDULER_DEFAULTS.headroom),
      hysteresis: z.number().min(0).max(10).default(RESOURCE_SCHEDULER_DEFAULTS.hysteresis),
      scaleDownCooldownSecs: z.number().min(0).default(RESOURCE_SCHEDULER_DEFAULTS.scaleDownCooldownSecs),
      scaleUpCooldownSecs: z.number().min(0).optional(),
      idleUnloadSecs: z.number().min(0).default(RESOURCE_SCHEDULER_DEFAULTS.idleUnloadSecs),
      defaultCapacityRps: z.number().positive().default(RESOURCE_SCHEDULER_DEFAULTS.defaultCapacityRps),
      p99BudgetMs: z.number().positive().default(RESOURCE_SCHEDULER_DEFAULTS.p99BudgetMs),
      memoryBudgetBytes: z.number().int().positive().optional(),
      instanceMemoryBytes: z.number().int().positive().default(RESOURCE_SCHEDULER_DEFAULTS.instanceMemoryBytes),
      cpuSlots: z.number().int().positive().optional(),
      gpuSlots: z.number().int().positive().optional(),
      maxInstancesPerModel: z.number().int().positive().optional(),
      maxInstancesPerHost: z.number().int().positive().optional(),
      minGateways: z.number().int().positive().default(RESOURCE_SCHEDULER_DEFAULTS.minGateways),
      maxGateways: z.number().int().positive().default(RESOURCE_SCHEDULER_DEFAULTS.maxGateways),
    })
    .refine((scheduler) => scheduler.minGateways <= scheduler.maxGateways, {
      error: "--scheduler-max-gateways must be at least --scheduler-min-gateways",
      path: ["maxGateways"],
    })
    .default(() => ({ ...RESOURCE_SCHEDULER_DEFAULTS })),
});

export type ResolvedControlPlaneOptions = z.output<typeof controlPlaneOptionsSchema>;

export function resolveControlPlaneOptions(options: ControlPlaneOptions): ResolvedControlPlaneOptions {
  return controlPlaneOptionsSchema.parse(options);
}
