import type { PerfReport as PerfReportRow, PerfRunStatus, PerfSample, PerfTargetKind, Prisma, PrismaClient } from "@operon/db";
import { expandLoadRange, validateLoadRange, type LoadRange } from "@operon/perf/load-range";
import { messageOf } from "@operon/perf/perf-error";
import type { PerfProgress } from "@operon/perf/perf-progress";
import type { PerfReport, PerfStep } from "@operon/perf/perf-report";
import { PERF_DEFAULTS, runPerf, type PerfOptions } from "@operon/perf/run-perf";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import type { Logger } from "@operon/protocol/logger";

/**
 * Perf runs started from the console: the `operon perf` engine (runPerf)
 * run in the background against the gateway, one run at a time, its
 * progress kept in memory and its result stored as a PerfReport with one
 * PerfSample per concurrency step.
 *
 * Life of a report: RUNNING (created by start) -> SUCCEEDED (samples and
 * summary written in one transaction with the status) | FAILED (error set;
 * the samples of the steps that completed are kept) | CANCELLED (cancel();
 * completed steps kept). A RUNNING report without a run in this process was
 * left by a crash: recoverInterrupted() marks it FAILED at start-up.
 */
export interface PerfRunInput {
  target: { kind: PerfTargetKind; name: string; version?: string | undefined };
  concurrency: LoadRange;
  batchSize: number;
  measurementIntervalMs: number;
  /** Measurement windows per step at most (perf_analyzer's max trials); default PERF_DEFAULTS.maxTrials. */
  maxTrials?: number | undefined;
  protocol: "http";
}

/** What start stores in PerfReport.config. */
export interface PerfRunConfig {
  protocol: "http";
  concurrencyRange: LoadRange;
  batchSize: number;
  measurementIntervalMs: number;
  maxTrials: number;
  totalSteps: number;
}

export interface PerfProgressView {
  id: string;
  status: PerfRunStatus;
  completedSteps: number;
  totalSteps: number;
  /** The concurrency being measured; null when the run is not measuring. */
  currentConcurrency: number | null;
  /** 0..100: completed steps plus the share of the current step's windows. */
  percent: number;
  error: string | null;
}

export interface PerfSampleView {
  concurrency: number;
  batchSize: number;
  /** Inferences per second. */
  throughput: number;
  latencyAvgUs: number | null;
  latencyP50Us: number | null;
  latencyP90Us: number | null;
  latencyP95Us: number | null;
  latencyP99Us: number | null;
  /** Server-side average queue and compute (input + infer + output) time per request; null without server statistics. */
  queueUs: number | null;
  computeUs: number | null;
  errorCount: number;
}

export interface PerfReportView {
  id: string;
  targetKind: PerfTargetKind;
  targetName: string;
  targetVersion: string | null;
  status: PerfRunStatus;
  error: string | null;
  config: PerfRunConfig | null;
  summary: PerfRunSummary | null;
  hardwareProfile: { id: string; name: string } | null;
  createdBy: { id: string; email: string } | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** Stored in PerfReport.summary: the run's headline numbers and the per-step details Triton's perf table shows. */
export interface PerfRunSummary {
  version: string;
  protocol: "http" | "grpc";
  maxBatchSize: number;
  inputs: Array<{ name: string; datatype: string; shape: number[] }>;
  startedAt: string;
  finishedAt: string;
  totalRequests: number;
  totalErrors: number;
  /** The step with the highest throughput. */
  best: { concurrency: number; throughput: number; latencyP99Us: number } | null;
  errorSamples: string[];
  steps: Array<{
    concurrency: number;
    requests: number;
    errors: number;
    stable: boolean;
    throughputRequestsPerSec: number;
    server: { queueUs: number; computeInputUs: number; computeInferUs: number; computeOutputUs: number; batchSizes: Record<string, number> } | null;
  }>;
}

interface ActiveRun {
  id: string;
  targetName: string;
  controller: AbortController;
  totalSteps: number;
  completedSteps: number;
  currentConcurrency: number | null;
  window: number;
  maxWindows: number;
  /** Who cancelled, when a person did; the audit event of the ending names them. */
  cancelledBy: Actor | undefined;
  done: Promise<void>;
}

const MAX_STEPS = 64;

/** The rows a report links to, where they exist (a repository model has no Model row until the usage sampler sees it). */
interface TargetLinks {
  modelId?: string;
  modelVersionId?: string;
  operatorId?: string;
  hardwareProfileId?: string;
}

export class PerfRuns {
  private active: ActiveRun | undefined;
  private starting = false;
  private stopped = false;
  /** Label of the exclusive work (runExclusive) holding the slot. */
  private exclusive: string | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly gatewayOptions: GatewayClientOptions,
    private readonly logger: Logger,
  ) {}

