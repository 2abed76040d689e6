import { mkdir } from "node:fs/promises";
import type { BatchJob, Prisma, PrismaClient } from "@operon/db";
import { generateApiKey } from "@operon/protocol/api-keys";
import type { Logger } from "@operon/protocol/logger";
import type { ApiKeyService } from "../api-keys/api-key-service.js";
import { clusterGateways } from "../cluster/cluster-gateways.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import { parseJsonColumn } from "../json-column.js";
import { initialJobLimit, jobLimitCeiling } from "./aimd.js";
import type { BatchStorageOptions } from "./datasets.js";
import { inputMappingSchema, planInputs } from "./input-mapping.js";
import { type JobFiles, outputColumnsOf } from "./job-files.js";
import { JobRunner, type ChunkOutcome } from "./job-runner.js";
import { GatewayLanes, LOCAL_GATEWAY, gatewayRowsSchema, type DiscoveredGateway } from "./gateway-lanes.js";
import { batchJobGrant, storeJobKeyHash } from "./job-key.js";
import { JobThroughputRecorder } from "./job-throughput-recorder.js";
import { withConnection } from "./postgres-table.js";
import { imageBaseOf } from "./row-request.js";
import { jobRowsPerRequest } from "./rows-per-request.js";
import { addRange, parseRanges, rowsIn } from "./row-ranges.js";
import { jobBudget, targetSignature, type JobTarget } from "./target-signature.js";

/**
 * Running one batch job: claim it, snapshot its dataset once, send its rows
 * through the gateways with a key of its own (job-runner.ts does the chunks,
 * gateway-lanes.ts spreads them over the cluster's gateways), commit each
 * checkpoint with the rows each gateway served, and merge the result when
 * every row is done. batch-jobs.ts decides which jobs run and answers for
 * them; this module only executes one.
 *
 * Which gateways: every gateway of the cluster (`--role gateway` on this
 * database, as the usage sampler finds them) that accepts the job's key and
 * serves its target. The control plane's own gateway serves rows only when
 * the cluster has no other: its event loop also serves the console and model
 * control, and on a cluster the gateways are where capacity is.
 */
export { BATCH_PRIORITY_LEVEL, JOB_GRANT_PREFIX } from "./job-key.js";

/** A job being executed: set `stop` to make it checkpoint and return; `done` settles then. */
export interface RunningJob {
  stop: boolean;
  done: Promise<void>;
  /** The job's gateways with their concurrency controllers' latest windows (aimd.ts): jobs.get shows them live. */
  lanes?: GatewayLanes;
  /** The rows one of its requests carries (rows-per-request.ts), once the run knows its target: jobs.get shows it. */
  rowsPerRequest?: number;
}

export type { JobControl } from "./gateway-lanes.js";

export interface BatchJobsOptions {
  storage: BatchStorageOptions;
  gateway: GatewayClientOptions;
  /** Jobs running at once. Default 1. */
  maxRunning?: number;
  /** Rows per checkpoint. Default 256. */
  chunkRows?: number;
  /** Most requests in flight per job. Default 64. */
  maxConcurrency?: number;
  /** Overrides the perf-report budget (ms); tests and benches. */
  budgetMs?: number;
  /** The AIMD window (ms, online-latency-monitor.ts); default 1000. Tests shorten it. */
  aimdWindowMs?: number | undefined;
  /** The interval of a job's throughput samples (ms, job-throughput-recorder.ts); default 5000. Tests shorten it. */
  throughputSampleMs?: number | undefined;
  /** How often a running job lists the cluster's gateways again (ms, gateway-lanes.ts); default 5000. */
  laneRefreshMs?: number | undefined;
  /**
   * Rows a job's request carries for a model that batches, unless the job asks its own (at most the model's
   * max_batch_size); default half the model's max_batch_size, at most 8 (rows-per-request.ts). An operator's
   * request carries one.
   */
  rowsPerRequest?: number | undefined;
}

export interface JobExecutionDeps {
  prisma: PrismaClient;
  /** The control plane's own client, for the target's metadata. */
  gateway: GatewayClient;
  apiKeys: ApiKeyService;
  options: BatchJobsOptions;
  logger: Logger;
  chunkRows: number;
  filesOf: (id: string) => JobFiles;
}

export class JobExecution {
  constructor(private readonly deps: JobExecutionDeps) {}

