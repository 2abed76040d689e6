import { cpus, loadavg } from "node:os";
import type {
  PerfReport as PerfReportRow,
  PerfRunStatus,
  PerfTargetKind,
  PerfTrigger,
  Prisma,
  PrismaClient,
} from "@operon/db";
import { expandLoadRange, validateLoadRange, type LoadRange } from "@operon/perf/load-range";
import { messageOf } from "@operon/perf/perf-error";
import type { PerfProgress } from "@operon/perf/perf-progress";
import type { PerfReport } from "@operon/perf/perf-report";
import { PERF_DEFAULTS, runPerf, type PerfOptions } from "@operon/perf/run-perf";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import type { Logger } from "@operon/protocol/logger";
import { AutoPerfSettingsStore, type AutoPerfSettings, type AutoPerfSettingsPatch } from "./auto-perf-settings.js";
import { runConcurrencySweep, sweepConcurrencies, type SweepStopReason } from "@operon/perf/concurrency-sweep";
import { ExclusiveSlot } from "./exclusive-slot.js";
import { GatewayTrafficProbe, requestTotal } from "./gateway-traffic.js";
import { waitForHeadroom, type GateClock, type HeadroomResult, type TrafficProbe } from "./headroom-gate.js";
import { compareVersionList, type VersionComparison } from "./version-comparison.js";
import {
  configOf,
  reportRelations,
  sampleOf,
  summaryOf,
  viewReport,
  viewSample,
  type PerfHostLoad,
  type PerfReportView,
  type PerfRunConfig,
  type PerfSampleView,
} from "./perf-report-views.js";

export type {
  PerfHostLoad,
  PerfReportView,
  PerfRunConfig,
  PerfRunSummary,
  PerfSampleView,
} from "./perf-report-views.js";

/**
 * Perf runs: the `operon perf` engine (runPerf) run in the background
 * against the gateway, from a queue, one at a time, its progress kept in
 * memory and its result stored as a PerfReport with one PerfSample per
 * concurrency step.
 *
 * Two kinds of run share the queue: MANUAL ones (a person's sweep over a
 * concurrency range) and AUTOMATIC ones, queued by the platform after a
 * model upload, a new version, a config change or an operator registration
 * (requestAutomatic), with the admins' plan (auto-perf-settings.ts): a
 * doubling concurrency sweep until the throughput stops rising, bounded in
 * time. Automatic runs start only while the host has headroom
 * (headroom-gate.ts); manual ones start when their turn comes.
 *
 * Life of a report: QUEUED (created by start/requestAutomatic; a second
 * request for the same target, version and kind while one is queued joins
 * it) -> RUNNING -> SUCCEEDED (samples and summary written in one
 * transaction with the status) | FAILED (error set; the samples of the
 * steps that completed are kept) | CANCELLED (cancel(), queued or running;
 * completed steps kept). At start-up a RUNNING report was left by a crash
 * and is marked FAILED (recoverInterrupted); QUEUED ones are resumed: they
 * never started, so nothing is lost by running them later.
 *
 * The queue runs in the control plane's one measuring slot (runExclusive),
 * which other measuring work (the config search) shares.
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
  /** QUEUED only: runs ahead of it (the one measuring counts), else null. */
  queuePosition: number | null;
  /** What it waits for, e.g. "waiting for headroom: 120 requests/s", else null. */
  waitingFor: string | null;
}

interface ActiveRun {
  id: string;
  targetName: string;
  controller: AbortController;
  /** waiting: QUEUED, its turn came and it waits for headroom; measuring: RUNNING. */
  phase: "waiting" | "measuring";
  waitingFor: string | null;
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

/**
 * Bounds on what one account may ask of the one measuring slot: runs it has
 * queued or running at once (manual runs; automatic ones are the
 * platform's), and any run's total time (its steps measured so far are kept
 * when it is stopped there).
 */
export const PERF_RUN_LIMITS = { maxQueuedPerUser: 3, maxRunSecs: 30 * 60 } as const;

/** Windows a step measures at least (the last three must agree). */
const MIN_WINDOWS_PER_STEP = 3;

export interface PerfRunsOptions {
  /** Manual runs one user may have queued or running at once; default PERF_RUN_LIMITS.maxQueuedPerUser. */
  maxQueuedPerUser?: number | undefined;
  /** Longest a run measures in all, manual or automatic; default PERF_RUN_LIMITS.maxRunSecs. */
  maxRunSecs?: number | undefined;
  /** Measures the gateway's traffic for the headroom gate (default: its statistics over 1 s). */
  probe?: TrafficProbe | undefined;
  gateClock?: GateClock | undefined;
  /** Pause between headroom checks while the host is busy (default 5 s). */
  headroomRecheckMs?: number | undefined;
}

/** What start and requestAutomatic answer. */
export interface QueuedRun {
  id: string;
  status: PerfRunStatus;
  /** True when the request joined a run that was already queued for the same target and version. */
  joined: boolean;
}

/** The target's latest report and, while it is queued or running, its progress. */
export interface LatestReportView {
  report: PerfReportView | null;
  progress: PerfProgressView | null;
}

export interface VersionPerfView {
  version: string;
  /** The version's latest report of any status (its status shows on the version list). */
  latest: PerfReportView | null;
  /** Against the previous version's latest successful report; null without one or without a common concurrency. */
  comparison: VersionComparison | null;
}

export class PerfRuns {
  readonly settings: AutoPerfSettingsStore;
  private readonly slot = new ExclusiveSlot();
  private readonly probe: TrafficProbe;
  private active: ActiveRun | undefined;
  private draining: Promise<void> | undefined;
  private kicked = false;
  private stopped = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly gatewayOptions: GatewayClientOptions,
    private readonly logger: Logger,
    private readonly options: PerfRunsOptions = {},
  ) {
    this.settings = new AutoPerfSettingsStore(prisma);
    this.probe = options.probe ?? new GatewayTrafficProbe(gateway);
  }