  /** Marks the RUNNING reports a crash left behind FAILED; returns how many. Call before any start. */
  async recoverInterrupted(): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const orphans = await tx.perfReport.findMany({ where: { status: "RUNNING" }, select: { id: true } });
      if (orphans.length === 0) return 0;
      await tx.perfReport.updateMany({
        where: { id: { in: orphans.map((orphan) => orphan.id) } },
        data: { status: "FAILED", error: "interrupted by a restart", finishedAt: new Date() },
      });
      for (const orphan of orphans) {
        await recordAudit(tx, SYSTEM_ACTOR, { action: "perf.fail", targetType: "PerfReport", targetId: orphan.id, after: { status: "FAILED", error: "interrupted by a restart" } });
      }
      return orphans.length;
    });
  }

  /**
   * Checks the target (served, of the kind named, batch size within its
   * max_batch_size), stores a RUNNING report and starts measuring in the
   * background. CONFLICT while another run is going.
   */
  async start(actor: Actor, input: PerfRunInput): Promise<{ id: string }> {
    if (this.stopped) throw new AppError("GATEWAY_UNAVAILABLE", "the control plane is stopping; start the run again once it is back");
    const range = checkRange(input.concurrency);
    if (this.active !== undefined || this.starting || this.exclusive !== undefined) throw this.busy();
    this.starting = true;
    try {
      const links = await this.resolveTarget(input);
      const totalSteps = expandLoadRange(range).length;
      const config: PerfRunConfig = {
        protocol: input.protocol,
        concurrencyRange: range,
        batchSize: input.batchSize,
        measurementIntervalMs: input.measurementIntervalMs,
        maxTrials: input.maxTrials ?? PERF_DEFAULTS.maxTrials,
        totalSteps,
      };
      const report = await this.prisma.$transaction(async (tx) => {
        const running = await tx.perfReport.findFirst({ where: { status: "RUNNING" }, select: { id: true, targetName: true } });
        if (running !== null) throw this.busy(running);
        const created = await tx.perfReport.create({
          data: {
            targetKind: input.target.kind,
            targetName: input.target.name,
            targetVersion: input.target.version ?? null,
            ...links,
            createdById: actor.userId,
            status: "RUNNING",
            config: config as unknown as Prisma.InputJsonObject,
          },
        });
        await recordAudit(tx, actor, {
          action: "perf.start",
          targetType: "PerfReport",
          targetId: created.id,
          after: { target: input.target, ...config },
        });
        return created;
      });
      const run: ActiveRun = {
        id: report.id,
        targetName: report.targetName,
        controller: new AbortController(),
        totalSteps,
        completedSteps: 0,
        currentConcurrency: null,
        window: 0,
        maxWindows: config.maxTrials,
        cancelledBy: undefined,
        done: Promise.resolve(),
      };
      this.active = run;
      run.done = this.execute(run, input, config).finally(() => {
        if (this.active === run) this.active = undefined;
      });
      return { id: report.id };
    } finally {
      this.starting = false;
    }
  }

  async progress(id: string): Promise<PerfProgressView> {
    const run = this.active;
    if (run !== undefined && run.id === id) {
      const stepShare = run.currentConcurrency === null ? 0 : Math.min(run.window / Math.max(1, run.maxWindows), 0.99);
      return {
        id,
        status: "RUNNING",
        completedSteps: run.completedSteps,
        totalSteps: run.totalSteps,
        currentConcurrency: run.currentConcurrency,
        percent: round1(((run.completedSteps + stepShare) / run.totalSteps) * 100),
        error: null,
      };
    }
    const report = await this.prisma.perfReport.findUnique({ where: { id }, include: { _count: { select: { samples: true } } } });
    if (report === null) throw notFound(`perf report ${id}`);
    const config = configOf(report);
    const totalSteps = config?.totalSteps ?? report._count.samples;
    const completedSteps = report._count.samples;
    return {
      id,
      status: report.status,
      completedSteps,
      totalSteps,
      currentConcurrency: null,
      percent: report.status === "SUCCEEDED" ? 100 : totalSteps > 0 ? round1((completedSteps / totalSteps) * 100) : 0,
      error: report.error,
    };
  }

  /** Stops a running run; the steps it completed are kept. Resolves once the report is CANCELLED. */
  async cancel(actor: Actor, id: string, who: string): Promise<PerfProgressView> {
    const run = this.active;
    if (run !== undefined && run.id === id) {
      run.cancelledBy ??= actor;
      run.controller.abort(new Error(`cancelled by ${who}`));
      await run.done;
      return this.progress(id);
    }
    await this.prisma.$transaction(async (tx) => {
      const report = await tx.perfReport.findUnique({ where: { id } });
      if (report === null) throw notFound(`perf report ${id}`);
      if (report.status !== "RUNNING") throw new AppError("CONFLICT", `perf report ${id} is not running (it is ${report.status.toLowerCase()})`);
      // RUNNING with no run in this process: a run another control plane owns, or one whose process died.
      await tx.perfReport.update({ where: { id }, data: { status: "CANCELLED", error: `cancelled by ${who}`, finishedAt: new Date() } });
      await recordAudit(tx, actor, { action: "perf.cancel", targetType: "PerfReport", targetId: id, before: { status: "RUNNING" }, after: { status: "CANCELLED" } });
    });
    return this.progress(id);
  }

  async list(filter: { targetName?: string | undefined; limit: number }): Promise<PerfReportView[]> {
    const rows = await this.prisma.perfReport.findMany({
      where: filter.targetName !== undefined ? { targetName: filter.targetName } : {},
      include: reportRelations,
      orderBy: { createdAt: "desc" },
      take: filter.limit,
    });
    return rows.map(viewReport);
  }

  /** The report and its samples by ascending concurrency: the points of a throughput-vs-latency chart and the rows of Triton's perf table. */
  async get(id: string): Promise<PerfReportView & { samples: PerfSampleView[] }> {
    const row = await this.prisma.perfReport.findUnique({ where: { id }, include: { ...reportRelations, samples: { orderBy: { concurrency: "asc" } } } });
    if (row === null) throw notFound(`perf report ${id}`);
    return { ...viewReport(row), samples: row.samples.map(viewSample) };
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const report = await tx.perfReport.findUnique({ where: { id } });
      if (report === null) throw notFound(`perf report ${id}`);
      if (report.status === "RUNNING") throw new AppError("CONFLICT", `perf report ${id} is running; cancel it first`);
      await tx.perfReport.delete({ where: { id } });
      await recordAudit(tx, actor, {
        action: "perf.delete",
        targetType: "PerfReport",
        targetId: id,
        before: { targetKind: report.targetKind, targetName: report.targetName, status: report.status, createdAt: report.createdAt },
      });
    });
  }

  /** Resolves when the run (if it is this process's) has ended and its report is written. */
  async settled(id: string): Promise<void> {
    if (this.active?.id === id) await this.active.done;
  }

  /** Stops the running run (its report becomes FAILED, completed steps kept) and waits for its report. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    const run = this.active;
    if (run === undefined) return;
    run.controller.abort(new Error("interrupted: the control plane stopped during the run"));
    await run.done;
  }

  /**
   * Runs fn in the one-at-a-time perf slot (a config search measures with
   * the same engine, and two measurements at once spoil both): CONFLICT
   * while a run or other exclusive work goes (here or, by its RUNNING report,
   * in another control plane); start() refuses while fn runs. `label` names
   * the work in those refusals.
   */
  async runExclusive<T>(label: string, fn: () => Promise<T>): Promise<T> {
    if (this.stopped) throw new AppError("GATEWAY_UNAVAILABLE", "the control plane is stopping; start again once it is back");
    if (this.active !== undefined || this.starting || this.exclusive !== undefined) throw this.busy();
    this.exclusive = label;
    try {
      const running = await this.prisma.perfReport.findFirst({ where: { status: "RUNNING" }, select: { id: true, targetName: true } });
      if (running !== null) throw this.busy(running);
      return await fn();
    } finally {
      this.exclusive = undefined;
    }
  }

  private busy(running?: { id: string; targetName: string }): AppError {
    if (running === undefined && this.active === undefined && this.exclusive !== undefined) {
      return new AppError("CONFLICT", `the perf slot is taken by ${this.exclusive}; wait for it or cancel it`);
    }
    const current = running ?? (this.active !== undefined ? { id: this.active.id, targetName: this.active.targetName } : undefined);
    return new AppError(
      "CONFLICT",
      current !== undefined
        ? `a perf run is already going (report ${current.id} on '${current.targetName}'); wait for it or cancel it`
        : "a perf run is being started; wait for it or cancel it",
    );
  }

  /** Links to the target's rows, after checking with the gateway that the target is served as the kind named. */
  private async resolveTarget(input: PerfRunInput): Promise<TargetLinks> {
    const { kind, name, version } = input.target;
    const what = `${kind === "MODEL" ? "model" : "operator"} '${name}'${version !== undefined ? ` version ${version}` : ""}`;
    let maxBatchSize: number;
    try {
      await this.gateway.modelMetadata(name, version);
      maxBatchSize = Number((await this.gateway.modelConfig(name, version))["max_batch_size"] ?? 0) || 0;
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_FOUND") {
        throw new AppError("NOT_FOUND", `${what} is not served by the gateway; load it first (${error.message})`, {
          fieldErrors: [{ path: "target.name", message: "not served" }],
          cause: error,
        });
      }
      throw error;
    }
    const isOperator = (await this.gateway.listOperators()).some((operator) => operator.name === name);
    if (isOperator !== (kind === "OPERATOR")) {
      throw new AppError("VALIDATION_FAILED", `'${name}' is ${isOperator ? "an operator" : "a model"}, not ${kind === "OPERATOR" ? "an operator" : "a model"}; choose target kind ${isOperator ? "OPERATOR" : "MODEL"}`, {
        fieldErrors: [{ path: "target.kind", message: `'${name}' is ${isOperator ? "an operator" : "a model"}` }],
      });
    }
    const batchLimit = Math.max(1, maxBatchSize);
    if (input.batchSize > batchLimit) {
      throw new AppError("VALIDATION_FAILED", `batch size ${input.batchSize} is above ${what}'s max_batch_size (${maxBatchSize === 0 ? "0: it does not batch, so only 1" : maxBatchSize})`, {
        fieldErrors: [{ path: "batchSize", message: `at most ${batchLimit}` }],
      });
    }
    const profile = await this.prisma.hardwareProfile.findFirst({ where: { isDefault: true }, select: { id: true } });
    const links: TargetLinks = {};
    if (profile !== null) links.hardwareProfileId = profile.id;
    if (kind === "MODEL") {
      const model = await this.prisma.model.findUnique({ where: { name }, select: { id: true } });
      if (model !== null) {
        links.modelId = model.id;
        if (version !== undefined && /^\d+$/.test(version)) {
          const row = await this.prisma.modelVersion.findUnique({ where: { modelId_version: { modelId: model.id, version: Number(version) } }, select: { id: true } });
          if (row !== null) links.modelVersionId = row.id;
        }
      }
    } else {
      const operator = await this.prisma.operator.findUnique({ where: { name }, select: { id: true } });
      if (operator !== null) links.operatorId = operator.id;
    }
    return links;
  }

  private async execute(run: ActiveRun, input: PerfRunInput, config: PerfRunConfig): Promise<void> {
    const options: PerfOptions = {
      model: input.target.name,
      ...(input.target.version !== undefined ? { version: input.target.version } : {}),
      protocol: "http",
      url: this.gatewayOptions.httpUrl,
      concurrencyRange: config.concurrencyRange,
      batchSize: config.batchSize,
      measurementIntervalMs: config.measurementIntervalMs,
      maxTrials: config.maxTrials,
      signal: run.controller.signal,
      ...(this.gatewayOptions.adminKey ? { headers: { authorization: `Bearer ${this.gatewayOptions.adminKey}` } } : {}),
    };
    const onProgress = (progress: PerfProgress): void => {
      run.completedSteps = progress.stepIndex;
      run.currentConcurrency = "concurrency" in progress.load ? progress.load.concurrency : null;
      run.window = progress.window;
      run.maxWindows = progress.maxWindows;
    };
    let report: PerfReport | undefined;
    let failure: string | undefined;
    try {
      report = await runPerf(options, { onProgress });
    } catch (error) {
      failure = messageOf(error);
    }
    run.completedSteps = report?.steps.length ?? run.completedSteps;
    run.currentConcurrency = null;
    const aborted = run.controller.signal.aborted;
    const reason = aborted ? messageOf(run.controller.signal.reason) : undefined;
    if (failure === undefined && report !== undefined && !aborted && report.steps.length > 0 && report.steps.every((step) => step.requests === 0)) {
      failure = `every request failed: ${report.steps.flatMap((step) => step.errorSamples)[0] ?? "no response"}`;
    }
    const status: PerfRunStatus = aborted && run.cancelledBy !== undefined ? "CANCELLED" : aborted || failure !== undefined ? "FAILED" : "SUCCEEDED";
    const error = status === "SUCCEEDED" ? null : status === "CANCELLED" ? (reason ?? "cancelled") : (failure ?? reason ?? "the run stopped");
    try {
      await this.prisma.$transaction(async (tx) => {
        if (report !== undefined && report.steps.length > 0) {
          await tx.perfSample.createMany({ data: report.steps.map((step) => sampleOf(run.id, step, report!.config.batchSize)) });
        }
        await tx.perfReport.update({
          where: { id: run.id },
          data: {
            status,
            error,
            finishedAt: new Date(),
            ...(report !== undefined ? { targetVersion: report.version || null, summary: summaryOf(report) as unknown as Prisma.InputJsonObject } : {}),
          },
        });
        const action = status === "CANCELLED" ? "perf.cancel" : status === "SUCCEEDED" ? "perf.finish" : "perf.fail";
        await recordAudit(tx, status === "CANCELLED" ? run.cancelledBy! : SYSTEM_ACTOR, {
          action,
          targetType: "PerfReport",
          targetId: run.id,
          before: { status: "RUNNING" },
          after: { status, error, steps: report?.steps.length ?? 0 },
        });
      });
      if (status === "FAILED") this.logger.info({ report: run.id, error }, "perf run failed");
    } catch (writeError) {
      this.logger.error({ report: run.id, err: writeError }, "could not store the result of a perf run");
      // Without samples, but not left RUNNING (which would refuse every later start until a restart).
      await this.prisma.perfReport
        .update({ where: { id: run.id }, data: { status: "FAILED", error: `the results could not be stored: ${messageOf(writeError)}`, finishedAt: new Date() } })
        .catch((error: unknown) => this.logger.error({ report: run.id, err: error }, "could not mark the perf run failed; it stays RUNNING until the next restart"));
    }
  }
}