  async run(queued: BatchJob, run: RunningJob): Promise<void> {
    const id = queued.id;
    const files = this.deps.filesOf(id);
    let sandbox: Awaited<ReturnType<JobFiles["open"]>> | undefined;
    let lanes: GatewayLanes | undefined;
    let throughput: JobThroughputRecorder | undefined;
    try {
      const claimed = await this.deps.prisma.batchJob.updateMany({
        where: { id, state: "QUEUED" },
        data: { state: "RUNNING", startedAt: queued.startedAt ?? new Date(), error: null },
      });
      if (claimed.count === 0) return;
      const dataset = await this.deps.prisma.dataset.findUniqueOrThrow({ where: { id: queued.datasetId } });
      await mkdir(files.dir, { recursive: true });
      let total = queued.totalRows;
      if (total === null) {
        total = await files.takeSnapshot(withConnection(dataset, this.deps.options.storage.postgresConnections ?? {}));
        await this.deps.prisma.batchJob.update({ where: { id }, data: { totalRows: total } });
      }
      sandbox = await files.open();
      const parts = new Set(queued.parts);
      const removed = await files.removeUncommittedParts((name) => parts.has(name));
      if (removed > 0)
        this.deps.logger.info(
          { job: id, parts: removed },
          "batch job: removed result parts its checkpoint does not hold",
        );
      const target: JobTarget = {
        kind: queued.targetKind,
        name: queued.targetName,
        version: queued.targetVersion ?? undefined,
      };
      const signature = await targetSignature(this.deps.gateway, target);
      const planned = planInputs(
        parseJsonColumn(inputMappingSchema, queued.mapping, { table: "BatchJob", column: "mapping", id }),
        signature,
        await files.snapshotColumns(sandbox),
      );
      const kept =
        queued.outputs.length > 0
          ? signature.outputs.filter((o) => queued.outputs.includes(o.name))
          : signature.outputs;
      const outputs = outputColumnsOf(kept, signature.maxBatchSize);
      const budget =
        this.deps.options.budgetMs !== undefined
          ? { budgetMs: this.deps.options.budgetMs, source: "option" }
          : await jobBudget(this.deps.prisma, target);
      const key = await this.issueKey(id);
      const rowsPerRequest = jobRowsPerRequest(
        { ...target, maxBatchSize: signature.maxBatchSize },
        queued.rowsPerRequest,
        this.deps.options.rowsPerRequest,
      );
      run.rowsPerRequest = rowsPerRequest;
      const maxConcurrency = this.deps.options.maxConcurrency ?? 64;
      lanes = await GatewayLanes.start({
        discover: () => this.discoverGateways(),
        target,
        jobKey: key,
        limiter: {
          budgetMs: budget.budgetMs,
          max: Math.min(maxConcurrency, jobLimitCeiling(signature, rowsPerRequest)),
          initial: Math.min(maxConcurrency, initialJobLimit(signature, rowsPerRequest)),
        },
        logger: this.deps.logger,
        jobId: id,
        windowMs: this.deps.options.aimdWindowMs,
        refreshMs: this.deps.options.laneRefreshMs,
      });
      run.lanes = lanes;
      const jobLanes = lanes;
      const gatewayRows = {
        ...parseJsonColumn(gatewayRowsSchema, queued.gatewayRows, { table: "BatchJob", column: "gatewayRows", id }),
      };
      const rate = new RateWindow();
      throughput = JobThroughputRecorder.start({
        prisma: this.deps.prisma,
        jobId: id,
        logger: this.deps.logger,
        sampleMs: this.deps.options.throughputSampleMs,
      });
      const recorder = throughput;
      let ranges = parseRanges(queued.doneRanges);
      this.deps.logger.info(
        { job: id, target: target.name, rows: total, budgetMs: budget.budgetMs, budget: budget.source },
        "batch job running",
      );
      const runner = new JobRunner({
        files,
        sandbox,
        lanes,
        target,
        planned,
        outputs,
        requestedOutputs: queued.outputs,
        images: { baseDir: imageBaseOf(dataset), roots: this.imageRootsOf(dataset) },
        logger: this.deps.logger,
        chunkRows: this.deps.chunkRows,
        rowsPerRequest,
        stopping: () => run.stop,
        onRowSettled: () => recorder.rowSettled(),
        onRequestAnswered: () => recorder.requestAnswered(),
        commit: async (outcome: ChunkOutcome) => {
          ranges = addRange(ranges, outcome.range[0], outcome.range[1]);
          rate.add(outcome.range[1] - outcome.range[0]);
          for (const [gateway, rows] of Object.entries(outcome.servedBy))
            gatewayRows[gateway] = (gatewayRows[gateway] ?? 0) + rows;
          await this.deps.prisma.$transaction(async (tx) => {
            // Rows of the chunk that succeeded leave the failures (a retry that worked); one that failed again counts an attempt more.
            await tx.batchJobFailure.deleteMany({
              where: {
                jobId: id,
                row: {
                  gte: outcome.range[0],
                  lt: outcome.range[1],
                  notIn: outcome.failures.map((failure) => failure.row),
                },
              },
            });
            for (const failure of outcome.failures) {
              await tx.batchJobFailure.upsert({
                where: { jobId_row: { jobId: id, row: failure.row } },
                create: { jobId: id, row: failure.row, error: failure.error.slice(0, 2000) },
                update: { error: failure.error.slice(0, 2000), attempts: { increment: 1 }, at: new Date() },
              });
            }
            const failedRows = await tx.batchJobFailure.count({ where: { jobId: id } });
            await tx.batchJob.update({
              where: { id },
              data: {
                doneRanges: ranges as unknown as Prisma.InputJsonValue,
                doneRows: rowsIn(ranges),
                failedRows,
                parts: { push: outcome.part },
                gatewayRows,
                concurrency: jobLanes.limit,
                rowsPerSec: rate.perSecond(),
              },
            });
          });
        },
      });
      const complete = await runner.run(ranges, total);
      await lanes.stop();
      await throughput.stop();
      const now = await this.deps.prisma.batchJob.findUniqueOrThrow({ where: { id } });
      if (complete && now.state === "RUNNING") {
        const written = await files.writeResult(sandbox, dataset.keyColumns, outputs);
        await this.deps.prisma.batchJob.update({
          where: { id },
          data: { state: "DONE", finishedAt: new Date(), rowsPerSec: rate.perSecond() },
        });
        this.deps.logger.info({ job: id, results: written, failed: now.failedRows }, "batch job done");
      }
      // Paused or cancelled: the state was written by the transition; a shutdown leaves RUNNING for the next start.
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.deps.logger.warn({ job: id, err: message }, "batch job failed");
      await this.deps.prisma.batchJob
        .updateMany({
          where: { id, state: "RUNNING" },
          data: { state: "FAILED", error: message.slice(0, 2000), finishedAt: new Date() },
        })
        .catch(() => undefined);
    } finally {
      await lanes?.stop();
      await throughput?.stop();
      this.deps.apiKeys.setJobGrant(id, undefined);
      await storeJobKeyHash(this.deps.prisma, id, undefined).catch((error: unknown) =>
        this.deps.logger.warn({ job: id, err: (error as Error).message }, "batch job: could not clear its key's hash"),
      );
      sandbox?.close();
    }
  }

