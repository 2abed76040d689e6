import { rm } from "node:fs/promises";
import { join } from "node:path";
import { announceChange, type BatchJob, type BatchJobState, type Prisma, type PrismaClient } from "@operon/db";
import type { Logger } from "@operon/protocol/logger";
import { AppError, notFound } from "../../app-error.js";
import type { ApiKeyService } from "../api-keys/api-key-service.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import { GatewayClient } from "../gateway/gateway-client.js";
import { requireOwnerOrAdmin, type Changer } from "../ownership/ownership.js";
import { parseJsonColumn } from "../json-column.js";
import { previewQuery } from "./dataset-query.js";
import { withConnection } from "./postgres-table.js";
import type { Datasets } from "./datasets.js";
import { inputMappingSchema, planInputs, type ColumnMapping, type TargetSignature } from "./input-mapping.js";
import { JobFiles, ROW_COLUMN } from "./job-files.js";
import { gatewayRowsSchema } from "./gateway-lanes.js";
import { type BatchJobsOptions, JobExecution, type JobControl, type RunningJob } from "./job-execution.js";

export type { BatchJobsOptions } from "./job-execution.js";
import { parseRanges, removeRows, rowsIn } from "./row-ranges.js";
import { queryJobCost, settleJobCosts, type JobCost } from "../costs/job-cost.js";
import { lastWorkAt, queryJobThroughput, runWindowOf, type JobThroughput } from "./job-throughput.js";
import { checkRowsPerRequest } from "./rows-per-request.js";
import { targetSignature, type JobTarget } from "./target-signature.js";

/**
 * Batch jobs: one model or operator over a dataset's rows, stored, started,
 * paused, resumed, cancelled, checkpointed per chunk (job-runner.ts), with
 * failed rows kept and retryable, results merged into Parquet.
 *
 * Each running job sends its requests with a key of its own, made when it
 * starts and kept in memory (its hash is stored for the cluster's gateways,
 * job-key.ts): the gateways put them at the target's lowest priority level
 * and, while traffic shares are on, under the job's tenant `batch:<job id>`.
 * Its rows spread over every gateway of the cluster (gateway-lanes.ts); its
 * concurrency on each adapts to that gateway's online p99 of its target
 * (aimd.ts), so online traffic comes first.
 *
 * A restart resumes: jobs left RUNNING go back to QUEUED and run again from
 * their checkpoint. At most `maxRunning` jobs run at once, in creation order.
 */
export interface CreateJobInput {
  datasetId: string;
  target: JobTarget;
  /** Column → input mapping; omitted: suggested from the columns (suggestMapping). */
  mapping?: ColumnMapping[] | undefined;
  outputs?: string[] | undefined;
  /** Rows one request carries (1 to the model's max_batch_size); omitted: the server's default (rows-per-request.ts). */
  rowsPerRequest?: number | undefined;
}