const reportRelations = {
  hardwareProfile: { select: { id: true, name: true } },
  createdBy: { select: { id: true, email: true } },
} as const;

function checkRange(range: LoadRange): LoadRange {
  try {
    validateLoadRange(range, "integer", "concurrency");
  } catch (error) {
    throw new AppError("VALIDATION_FAILED", messageOf(error), { fieldErrors: [{ path: "concurrency", message: messageOf(error) }] });
  }
  const steps = expandLoadRange(range).length;
  if (steps > MAX_STEPS) {
    throw new AppError("VALIDATION_FAILED", `the concurrency range expands to ${steps} steps; at most ${MAX_STEPS}`, {
      fieldErrors: [{ path: "concurrency", message: `at most ${MAX_STEPS} steps` }],
    });
  }
  return range;
}

function configOf(report: PerfReportRow): PerfRunConfig | null {
  const config = report.config;
  return typeof config === "object" && config !== null && !Array.isArray(config) && typeof (config as Record<string, unknown>)["totalSteps"] === "number"
    ? (config as unknown as PerfRunConfig)
    : null;
}

function viewReport(row: PerfReportRow & { hardwareProfile: { id: string; name: string } | null; createdBy: { id: string; email: string } | null }): PerfReportView {
  return {
    id: row.id,
    targetKind: row.targetKind,
    targetName: row.targetName,
    targetVersion: row.targetVersion,
    status: row.status,
    error: row.error,
    config: configOf(row),
    summary: (row.summary as unknown as PerfRunSummary | null) ?? null,
    hardwareProfile: row.hardwareProfile,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
  };
}