  /**
   * The job's own key (lowest priority, its own tenant): its grant goes to the control plane's own gateway
   * directly and, as a hash on the job, to the cluster's gateways (job-key.ts). Each gateway is used once it
   * accepts the key (gateway-lanes.ts).
   */
  private async issueKey(jobId: string): Promise<string> {
    const generated = generateApiKey();
    this.deps.apiKeys.setJobGrant(jobId, batchJobGrant(jobId, generated.hash, true));
    await storeJobKeyHash(this.deps.prisma, jobId, generated.hash);
    return generated.key;
  }

  /** The cluster's gateways with an address, or the control plane's own when it has none (see the top of this file). */
  private async discoverGateways(): Promise<DiscoveredGateway[]> {
    const cluster = await clusterGateways(this.deps.prisma, this.deps.options.gateway.adminKey);
    if (cluster.length > 0)
      return cluster.map((gateway) => ({
        id: gateway.gatewayHost ?? LOCAL_GATEWAY,
        httpUrl: gateway.client.httpUrl,
        reader: gateway.client,
      }));
    // The control plane's own client reads online latency: the job's key may only infer.
    return [{ id: LOCAL_GATEWAY, httpUrl: this.deps.options.gateway.httpUrl, reader: this.deps.gateway }];
  }

  /**
   * Image paths of rows must lie in the dataset's folder (uploads) or the allowed roots (server paths); a
   * table's rows may name no file of the server (no roots: every image path is refused).
   */
  private imageRootsOf(dataset: { source: string; format: string; path: string }): string[] {
    if (dataset.source === "POSTGRES") return [];
    return dataset.source === "SERVER_PATH" ? this.deps.options.storage.serverPathRoots : [imageBaseOf(dataset)];
  }
}

/** Rows per second over the last 10 s of checkpoints. */
class RateWindow {
  private readonly points: Array<{ at: number; rows: number }> = [];
  add(rows: number): void {
    const now = Date.now();
    this.points.push({ at: now, rows });
    while (this.points.length > 1 && (this.points[0] as { at: number }).at < now - 10_000) this.points.shift();
  }
  perSecond(): number | null {
    if (this.points.length < 2) return null;
    const first = this.points[0] as { at: number; rows: number };
    const last = this.points[this.points.length - 1] as { at: number };
    const seconds = (last.at - first.at) / 1000;
    if (seconds <= 0) return null;
    return this.points.slice(1).reduce((sum, point) => sum + point.rows, 0) / seconds;
  }
}