export interface JobView {
  id: string;
  datasetId: string;
  datasetName: string;
  ownerId: string | null;
  ownerEmail: string | null;
  target: { kind: string; name: string; version: string | null };
  mapping: ColumnMapping[];
  outputs: string[];
  /**
   * Rows one request carries: the job's ask, else the server's default (rows-per-request.ts) as the job's run
   * in this server uses or last used it; null: the default, and the job has not run since the server started
   * (the default depends on the model served when it runs).
   */
  rowsPerRequest: number | null;
  /** True when the job did not ask: `rowsPerRequest` is the server's default. */
  rowsPerRequestDefault: boolean;
  state: BatchJobState;
  error: string | null;
  totalRows: number | null;
  doneRows: number;
  failedRows: number;
  /** Requests in flight allowed now (live while running; 0 during a probe of online latency). */
  concurrency: number;
  /** While running: why the job has that concurrency (aimd.ts; its first gateway's, see `gateways`); null otherwise. */
  control: JobControl | null;
  /**
   * The gateways that served the job's rows (rows with a result, as checkpointed) and, while it runs, each
   * gateway it sends to now with its own concurrency (gateway-lanes.ts); most rows first.
   */
  gateways: JobGateway[];
  rowsPerSec: number | null;
  /** Seconds left at the current rate; null while unknown. */
  secondsLeft: number | null;
  resultDatasetId: string | null;
  hasResult: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface JobGateway {
  /** `<host>:<http port>`, or `control-plane` for the control plane's own gateway. */
  gateway: string;
  rows: number;
  /** While running: requests in flight allowed there now; null otherwise. */
  concurrency: number | null;
  /** While running: the gateway could not be reached; its rows go to the others until it answers again. */
  away: boolean | null;
  control: JobControl | null;
}

/** How often the control plane keeps what the jobs' settled samples cost (costs/job-cost.ts settleJobCosts). */
const COST_SETTLE_MS = 60_000;

export class BatchJobs {
  private readonly running = new Map<string, RunningJob>();
  /** The rows per request of each job's last run in this process that used the server's default (jobs.get). */
  private readonly defaultRowsPerRequest = new Map<string, number>();
  private readonly execution: JobExecution;
  private stopped = false;
  private kicking: Promise<void> = Promise.resolve();
  private settleTimer: NodeJS.Timeout | undefined;
  private readonly maxRunning: number;
  private readonly chunkRows: number;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly apiKeys: ApiKeyService,
    private readonly datasets: Datasets,
    private readonly options: BatchJobsOptions,
    private readonly logger: Logger,
  ) {
    this.maxRunning = options.maxRunning ?? 1;
    this.chunkRows = options.chunkRows ?? 256;
    this.execution = new JobExecution({
      prisma,
      gateway,
      apiKeys,
      options,
      logger,
      chunkRows: this.chunkRows,
      filesOf: (id) => this.filesOf(id),
    });
  }

  /** On start: jobs a stop or crash left RUNNING queue again (they resume from their checkpoint); then queued jobs start. */
  async start(): Promise<number> {
    // Their keys died with the last process: the hashes go too (and the gateways are told), new ones come when they run.
    const { count } = await this.prisma.batchJob.updateMany({
      where: { state: "RUNNING" },
      data: { state: "QUEUED", keyHash: null },
    });
    if (count > 0) await announceChange(this.prisma, "api-keys");
    this.kick();
    // Jobs' costs are kept per sample once settled (costs/job-cost.ts); settle them before usage samples age.
    this.settleTimer = setInterval(() => {
      settleJobCosts(this.prisma).catch((error: unknown) =>
        this.logger.warn({ err: (error as Error).message }, "batch jobs: could not settle the jobs' costs"),
      );
    }, COST_SETTLE_MS);
    this.settleTimer.unref();
    return count;
  }