function viewSample(sample: PerfSample): PerfSampleView {
  return {
    concurrency: sample.concurrency,
    batchSize: sample.batchSize,
    throughput: sample.throughput,
    latencyAvgUs: sample.latencyAvgUs,
    latencyP50Us: sample.latencyP50Us,
    latencyP90Us: sample.latencyP90Us,
    latencyP95Us: sample.latencyP95Us,
    latencyP99Us: sample.latencyP99Us,
    queueUs: sample.queueUs,
    computeUs: sample.computeUs,
    errorCount: sample.errorCount,
  };
}

/** Latencies of a step with no successful request are unknown (null), not 0. */
function sampleOf(reportId: string, step: PerfStep, batchSize: number): Prisma.PerfSampleCreateManyInput {
  const measured = step.requests > 0;
  const latency = (value: number): number | null => (measured ? value : null);
  return {
    reportId,
    concurrency: step.concurrency ?? 0,
    batchSize,
    throughput: step.throughputInferPerSec,
    latencyAvgUs: latency(step.latencyUs.avg),
    latencyP50Us: latency(step.latencyUs.p50),
    latencyP90Us: latency(step.latencyUs.p90),
    latencyP95Us: latency(step.latencyUs.p95),
    latencyP99Us: latency(step.latencyUs.p99),
    queueUs: step.server?.queueUs ?? null,
    computeUs: step.server !== undefined ? round1(step.server.computeInputUs + step.server.computeInferUs + step.server.computeOutputUs) : null,
    errorCount: step.errors,
  };
}