  /**
   * Runs `fn` in the control plane's one measuring slot, after the perf run
   * measuring now (if any) and every earlier runExclusive caller; perf runs
   * queued later wait for it. See ExclusiveSlot for the contract: fn must
   * end by itself (bound it), `signal` skips its turn if it aborts before
   * fn starts, not reentrant. `label` names the work in the queue's status
   * (e.g. "config search of 'resnet50'").
   */
  runExclusive<T>(label: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.slot.run(label, fn, signal);
  }

  /** Marks the RUNNING reports a crash left behind FAILED; returns how many. Call before any start. QUEUED ones stay for resume(). */
  async recoverInterrupted(): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const orphans = await tx.perfReport.findMany({
        where: { status: "RUNNING" },
        select: { id: true, _count: { select: { samples: true } } },
      });
      if (orphans.length === 0) return 0;
      // Steps are stored as they are measured, so what the run measured before the restart stays with its report.
      for (const orphan of orphans) {
        const kept = orphan._count.samples;
        const error = `interrupted by a restart (${kept} ${kept === 1 ? "step" : "steps"} measured before it ${kept === 1 ? "is" : "are"} kept)`;
        await tx.perfReport.update({
          where: { id: orphan.id },
          data: { status: "FAILED", error, finishedAt: new Date() },
        });
        await recordAudit(tx, SYSTEM_ACTOR, {
          action: "perf.fail",
          targetType: "PerfReport",
          targetId: orphan.id,
          after: { status: "FAILED", error, stepsKept: kept },
        });
      }
      return orphans.length;
    });
  }

  /** Starts working through the runs left QUEUED by the previous process; returns how many wait. */
  async resume(): Promise<number> {
    const queued = await this.prisma.perfReport.count({ where: { status: "QUEUED" } });
    if (queued > 0) this.pump();
    return queued;
  }

  /**
   * A person's run: checks the target (served, of the kind named, batch
   * size within its max_batch_size) and queues it. It starts when its turn
   * comes, without waiting for headroom. A request equal to a run already
   * queued (same target, version and plan) joins it.
   */
  async start(actor: Actor, input: PerfRunInput): Promise<QueuedRun> {
    if (this.stopped)
      throw new AppError("GATEWAY_UNAVAILABLE", "the control plane is stopping; start the run again once it is back");
    const range = checkRange(input.concurrency);
    await this.checkManualBounds(actor, expandLoadRange(range).length, input.measurementIntervalMs);
    const links = await this.resolveTarget(input.target, input.batchSize);
    const config: PerfRunConfig = {
      protocol: input.protocol,
      concurrencyRange: range,
      batchSize: input.batchSize,
      measurementIntervalMs: input.measurementIntervalMs,
      maxTrials: input.maxTrials ?? PERF_DEFAULTS.maxTrials,
      totalSteps: expandLoadRange(range).length,
    };
    return this.enqueue(actor, "MANUAL", input.target, links, config, null);
  }

  /** Refuses a manual run over its owner's queue limit, or one that could not finish within the time bound. */
  private async checkManualBounds(actor: Actor, steps: number, measurementIntervalMs: number): Promise<void> {
    const maxRunSecs = this.options.maxRunSecs ?? PERF_RUN_LIMITS.maxRunSecs;
    const leastMs = steps * MIN_WINDOWS_PER_STEP * measurementIntervalMs;
    if (leastMs > maxRunSecs * 1000) {
      throw new AppError(
        "VALIDATION_FAILED",
        `this run would measure for at least ${Math.ceil(leastMs / 1000)} s (${steps} steps × ${MIN_WINDOWS_PER_STEP} windows × ${measurementIntervalMs} ms), beyond the ${maxRunSecs} s a run may take: measure fewer steps or shorter windows`,
        { fieldErrors: [{ path: "concurrency", message: `at most ${maxRunSecs} s in all` }] },
      );
    }
    if (actor.userId === null) return;
    const maxQueued = this.options.maxQueuedPerUser ?? PERF_RUN_LIMITS.maxQueuedPerUser;
    const mine = await this.prisma.perfReport.count({
      where: { createdById: actor.userId, trigger: "MANUAL", status: { in: ["QUEUED", "RUNNING"] } },
    });
    if (mine >= maxQueued) {
      throw new AppError(
        "RATE_LIMITED",
        `you have ${mine} perf runs queued or running, the most one user may have (${maxQueued}); wait for one to end or cancel one`,
        { retryAfterSecs: 60 },
      );
    }
  }

  /**
   * The platform's run after a change (`cause`, e.g. "model.upload version
   * 3"): queued with the admins' plan unless automatic runs are off or the
   * gateway does not serve the target (then nothing is queued and the
   * reason is logged). Never throws: the change that asked has succeeded
   * whatever happens here. Resolves to the queued run, or undefined.
   */
  async requestAutomatic(
    target: { kind: PerfTargetKind; name: string; version?: string | undefined },
    cause: string,
  ): Promise<QueuedRun | undefined> {
    try {
      if (this.stopped) return undefined;
      const settings = await this.settings.get();
      if (!settings.enabled) return undefined;
      const links = await this.resolveTarget(target, 1);
      return await this.enqueue(SYSTEM_ACTOR, "AUTOMATIC", target, links, automaticConfig(settings), cause);
    } catch (error) {
      this.logger.info({ target: target.name, cause, err: messageOf(error) }, "no automatic perf run queued");
      return undefined;
    }
  }

  /**
   * The target is gone (its reports went with its row): a run of it that
   * waits or measures is stopped, so the slot is free for the next one.
   */
  targetDeleted(target: { kind: PerfTargetKind; name: string }): void {
    const run = this.active;
    if (run !== undefined && run.targetName === target.name)
      run.controller.abort(new Error(`${target.kind === "MODEL" ? "model" : "operator"} '${target.name}' was deleted`));
  }

  /** The plan of automatic runs. Turning them off cancels the automatic runs still queued (audited each). */
  async updateSettings(actor: Actor, patch: AutoPerfSettingsPatch, who: string): Promise<AutoPerfSettings> {
    const settings = await this.settings.update(actor, patch);
    if (!settings.enabled) {
      const queued = await this.prisma.perfReport.findMany({
        where: { status: "QUEUED", trigger: "AUTOMATIC" },
        select: { id: true },
      });
      for (const { id } of queued) {
        await this.cancel(actor, id, `${who} (automatic runs turned off)`).catch(() => undefined);
      }
    }
    return settings;
  }

  async progress(id: string): Promise<PerfProgressView> {
    const run = this.active;
    if (run !== undefined && run.id === id) {
      if (run.phase === "waiting") {
        return {
          id,
          status: "QUEUED",
          completedSteps: 0,
          totalSteps: run.totalSteps,
          currentConcurrency: null,
          percent: 0,
          error: null,
          queuePosition: 0,
          waitingFor: run.waitingFor,
        };
      }
      const stepShare = run.currentConcurrency === null ? 0 : Math.min(run.window / Math.max(1, run.maxWindows), 0.99);
      return {
        id,
        status: "RUNNING",
        completedSteps: run.completedSteps,
        totalSteps: run.totalSteps,
        currentConcurrency: run.currentConcurrency,
        percent: round1(Math.min(99.9, ((run.completedSteps + stepShare) / run.totalSteps) * 100)),
        error: null,
        queuePosition: null,
        waitingFor: null,
      };
    }
    const report = await this.prisma.perfReport.findUnique({
      where: { id },
      include: { _count: { select: { samples: true } } },
    });
    if (report === null) throw notFound(`perf report ${id}`);
    const config = configOf(report);
    const completedSteps = report._count.samples;
    const totalSteps = report.status === "SUCCEEDED" ? completedSteps : (config?.totalSteps ?? completedSteps);
    let queuePosition: number | null = null;
    let waitingFor: string | null = null;
    if (report.status === "QUEUED") {
      const ahead = await this.prisma.perfReport.count({
        where: {
          status: "QUEUED",
          OR: [{ createdAt: { lt: report.createdAt } }, { createdAt: report.createdAt, id: { lt: report.id } }],
        },
      });
      queuePosition = ahead + (this.active !== undefined ? 1 : 0);
      const holder = this.slot.current;
      waitingFor =
        holder !== undefined && !holder.startsWith("perf ") ? `its turn (measuring now: ${holder})` : "its turn";
    }
    return {
      id,
      status: report.status,
      completedSteps,
      totalSteps,
      currentConcurrency: null,
      percent: report.status === "SUCCEEDED" ? 100 : totalSteps > 0 ? round1((completedSteps / totalSteps) * 100) : 0,
      error: report.error,
      queuePosition,
      waitingFor,
    };
  }

  /** Cancels a queued run, or stops a running one (the steps it completed are kept). Resolves once the report is CANCELLED. */
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
      if (report.status !== "RUNNING" && report.status !== "QUEUED") {
        throw new AppError(
          "CONFLICT",
          `perf report ${id} is neither queued nor running (it is ${report.status.toLowerCase()})`,
        );
      }
      // QUEUED: not started yet. RUNNING with no run in this process: a run another control plane owns, or one whose process died.
      const { count } = await tx.perfReport.updateMany({
        where: { id, status: report.status },
        data: { status: "CANCELLED", error: `cancelled by ${who}`, finishedAt: new Date() },
      });
      if (count === 0) throw new AppError("CONFLICT", `perf report ${id} changed meanwhile; look at it again`);
      await recordAudit(tx, actor, {
        action: "perf.cancel",
        targetType: "PerfReport",
        targetId: id,
        before: { status: report.status },
        after: { status: "CANCELLED" },
      });
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

  /** The queue: the run measuring (if any) and the queued ones in the order they will run, plus what holds the slot. */
  async queue(): Promise<{ slotHolder: string | null; runs: PerfReportView[] }> {
    const rows = await this.prisma.perfReport.findMany({
      where: { status: { in: ["RUNNING", "QUEUED"] } },
      include: reportRelations,
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: 200,
    });
    const running = rows.filter((row) => row.status === "RUNNING");
    const queued = rows.filter((row) => row.status === "QUEUED");
    return { slotHolder: this.slot.current ?? null, runs: [...running, ...queued].map(viewReport) };
  }

  /** The target's newest report of any status, with its progress while it is queued or running: "the latest report" of a model or operator page. */
  async latest(target: { kind: PerfTargetKind; name: string }): Promise<LatestReportView> {
    const row = await this.prisma.perfReport.findFirst({
      where: { targetKind: target.kind, targetName: target.name },
      include: reportRelations,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    if (row === null) return { report: null, progress: null };
    const progress = row.status === "QUEUED" || row.status === "RUNNING" ? await this.progress(row.id) : null;
    return { report: viewReport(row), progress };
  }

  /**
   * Per version of a model: its latest report and how its latest successful
   * report compares with the previous version's (version-comparison.ts).
   */
  async versionReports(modelName: string): Promise<VersionPerfView[]> {
    const rows = await this.prisma.perfReport.findMany({
      where: { targetKind: "MODEL", targetName: modelName, targetVersion: { not: null } },
      include: { ...reportRelations, samples: { select: { concurrency: true, throughput: true, latencyP99Us: true } } },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: 500,
    });
    const latest = new Map<string, (typeof rows)[number]>();
    const succeeded = new Map<string, (typeof rows)[number]>();
    for (const row of rows) {
      const version = row.targetVersion!;
      if (!latest.has(version)) latest.set(version, row);
      if (row.status === "SUCCEEDED" && row.samples.length > 0 && !succeeded.has(version)) succeeded.set(version, row);
    }
    const comparisons = compareVersionList(
      [...succeeded.entries()].map(([version, row]) => ({ version, samples: row.samples })),
    );
    return [...latest.entries()]
      .sort(([a], [b]) => Number(b) - Number(a) || b.localeCompare(a))
      .map(([version, row]) => ({ version, latest: viewReport(row), comparison: comparisons.get(version) ?? null }));
  }

  /** The report and its samples by ascending concurrency: the points of a throughput-vs-latency chart and the rows of Triton's perf table. */
  async get(id: string): Promise<PerfReportView & { samples: PerfSampleView[] }> {
    const row = await this.prisma.perfReport.findUnique({
      where: { id },
      include: { ...reportRelations, samples: { orderBy: { concurrency: "asc" } } },
    });
    if (row === null) throw notFound(`perf report ${id}`);
    return { ...viewReport(row), samples: row.samples.map(viewSample) };
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const report = await tx.perfReport.findUnique({ where: { id } });
      if (report === null) throw notFound(`perf report ${id}`);
      if (report.status === "RUNNING" || report.status === "QUEUED")
        throw new AppError("CONFLICT", `perf report ${id} is ${report.status.toLowerCase()}; cancel it first`);
      await tx.perfReport.delete({ where: { id } });
      await recordAudit(tx, actor, {
        action: "perf.delete",
        targetType: "PerfReport",
        targetId: id,
        before: {
          targetKind: report.targetKind,
          targetName: report.targetName,
          status: report.status,
          createdAt: report.createdAt,
        },
      });
    });
  }

  /** Resolves when the run has ended and its report is written: waits through the queue for a run of this process. */
  async settled(id: string): Promise<void> {
    for (;;) {
      if (this.active?.id === id) {
        await this.active.done;
        return;
      }
      const row = await this.prisma.perfReport.findUnique({ where: { id }, select: { status: true } });
      if (row === null || (row.status !== "QUEUED" && row.status !== "RUNNING") || this.stopped) return;
      if (row.status === "RUNNING" && this.active?.id !== id) return; // another process's run
      if (this.draining !== undefined) await Promise.race([this.draining, delay(50)]);
      else await delay(50);
    }
  }

  /** Stops the running run (its report becomes FAILED, completed steps kept; one waiting for headroom stays QUEUED) and the queue. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    const run = this.active;
    run?.controller.abort(new Error("interrupted: the control plane stopped during the run"));
    await run?.done;
    await this.draining;
  }

  /** Wakes the queue; it works until no run is QUEUED. */
  private pump(): void {
    this.kicked = true;
    if (this.draining !== undefined || this.stopped) return;
    this.draining = this.drain()
      .catch((error: unknown) =>
        this.logger.error({ err: error }, "the perf queue stopped on an error; it resumes with the next request"),
      )
      .finally(() => {
        this.draining = undefined;
      });
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      this.kicked = false;
      const next = await this.prisma.perfReport.findFirst({
        where: { status: "QUEUED" },
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      });
      if (next === null) {
        if (this.kicked) continue;
        return;
      }
      // One slot turn per run, so that runExclusive callers take turns with the queue.
      await this.slot.run(`perf ${next.id}`, () => this.runOne(next));
    }
  }

  private async enqueue(
    actor: Actor,
    trigger: PerfTrigger,
    target: { kind: PerfTargetKind; name: string; version?: string | undefined },
    links: TargetLinks,
    config: PerfRunConfig,
    cause: string | null,
  ): Promise<QueuedRun> {
    const result = await this.prisma.$transaction(async (tx) => {
      const twins = await tx.perfReport.findMany({
        where: {
          status: "QUEUED",
          trigger,
          targetKind: target.kind,
          targetName: target.name,
          targetVersion: target.version ?? null,
        },
        orderBy: { createdAt: "asc" },
      });
      // Automatic runs of one target and version are the same measurement; manual ones only when their plans are equal too.
      const twin = twins.find((row) => trigger === "AUTOMATIC" || canonicalJson(row.config) === canonicalJson(config));
      if (twin !== undefined) {
        if (cause !== null && twin.cause !== null && !twin.cause.includes(cause)) {
          await tx.perfReport.update({
            where: { id: twin.id },
            data: { cause: `${twin.cause}; ${cause}`.slice(0, 500) },
          });
        }
        return { id: twin.id, status: twin.status, joined: true };
      }
      const created = await tx.perfReport.create({
        data: {
          targetKind: target.kind,
          targetName: target.name,
          targetVersion: target.version ?? null,
          ...links,
          createdById: actor.userId,
          status: "QUEUED",
          trigger,
          cause,
          config: config as unknown as Prisma.InputJsonObject,
        },
      });
      await recordAudit(tx, actor, {
        action: "perf.queue",
        targetType: "PerfReport",
        targetId: created.id,
        after: { target, trigger, cause, ...config },
      });
      return { id: created.id, status: created.status, joined: false };
    });
    this.pump();
    return result;
  }

  /** One queued run, in the slot: the headroom gate for automatic runs, then the measurement, then its result. */
  private async runOne(row: PerfReportRow): Promise<void> {
    const config = configOf(row);
    const run: ActiveRun = {
      id: row.id,
      targetName: row.targetName,
      controller: new AbortController(),
      phase: "waiting",
      waitingFor: null,
      totalSteps: config?.totalSteps ?? 1,
      completedSteps: 0,
      currentConcurrency: null,
      window: 0,
      maxWindows: config?.maxTrials ?? PERF_DEFAULTS.maxTrials,
      cancelledBy: undefined,
      done: Promise.resolve(),
    };
    this.active = run;
    let finish!: () => void;
    run.done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    try {
      await this.runActive(run, row, config);
    } catch (error) {
      this.logger.error({ report: row.id, err: error }, "a queued perf run could not be run");
      await this.endQueued(run, "FAILED", `the run could not start: ${messageOf(error)}`).catch(() => undefined);
    } finally {
      if (this.active === run) this.active = undefined;
      finish();
    }
  }

  private async runActive(run: ActiveRun, row: PerfReportRow, config: PerfRunConfig | null): Promise<void> {
    if (config === null) return this.endQueued(run, "FAILED", "the report has no readable plan");
    let gate: HeadroomResult | undefined;
    if (row.trigger === "AUTOMATIC") {
      const settings = await this.settings.get();
      if (!settings.enabled) return this.endQueued(run, "CANCELLED", "automatic runs were turned off");
      run.waitingFor = "headroom";
      try {
        gate = await waitForHeadroom(
          this.probe,
          {
            maxRequestsPerSec: settings.headroomMaxRequestsPerSec,
            maxWaitMs: settings.maxWaitSecs * 1000,
            recheckMs: this.options.headroomRecheckMs ?? 5000,
          },
          run.controller.signal,
          {
            ...(this.options.gateClock !== undefined ? { clock: this.options.gateClock } : {}),
            onBusy: (rate) => {
              run.waitingFor = `headroom (the gateway serves ${Number.isFinite(rate) ? `${Math.round(rate * 10) / 10} requests/s` : "no answer"}; limit ${settings.headroomMaxRequestsPerSec})`;
            },
          },
        );
      } catch (error) {
        if (run.cancelledBy !== undefined) return this.endQueued(run, "CANCELLED", messageOf(error));
        if (this.stopped) return; // stays QUEUED: resumed at the next start
        return this.endQueued(run, "FAILED", messageOf(error)); // e.g. its target was deleted
      }
      if (!gate.ok) return this.endQueued(run, "FAILED", gate.reason);
    }
    if (run.controller.signal.aborted) {
      if (run.cancelledBy !== undefined)
        return this.endQueued(run, "CANCELLED", messageOf(run.controller.signal.reason));
      return; // stopping: stays QUEUED
    }
    const started = await this.prisma.$transaction(async (tx) => {
      const { count } = await tx.perfReport.updateMany({
        where: { id: row.id, status: "QUEUED" },
        data: { status: "RUNNING", startedAt: new Date() },
      });
      if (count === 0) return false;
      await recordAudit(tx, SYSTEM_ACTOR, {
        action: "perf.start",
        targetType: "PerfReport",
        targetId: row.id,
        before: { status: "QUEUED" },
        after: { status: "RUNNING", trigger: row.trigger },
      });
      return true;
    });
    if (!started) return; // cancelled (or taken) meanwhile
    run.phase = "measuring";
    run.waitingFor = null;
    await this.execute(run, row, config, gate);
  }

  /** Ends a run that never measured (QUEUED -> status), audited. */
  private async endQueued(run: ActiveRun, status: "FAILED" | "CANCELLED", error: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const { count } = await tx.perfReport.updateMany({
        where: { id: run.id, status: "QUEUED" },
        data: { status, error, finishedAt: new Date() },
      });
      if (count === 0) return;
      await recordAudit(tx, status === "CANCELLED" && run.cancelledBy !== undefined ? run.cancelledBy : SYSTEM_ACTOR, {
        action: status === "CANCELLED" ? "perf.cancel" : "perf.fail",
        targetType: "PerfReport",
        targetId: run.id,
        before: { status: "QUEUED" },
        after: { status, error },
      });
    });
    if (status === "FAILED") this.logger.info({ report: run.id, error }, "queued perf run failed");
  }

  /** Links to the target's rows, after checking with the gateway that the target is served as the kind named. */
  private async resolveTarget(
    target: { kind: PerfTargetKind; name: string; version?: string | undefined },
    batchSize: number,
  ): Promise<TargetLinks> {
    const { kind, name, version } = target;
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
      throw new AppError(
        "VALIDATION_FAILED",
        `'${name}' is ${isOperator ? "an operator" : "a model"}, not ${kind === "OPERATOR" ? "an operator" : "a model"}; choose target kind ${isOperator ? "OPERATOR" : "MODEL"}`,
        {
          fieldErrors: [{ path: "target.kind", message: `'${name}' is ${isOperator ? "an operator" : "a model"}` }],
        },
      );
    }
    const batchLimit = Math.max(1, maxBatchSize);
    if (batchSize > batchLimit) {
      throw new AppError(
        "VALIDATION_FAILED",
        `batch size ${batchSize} is above ${what}'s max_batch_size (${maxBatchSize === 0 ? "0: it does not batch, so only 1" : maxBatchSize})`,
        {
          fieldErrors: [{ path: "batchSize", message: `at most ${batchLimit}` }],
        },
      );
    }
    const profile = await this.prisma.hardwareProfile.findFirst({ where: { isDefault: true }, select: { id: true } });
    const links: TargetLinks = {};
    if (profile !== null) links.hardwareProfileId = profile.id;
    if (kind === "MODEL") {
      const model = await this.prisma.model.findUnique({ where: { name }, select: { id: true } });
      if (model !== null) {
        links.modelId = model.id;
        if (version !== undefined && /^\d+$/.test(version)) {
          const row = await this.prisma.modelVersion.findUnique({
            where: { modelId_version: { modelId: model.id, version: Number(version) } },
            select: { id: true },
          });
          if (row !== null) links.modelVersionId = row.id;
        }
      }
    } else {
      const operator = await this.prisma.operator.findUnique({ where: { name }, select: { id: true } });
      if (operator !== null) links.operatorId = operator.id;
    }
    return links;
  }

  /** The gateway's request total, less the target's own entries (and an operator's step models): what other clients sent. */
  private async otherTraffic(row: PerfReportRow): Promise<number | null> {
    try {
      let mine = new Set([row.targetName]);
      if (row.targetKind === "OPERATOR") {
        const operator = await this.prisma.operator.findUnique({
          where: { name: row.targetName },
          select: { spec: true },
        });
        const steps = (operator?.spec as { steps?: Array<{ model?: unknown }> } | null)?.steps ?? [];
        mine = new Set([
          row.targetName,
          ...steps.flatMap((step) => (typeof step.model === "string" ? [step.model] : [])),
        ]);
      }
      return requestTotal(await this.gateway.statistics(), (entry) => !mine.has(entry.name));
    } catch {
      return null;
    }
  }

  private async execute(
    run: ActiveRun,
    row: PerfReportRow,
    config: PerfRunConfig,
    gate: HeadroomResult | undefined,
  ): Promise<void> {
    const base: PerfOptions = {
      model: row.targetName,
      // An operator is served as one version; its registry version is only the report's label.
      ...(row.targetVersion !== null && row.targetKind === "MODEL" ? { version: row.targetVersion } : {}),
      protocol: "http",
      url: this.gatewayOptions.httpUrl,
      batchSize: config.batchSize,
      measurementIntervalMs: config.measurementIntervalMs,
      maxTrials: config.maxTrials,
      ...(this.gatewayOptions.adminKey ? { headers: { authorization: `Bearer ${this.gatewayOptions.adminKey}` } } : {}),
    };
    let stepsBefore = 0;
    const onProgress = (progress: PerfProgress): void => {
      run.completedSteps = stepsBefore + progress.stepIndex;
      run.currentConcurrency = "concurrency" in progress.load ? progress.load.concurrency : null;
      run.window = progress.window;
      run.maxWindows = progress.maxWindows;
    };
    const loadBefore = loadPerCore();
    const otherBefore = await this.otherTraffic(row);
    const measureStarted = Date.now();
    let report: PerfReport | undefined;
    let failure: string | undefined;
    let stopReason: SweepStopReason | null = null;
    // One runPerf call per concurrency, each step stored as soon as it is measured: a run that a
    // restart (or a kill) cuts off keeps what it measured (recoverInterrupted marks it FAILED).
    const parts: PerfReport[] = [];
    let stored = 0;
    const measureOne = async (concurrency: number, signal: AbortSignal): Promise<PerfReport> => {
      stepsBefore = parts.reduce((sum, part) => sum + part.steps.length, 0);
      const part = await runPerf(
        { ...base, concurrencyRange: { start: concurrency, end: concurrency, step: 1 }, signal },
        { onProgress },
      );
      parts.push(part);
      if (part.steps.length > 0) {
        await this.prisma.perfSample.createMany({
          data: part.steps.map((step) => sampleOf(run.id, step, part.config.batchSize)),
        });
        stored += part.steps.length;
      }
      return part;
    };
    // Every run is bounded in total time, manual ones too (a plan of 1,024 steps would hold the slot for days).
    const maxRunSecs = this.options.maxRunSecs ?? PERF_RUN_LIMITS.maxRunSecs;
    const timeBound = setTimeout(
      () =>
        run.controller.abort(
          new Error(`stopped at the time bound of ${maxRunSecs} s per run (the steps measured are kept)`),
        ),
      maxRunSecs * 1000,
    );
    try {
      if (config.sweep === undefined) {
        for (const concurrency of expandLoadRange(config.concurrencyRange)) {
          if (run.controller.signal.aborted) break;
          await measureOne(concurrency, run.controller.signal);
        }
      } else {
        // The sweep measures one concurrency at a time, so it can stop as soon as the curve flattens.
        const outcome = await runConcurrencySweep(
          {
            maxConcurrency: config.concurrencyRange.end,
            minGainPercent: config.sweep.minGainPercent,
            timeBoundMs: config.sweep.timeBoundSecs * 1000,
          },
          async (concurrency, signal) => {
            const part = await measureOne(concurrency, signal);
            const step = part.steps[0];
            return step === undefined
              ? undefined
              : { concurrency, throughput: step.requests > 0 ? step.throughputInferPerSec : 0 };
          },
          { signal: run.controller.signal },
        );
        stopReason = outcome.stopReason;
      }
    } catch (error) {
      failure = messageOf(error);
    } finally {
      clearTimeout(timeBound);
    }
    if (parts.length > 0)
      report = {
        ...parts[parts.length - 1]!,
        startedAt: parts[0]!.startedAt,
        steps: parts.flatMap((part) => part.steps),
      };
    const measuredSecs = (Date.now() - measureStarted) / 1000;
    const otherAfter = await this.otherTraffic(row);
    const hostLoad: PerfHostLoad = {
      otherRequestsPerSec:
        otherBefore !== null && otherAfter !== null && measuredSecs > 0
          ? round1(Math.max(0, otherAfter - otherBefore) / measuredSecs)
          : null,
      loadPerCoreBefore: loadBefore,
      loadPerCoreAfter: loadPerCore(),
      // The first check's own window is no wait.
      waitedMs: gate === undefined ? null : gate.checks > 1 ? gate.waitedMs : 0,
      requestsPerSecAtStart: gate !== undefined ? round1(gate.requestsPerSec) : null,
      stopReason,
    };
    run.completedSteps = report?.steps.length ?? run.completedSteps;
    run.currentConcurrency = null;
    const aborted = run.controller.signal.aborted;
    const reason = aborted ? messageOf(run.controller.signal.reason) : undefined;
    if (
      failure === undefined &&
      report !== undefined &&
      !aborted &&
      report.steps.length > 0 &&
      report.steps.every((step) => step.requests === 0)
    ) {
      failure = `every request failed: ${report.steps.flatMap((step) => step.errorSamples)[0] ?? "no response"}`;
    }
    if (failure === undefined && report === undefined && !aborted) failure = "nothing was measured";
    const status: PerfRunStatus =
      aborted && run.cancelledBy !== undefined
        ? "CANCELLED"
        : aborted || failure !== undefined
          ? "FAILED"
          : "SUCCEEDED";
    const error =
      status === "SUCCEEDED"
        ? null
        : status === "CANCELLED"
          ? (reason ?? "cancelled")
          : (failure ?? reason ?? "the run stopped");
    try {
      await this.prisma.$transaction(async (tx) => {
        // Steps are stored as they are measured (above); only any not stored yet go in here.
        if (report !== undefined && report.steps.length > stored) {
          await tx.perfSample.createMany({
            data: report.steps.slice(stored).map((step) => sampleOf(run.id, step, report!.config.batchSize)),
          });
        }
        await tx.perfReport.update({
          where: { id: run.id },
          data: {
            status,
            error,
            finishedAt: new Date(),
            hostLoad: hostLoad as unknown as Prisma.InputJsonObject,
            ...(report !== undefined
              ? {
                  ...(row.targetKind === "MODEL" || row.targetVersion === null
                    ? { targetVersion: report.version || null }
                    : {}),
                  summary: summaryOf(report) as unknown as Prisma.InputJsonObject,
                }
              : {}),
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
      if ((await this.prisma.perfReport.count({ where: { id: run.id } }).catch(() => 1)) === 0) {
        this.logger.info({ report: run.id }, "a perf run's report was deleted with its target during the run");
        return;
      }
      this.logger.error({ report: run.id, err: writeError }, "could not store the result of a perf run");
      // Without samples, but not left RUNNING (which would look like a run in progress until a restart).
      await this.prisma.perfReport
        .update({
          where: { id: run.id },
          data: {
            status: "FAILED",
            error: `the results could not be stored: ${messageOf(writeError)}`,
            finishedAt: new Date(),
          },
        })
        .catch((error: unknown) =>
          this.logger.error(
            { report: run.id, err: error },
            "could not mark the perf run failed; it stays RUNNING until the next restart",
          ),
        );
    }
  }
}

/** The stored plan of an automatic run, from the admins' settings. */
function automaticConfig(settings: AutoPerfSettings): PerfRunConfig {
  const concurrencies = sweepConcurrencies(settings.maxConcurrency);
  return {
    protocol: "http",
    concurrencyRange: { start: 1, end: settings.maxConcurrency, step: 1 },
    batchSize: 1,
    measurementIntervalMs: settings.measurementIntervalMs,
    maxTrials: settings.maxTrials,
    totalSteps: concurrencies.length,
    sweep: { concurrencies, minGainPercent: settings.minGainPercent, timeBoundSecs: settings.timeBoundSecs },
  };
}

/** JSON with sorted keys: PostgreSQL's jsonb does not keep the key order a config was written with. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    field !== null && typeof field === "object" && !Array.isArray(field)
      ? Object.fromEntries(Object.entries(field as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : field,
  );
}

function loadPerCore(): number {
  return Math.round((loadavg()[0]! / Math.max(1, cpus().length)) * 100) / 100;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function checkRange(range: LoadRange): LoadRange {
  try {
    validateLoadRange(range, "integer", "concurrency");
  } catch (error) {
    throw new AppError("VALIDATION_FAILED", messageOf(error), {
      fieldErrors: [{ path: "concurrency", message: messageOf(error) }],
    });
  }
  const steps = expandLoadRange(range).length;
  if (steps > MAX_STEPS) {
    throw new AppError("VALIDATION_FAILED", `the concurrency range expands to ${steps} steps; at most ${MAX_STEPS}`, {
      fieldErrors: [{ path: "concurrency", message: `at most ${MAX_STEPS} steps` }],
    });
  }
  return range;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