  /** Stops taking rows; running jobs checkpoint what finished and stay RUNNING in the database, so the next start resumes them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.settleTimer !== undefined) clearInterval(this.settleTimer);
    for (const run of this.running.values()) run.stop = true;
    await Promise.all([...this.running.values()].map((run) => run.done));
  }

  async create(actor: Actor, who: Changer, input: CreateJobInput): Promise<JobView> {
    const dataset = await this.datasets.get(who, input.datasetId);
    const signature = await targetSignature(this.gateway, input.target);
    const { columns } = await previewQuery(
      withConnection(dataset, this.options.storage.postgresConnections ?? {}),
      dataset.query,
      0,
    );
    if (columns.some((column) => column.name === ROW_COLUMN))
      throw new AppError(
        "VALIDATION_FAILED",
        `the dataset has a column '${ROW_COLUMN}', which jobs use for the row index; rename it in the query`,
      );
    const mapping = input.mapping ?? suggestMapping(signature, columns);
    inputMappingSchema.parse(mapping);
    planInputs(mapping, signature, columns);
    for (const [index, name] of (input.outputs ?? []).entries()) {
      if (!signature.outputs.some((output) => output.name === name))
        throw new AppError(
          "VALIDATION_FAILED",
          `the target has no output '${name}' (outputs: ${signature.outputs.map((o) => o.name).join(", ")})`,
          {
            fieldErrors: [{ path: `outputs.${index}`, message: "no such output" }],
          },
        );
    }
    if (input.rowsPerRequest !== undefined)
      checkRowsPerRequest(input.rowsPerRequest, { ...input.target, maxBatchSize: signature.maxBatchSize });
    const job = await this.prisma.$transaction(async (tx) => {
      const created = await tx.batchJob.create({
        data: {
          datasetId: dataset.id,
          ownerId: who.id,
          targetKind: input.target.kind,
          targetName: input.target.name,
          targetVersion: input.target.version ?? null,
          mapping: mapping as unknown as Prisma.InputJsonValue,
          outputs: input.outputs ?? [],
          rowsPerRequest: input.rowsPerRequest ?? null,
        },
      });
      await recordAudit(tx, actor, {
        action: "batchJob.create",
        targetType: "BatchJob",
        targetId: created.id,
        after: created,
      });
      return created;
    });
    this.kick();
    return this.view(job.id);
  }

  async list(who: Changer): Promise<JobView[]> {
    const rows = await this.prisma.batchJob.findMany({
      where: who.role === "ADMIN" ? {} : { ownerId: who.id },
      orderBy: { createdAt: "desc" },
      take: 200,
      include: { dataset: { select: { name: true } }, owner: { select: { email: true } } },
    });
    return rows.map((row) => this.live(viewOf(row, row.dataset.name, row.owner?.email ?? null)));
  }

  /**
   * The job if `who` may see it (its owner or an admin; NOT_FOUND otherwise), with its cost so far
   * (costs/job-cost.ts; null when not asked for: it reads every throughput sample of the job).
   */
  async get(who: Changer, id: string, withCost = true): Promise<JobView & { cost: JobCost | null }> {
    const job = await this.visible(who, id);
    const [view, cost] = await Promise.all([this.view(id), withCost ? queryJobCost(this.prisma, job) : null]);
    return { ...view, cost };
  }

  /** The job's rows/s over its run beside its target's online requests/s (job-throughput.ts); null before it started. */
  async throughput(who: Changer, id: string): Promise<JobThroughput | null> {
    const job = await this.visible(who, id);
    const lastWork = job.state === "RUNNING" ? null : await lastWorkAt(this.prisma, id);
    const window = runWindowOf(job, new Date(), lastWork);
    return window === null ? null : queryJobThroughput(this.prisma, { ...job, ...window });
  }

  async failures(
    who: Changer,
    id: string,
    take = 100,
  ): Promise<Array<{ row: number; error: string; attempts: number; key: Record<string, unknown> }>> {
    const job = await this.visible(who, id);
    const rows = await this.prisma.batchJobFailure.findMany({ where: { jobId: id }, orderBy: { row: "asc" }, take });
    const keys = await this.keysOf(
      job,
      rows.map((row) => row.row),
    );
    return rows.map((row) => ({
      row: row.row,
      error: row.error,
      attempts: row.attempts,
      key: keys.get(row.row) ?? {},
    }));
  }

  async pause(actor: Actor, who: Changer, id: string): Promise<JobView> {
    return this.transition(actor, who, id, "pause", ["QUEUED", "RUNNING"], "PAUSED");
  }

  async resume(actor: Actor, who: Changer, id: string): Promise<JobView> {
    const view = await this.transition(actor, who, id, "resume", ["PAUSED", "FAILED"], "QUEUED");
    this.kick();
    return view;
  }

  async cancel(actor: Actor, who: Changer, id: string): Promise<JobView> {
    return this.transition(actor, who, id, "cancel", ["QUEUED", "RUNNING", "PAUSED"], "CANCELLED");
  }

