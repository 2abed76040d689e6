import { z } from "zod";

/**
 * What `operon serve`'s flags come to once commander has parsed them (each
 * flag's own parser has checked its value; defaults are in serve-command.ts
 * beside the flags, Triton's). zod checks the whole object once, so the
 * command works on typed values, never on casts; a mismatch here is a bug in
 * the flag definitions, not a user error.
 */
const port = z.number().int().min(0).max(65535);
const count = z.number().int().min(0);
const positive = z.number().int().positive();

export const serveFlagsSchema = z
  .object({
    modelRepository: z.array(z.string()).min(1),
    httpPort: port,
    grpcPort: port,
    metricsPort: port,
    httpAddress: z.string(),
    grpcAddress: z.string(),
    metricsAddress: z.string(),
    allowHttp: z.boolean(),
    allowGrpc: z.boolean(),
    allowMetrics: z.boolean(),
    allowGpuMetrics: z.boolean(),
    metricsIntervalMs: positive,
    modelControlMode: z.enum(["none", "poll", "explicit"]),
    loadModel: z.array(z.string()),
    repositoryPollSecs: count,
    strictModelConfig: z.boolean(),
    strictReadiness: z.boolean(),
    exitOnError: z.boolean(),
    exitTimeoutSecs: count,
    logVerbose: count,
    logFile: z.string().optional(),
    dataDir: z.string(),
    maxUploadBytes: positive,
    httpMaxBodyBytes: positive,
    httpMaxInflightBodyBytes: positive.optional(),
    grpcInferMaxMessageBytes: positive,
    grpcMaxInflightMessageBytes: positive.optional(),
    maxBytesElements: positive,
    httpBodyTimeoutSecs: positive,
    httpMinBodyBytesPerSec: count,
    httpHeadersTimeoutSecs: positive,
    httpMaxConnections: positive.optional(),
    httpMaxConnectionsPerAddress: positive,
    httpMaxInflateRatio: positive,
    decodeThreads: positive.optional(),
    decodeMaxHeapMb: positive,
    decodeTimeoutSecs: positive,
    metricsRequireKey: z.boolean(),
    backendIsolation: z.enum(["auto", "thread", "process"]),
    /** --cache-config gathered over its uses (parseCacheConfig); absent = no cache. */
    cacheConfig: z.object({ cache: z.literal("local"), settings: z.object({ size: positive.optional() }) }).optional(),
    defaultMaxBatchSize: count,
    workerMemoryLimitMb: count,
    sandboxMemoryMb: count,
    sandboxCpuMs: count,
    backendDirectory: z.string().optional(),
    /** --backend-config gathered per backend (parseBackendConfig). */
    backendConfig: z.record(z.string(), z.record(z.string(), z.string())),
    traceConfig: z.array(z.string()),
    allowNativeUploads: z.boolean(),
    maxInstancesPerModel: positive,
    maxThreadsPerInstance: positive,
    maxInstances: positive,
    role: z.enum(["all", "gateway", "control-plane"]),
    sharedStateResyncSecs: positive,
    modelStore: z.string().min(1).optional(),
    controlPlane: z.boolean(),
    console: z.boolean(),
    consoleAddress: z.string(),
    consolePort: port,
    trustedProxy: z.array(z.string()),
    apiAddress: z.string(),
    apiPort: port,
    databaseUrl: z.string().optional(),
    adminEmail: z.string().optional(),
    adminPassword: z.string().optional(),
    adminPasswordFile: z.string().optional(),
    workerUser: z.string().min(1).optional(),
    requireApiKey: z.boolean(),
    anonymousModelControl: z.boolean(),
    secureCookies: z.boolean(),
    usageSampleSecs: count,
    usageRetentionDays: count,
    resourceScheduler: z.boolean(),
    schedulerPeriodSecs: positive,
    schedulerHeadroom: z.number().min(0),
    schedulerCooldownSecs: count,
    schedulerIdleUnloadSecs: count,
    schedulerMemoryBudgetBytes: positive.optional(),
    schedulerCpuSlots: positive.optional(),
    schedulerGpuSlots: positive.optional(),
    schedulerDefaultCapacityRps: z.number().positive(),
    schedulerP99BudgetMs: z.number().positive(),
    schedulerMinGateways: positive,
    schedulerMaxGateways: positive,
    batchDataRoot: z.array(z.string().min(1)),
    batchPostgres: z
      .array(
        z.string().regex(/^[A-Za-z0-9_-]{1,64}=postgres(ql)?:\/\/\S+$/, {
          error: "--batch-postgres takes NAME=postgresql://user@host/database (NAME: letters, digits, _ and -)",
        }),
      )
      .default([]),
    batchBudgetMs: z.number().positive().optional(),
    batchWindowMs: z.number().int().min(100).max(60_000).optional(),
    batchSampleMs: z.number().int().min(1000).max(60_000).optional(),
    batchLaneRefreshMs: z.number().int().min(1000).max(300_000).optional(),
    batchRowsPerRequest: z.number().int().min(1).max(1024).optional(),
    parkedModelPolicy: z.enum(["wait", "retry-after"]),
    parkedModelWaitMs: count,
  })
  .refine((flags) => flags.schedulerMinGateways <= flags.schedulerMaxGateways, {
    error: "--scheduler-max-gateways must be at least --scheduler-min-gateways",
    path: ["schedulerMaxGateways"],
  });

export type ServeFlags = z.infer<typeof serveFlagsSchema>;
export type CacheConfig = NonNullable<ServeFlags["cacheConfig"]>;