function summaryOf(report: PerfReport): PerfRunSummary {
  let best: PerfRunSummary["best"] = null;
  for (const step of report.steps) {
    if (step.requests > 0 && (best === null || step.throughputInferPerSec > best.throughput)) {
      best = { concurrency: step.concurrency ?? 0, throughput: step.throughputInferPerSec, latencyP99Us: step.latencyUs.p99 };
    }
  }
  return {
    version: report.version,
    protocol: report.protocol,
    maxBatchSize: report.config.maxBatchSize,
    inputs: report.config.inputs,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    totalRequests: report.steps.reduce((sum, step) => sum + step.requests, 0),
    totalErrors: report.steps.reduce((sum, step) => sum + step.errors, 0),
    best,
    errorSamples: [...new Set(report.steps.flatMap((step) => step.errorSamples))].slice(0, 5),
    steps: report.steps.map((step) => ({
      concurrency: step.concurrency ?? 0,
      requests: step.requests,
      errors: step.errors,
      stable: step.stable,
      throughputRequestsPerSec: step.throughputRequestsPerSec,
      server:
        step.server !== undefined
          ? {
              queueUs: step.server.queueUs,
              computeInputUs: step.server.computeInputUs,
              computeInferUs: step.server.computeInferUs,
              computeOutputUs: step.server.computeOutputUs,
              batchSizes: step.server.batchSizes,
            }
          : null,
    })),
  };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