  /** Runs the failed rows again: they leave the checkpoint and the failures, and the job queues. */
  async retryFailed(actor: Actor, who: Changer, id: string): Promise<JobView> {
    const job = await this.visible(who, id);
    await requireOwnerOrAdmin(this.prisma, who, "batch job", id, job.ownerId);
    if (job.state === "RUNNING" || job.state === "QUEUED")
      throw new AppError(
        "CONFLICT",
        `job ${id} is ${job.state.toLowerCase()}; pause it or let it finish before retrying its failed rows`,
      );
    if (job.state === "CANCELLED") throw new AppError("CONFLICT", `job ${id} was cancelled`);
    await this.prisma.$transaction(async (tx) => {
      const failed = (await tx.batchJobFailure.findMany({ where: { jobId: id }, select: { row: true } })).map(
        (f) => f.row,
      );
      if (failed.length === 0) throw new AppError("CONFLICT", `job ${id} has no failed rows`);
      const ranges = removeRows(parseRanges(job.doneRanges), failed);
      // Attempts carry over: the failure rows stay until the retry's chunk replaces them (commit upserts).
      await tx.batchJob.update({
        where: { id },
        data: {
          state: "QUEUED",
          doneRanges: ranges as unknown as Prisma.InputJsonValue,
          doneRows: rowsIn(ranges),
          finishedAt: null,
          error: null,
        },
      });
      await recordAudit(tx, actor, {
        action: "batchJob.retry",
        targetType: "BatchJob",
        targetId: id,
        after: { rows: failed.length },
      });
    });
    this.kick();
    return this.view(id);
  }

  /** Registers a done job's results as a dataset named `name`. */
  async registerResult(actor: Actor, who: Changer, id: string, name: string): Promise<{ datasetId: string }> {
    const job = await this.visible(who, id);
    await requireOwnerOrAdmin(this.prisma, who, "batch job", id, job.ownerId);
    if (job.state !== "DONE")
      throw new AppError("CONFLICT", `job ${id} is ${job.state.toLowerCase()}; results exist once it is done`);
    if (job.resultDatasetId !== null)
      throw new AppError("CONFLICT", `job ${id}'s results are dataset ${job.resultDatasetId} already`);
    const dataset = await this.prisma.dataset.findUniqueOrThrow({ where: { id: job.datasetId } });
    const created = await this.datasets.registerResult(actor, {
      name,
      path: this.filesOf(id).result,
      ownerId: job.ownerId,
      keyColumns: [ROW_COLUMN, ...dataset.keyColumns],
    });
    await this.prisma.batchJob.update({ where: { id }, data: { resultDatasetId: created.id } });
    return { datasetId: created.id };
  }

  /** The results file of a done job `who` may see (for the download route). */
  async resultFile(who: Changer, id: string): Promise<string> {
    const job = await this.visible(who, id);
    if (job.state !== "DONE")
      throw new AppError("CONFLICT", `job ${id} is ${job.state.toLowerCase()}; results exist once it is done`);
    return this.filesOf(id).result;
  }

  async remove(actor: Actor, who: Changer, id: string): Promise<void> {
    const job = await this.visible(who, id);
    await requireOwnerOrAdmin(this.prisma, who, "batch job", id, job.ownerId);
    if (job.state === "RUNNING" || job.state === "QUEUED")
      throw new AppError("CONFLICT", `job ${id} is ${job.state.toLowerCase()}; cancel it first`);
    if (job.resultDatasetId !== null)
      throw new AppError("CONFLICT", `job ${id}'s results are a dataset; delete dataset ${job.resultDatasetId} first`);
    await this.prisma.$transaction(async (tx) => {
      await tx.batchJob.delete({ where: { id } });
      await recordAudit(tx, actor, { action: "batchJob.delete", targetType: "BatchJob", targetId: id, before: job });
    });
    this.defaultRowsPerRequest.delete(id);
    await rm(this.filesOf(id).dir, { recursive: true, force: true });
  }

  // --- running ---------------------------------------------------------------------------------

  private filesOf(id: string): JobFiles {
    return new JobFiles(join(this.options.storage.dir, "jobs", id));
  }

  /** Starts queued jobs while fewer than maxRunning run (serialized: two kicks never start one job twice). */
  private kick(): void {
    this.kicking = this.kicking
      .then(async () => {
        if (this.stopped) return;
        const free = this.maxRunning - this.running.size;
        if (free <= 0) return;
        const queued = await this.prisma.batchJob.findMany({
          where: { state: "QUEUED", id: { notIn: [...this.running.keys()] } },
          orderBy: { createdAt: "asc" },
          take: free,
        });
        for (const job of queued) {
          const run: RunningJob = { stop: false, done: Promise.resolve() };
          this.running.set(job.id, run);
          run.done = this.execution.run(job, run).finally(() => {
            this.running.delete(job.id);
            if (job.rowsPerRequest === null && run.rowsPerRequest !== undefined)
              this.defaultRowsPerRequest.set(job.id, run.rowsPerRequest);
            this.kick();
          });
        }
      })
      .catch((error: unknown) => this.logger.error({ err: (error as Error).message }, "could not start batch jobs"));
  }

  private async transition(
    actor: Actor,
    who: Changer,
    id: string,
    verb: string,
    from: BatchJobState[],
    to: BatchJobState,
  ): Promise<JobView> {
    const job = await this.visible(who, id);
    await requireOwnerOrAdmin(this.prisma, who, "batch job", id, job.ownerId);
    const changed = await this.prisma.$transaction(async (tx) => {
      const result = await tx.batchJob.updateMany({
        where: { id, state: { in: from } },
        data: { state: to, ...(to === "CANCELLED" ? { finishedAt: new Date() } : {}) },
      });
      if (result.count === 1)
        await recordAudit(tx, actor, {
          action: `batchJob.${verb}`,
          targetType: "BatchJob",
          targetId: id,
          before: { state: job.state },
          after: { state: to },
        });
      return result.count;
    });
    if (changed === 0)
      throw new AppError(
        "CONFLICT",
        `job ${id} is ${job.state.toLowerCase()}; it cannot ${verb} (only from ${from.map((s) => s.toLowerCase()).join(", ")})`,
      );
    const running = this.running.get(id);
    if (running !== undefined && to !== "QUEUED") {
      running.stop = true;
      await running.done;
    }
    return this.view(id);
  }

  private async visible(who: Changer, id: string): Promise<BatchJob> {
    const job = await this.prisma.batchJob.findUnique({ where: { id } });
    if (job === null || (who.role !== "ADMIN" && job.ownerId !== who.id)) throw notFound(`batch job ${id}`);
    return job;
  }

  private async view(id: string): Promise<JobView> {
    const row = await this.prisma.batchJob.findUniqueOrThrow({
      where: { id },
      include: { dataset: { select: { name: true } }, owner: { select: { email: true } } },
    });
    return this.live(viewOf(row, row.dataset.name, row.owner?.email ?? null));
  }

  /** A running job's concurrency as its controllers have it now (one per gateway), not as of its last checkpoint. */
  private live(stored: JobView): JobView {
    const view = this.withRowsPerRequest(stored);
    const lanes = this.running.get(view.id)?.lanes?.list();
    if (lanes === undefined || lanes.length === 0 || view.state !== "RUNNING") return view;
    const gateways = new Map(view.gateways.map((gateway) => [gateway.gateway, gateway]));
    for (const lane of lanes)
      gateways.set(lane.id, {
        gateway: lane.id,
        rows: gateways.get(lane.id)?.rows ?? 0,
        concurrency: lane.away ? 0 : lane.limiter.limit,
        away: lane.away,
        control: lane.control ?? null,
      });
    const first = lanes.find((lane) => lane.control !== undefined)?.control;
    const concurrency = lanes.reduce((sum, lane) => sum + (lane.away ? 0 : lane.limiter.limit), 0);
    return {
      ...view,
      concurrency,
      control: first !== undefined ? { ...first, limit: concurrency } : null,
      gateways: [...gateways.values()].sort((a, b) => b.rows - a.rows || a.gateway.localeCompare(b.gateway)),
    };
  }

  /** A job on the server's default shows the rows per request its run uses (or last used), not null. */
  private withRowsPerRequest(view: JobView): JobView {
    if (!view.rowsPerRequestDefault) return view;
    const used = this.running.get(view.id)?.rowsPerRequest ?? this.defaultRowsPerRequest.get(view.id);
    return used === undefined ? view : { ...view, rowsPerRequest: used };
  }

  /** The key columns of failed rows (from the snapshot), so the console can name the rows. */
  private async keysOf(job: BatchJob, rows: number[]): Promise<Map<number, Record<string, unknown>>> {
    const out = new Map<number, Record<string, unknown>>();
    const dataset = await this.prisma.dataset.findUnique({ where: { id: job.datasetId } });
    if (rows.length === 0 || dataset === null || dataset.keyColumns.length === 0 || job.totalRows === null) return out;
    const files = this.filesOf(job.id);
    const sandbox = await files.open();
    try {
      const min = Math.min(...rows);
      const max = Math.max(...rows);
      for (const row of await files.readRows(sandbox, [min, max + 1])) {
        const index = Number(row[ROW_COLUMN]);
        if (!rows.includes(index)) continue;
        out.set(index, Object.fromEntries(dataset.keyColumns.map((key) => [key, jsonSafe(row[key])])));
      }
    } finally {
      sandbox.close();
    }
    return out;
  }
}

/** Suggests a mapping when the target has one input: every numeric column into a numeric tensor, or the one text column into BYTES. */
export function suggestMapping(
  signature: TargetSignature,
  columns: ReadonlyArray<{ name: string; type: string }>,
): ColumnMapping[] {
  const [input] = signature.inputs;
  if (signature.inputs.length !== 1 || input === undefined)
    throw new AppError(
      "VALIDATION_FAILED",
      `the target has ${signature.inputs.length} inputs; give a column mapping for each (${signature.inputs.map((i) => i.name).join(", ")})`,
      {
        fieldErrors: [{ path: "mapping", message: "required for this target" }],
      },
    );
  if (input.datatype === "BYTES") {
    const text = columns.filter((column) => column.type === "VARCHAR");
    if (text.length !== 1)
      throw new AppError(
        "VALIDATION_FAILED",
        `input '${input.name}' is BYTES and the dataset has ${text.length} text columns; map one (kind text or image-path)`,
        {
          fieldErrors: [{ path: "mapping", message: "choose a column" }],
        },
      );
    return [{ input: input.name, kind: "text", column: (text[0] as { name: string }).name }];
  }
  const numeric = columns.filter((column) =>
    /^(TINYINT|SMALLINT|INTEGER|BIGINT|FLOAT|DOUBLE|DECIMAL.*|UTINYINT|USMALLINT|UINTEGER|UBIGINT)$/.test(column.type),
  );
  return [{ input: input.name, kind: "tensor", columns: numeric.map((column) => column.name) }];
}

function viewOf(row: BatchJob, datasetName: string, ownerEmail: string | null): JobView {
  const left = row.totalRows !== null ? row.totalRows - row.doneRows : null;
  return {
    id: row.id,
    datasetId: row.datasetId,
    datasetName,
    ownerId: row.ownerId,
    ownerEmail,
    target: { kind: row.targetKind, name: row.targetName, version: row.targetVersion },
    mapping: parseJsonColumn(inputMappingSchema, row.mapping, { table: "BatchJob", column: "mapping", id: row.id }),
    outputs: row.outputs,
    rowsPerRequest: row.rowsPerRequest,
    rowsPerRequestDefault: row.rowsPerRequest === null,
    state: row.state,
    error: row.error,
    totalRows: row.totalRows,
    doneRows: row.doneRows,
    failedRows: row.failedRows,
    concurrency: row.concurrency,
    control: null,
    gateways: Object.entries(
      parseJsonColumn(gatewayRowsSchema, row.gatewayRows, { table: "BatchJob", column: "gatewayRows", id: row.id }),
    )
      .map(([gateway, rows]) => ({ gateway, rows, concurrency: null, away: null, control: null }))
      .sort((a, b) => b.rows - a.rows || a.gateway.localeCompare(b.gateway)),
    rowsPerSec: row.rowsPerSec,
    secondsLeft:
      left !== null && row.rowsPerSec !== null && row.rowsPerSec > 0 && row.state === "RUNNING"
        ? left / row.rowsPerSec
        : null,
    resultDatasetId: row.resultDatasetId,
    hasResult: row.state === "DONE",
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
  };
}

function jsonSafe(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  return value;
}
