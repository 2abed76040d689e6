import type {
  PerfReport as PerfReportRow,
  PerfRunStatus,
  PerfTargetKind,
  PerfTrigger,
  Prisma,
  PrismaClient,
} from "@operon/db";
import { sweepConcurrencies } from "@operon/perf/concurrency-sweep";
import { expandLoadRange, validateLoadRange, type LoadRange } from "@operon/perf/load-range";
import { messageOf } from "@operon/perf/perf-error";
import { PERF_DEFAULTS } from "@operon/perf/run-perf";
import type { Logger } from "@operon/protocol/logger";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import { AutoPerfSettingsStore, type AutoPerfSettings, type AutoPerfSettingsPatch } from "./auto-perf-settings.js";
import { ExclusiveSlot } from "./exclusive-slot.js";
import { GatewayTrafficProbe } from "./gateway-traffic.js";
import { PerfInputsStore } from "./perf-inputs.js";
import { PerfRunExecution, type ActiveRun } from "./perf-run-execution.js";
import { PERF_RUN_LIMITS, type PerfRunsOptions } from "./perf-run-options.js";
import { PerfRunViews, type LatestReportView, type PerfProgressView, type VersionPerfView } from "./perf-run-views.js";
import { configOf, type PerfReportView, type PerfRunConfig, type PerfSampleView } from "./perf-report-views.js";
import { resolvePerfTarget, type TargetLinks } from "./perf-target.js";

export type {
  PerfHostLoad,
  PerfReportView,
  PerfRunConfig,
  PerfRunSummary,
  PerfSampleView,
} from "./perf-report-views.js";
export type { LatestReportView, PerfProgressView, VersionPerfView } from "./perf-run-views.js";
export { PERF_RUN_LIMITS, type PerfRunsOptions } from "./perf-run-options.js";

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

const MAX_STEPS = 64;

/** Windows a step measures at least (the last three must agree). */
const MIN_WINDOWS_PER_STEP = 3;

/** What start and requestAutomatic answer. */
export interface QueuedRun {
  id: string;
  status: PerfRunStatus;
  /** True when the request joined a run that was already queued for the same target and version. */
  joined: boolean;
}

export class PerfRuns {
  readonly settings: AutoPerfSettingsStore;
  /** How runs fill each target's inputs; config searches read it too. */
  readonly inputs: PerfInputsStore;
  private readonly slot = new ExclusiveSlot();
  private readonly execution: PerfRunExecution;
  private readonly views: PerfRunViews;
  private active: ActiveRun | undefined;
  private draining: Promise<void> | undefined;
  private kicked = false;
  private stopped = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    gatewayOptions: GatewayClientOptions,
    private readonly logger: Logger,
    private readonly options: PerfRunsOptions = {},
  ) {
    this.settings = new AutoPerfSettingsStore(prisma);
    this.inputs = new PerfInputsStore(prisma, gateway);
    this.execution = new PerfRunExecution({
      inputs: this.inputs,
      prisma,
      gateway,
      gatewayOptions,
      logger,
      settings: this.settings,
      probe: options.probe ?? new GatewayTrafficProbe(gateway),
      options,
      isStopped: () => this.stopped,
    });
    this.views = new PerfRunViews(prisma, { active: () => this.active, slotHolder: () => this.slot.current });
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
    // Its perf inputs go too: a new model of that name has other inputs.
    this.inputs
      .remove(target)
      .catch((error: unknown) => this.logger.warn({ target: target.name, err: error }, "could not remove perf inputs"));
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

  progress(id: string): Promise<PerfProgressView> {
    return this.views.progress(id);
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

  list(filter: { targetName?: string | undefined; limit: number }): Promise<PerfReportView[]> {
    return this.views.list(filter);
  }

  /** The queue: the run measuring (if any) and the queued ones in the order they will run, plus what holds the slot. */
  queue(): Promise<{ slotHolder: string | null; runs: PerfReportView[] }> {
    return this.views.queue();
  }

  /** The target's newest report of any status, with its progress while it is queued or running: "the latest report" of a model or operator page. */
  latest(target: { kind: PerfTargetKind; name: string }): Promise<LatestReportView> {
    return this.views.latest(target);
  }

  /** Per version of a model: its latest report and how its latest successful report compares with the previous version's. */
  versionReports(modelName: string): Promise<VersionPerfView[]> {
    return this.views.versionReports(modelName);
  }

  /** The report and its samples by ascending concurrency. */
  get(id: string): Promise<PerfReportView & { samples: PerfSampleView[] }> {
    return this.views.get(id);
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
    // A plan that does not parse fails its run with the reason (naming the row), instead of stopping the queue on it.
    let config: PerfRunConfig | null = null;
    let unreadable: string | undefined;
    try {
      config = configOf(row);
    } catch (error) {
      unreadable = messageOf(error);
    }
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
      if (unreadable !== undefined) await this.execution.endQueued(run, "FAILED", unreadable);
      else await this.execution.run(run, row, config);
    } catch (error) {
      this.logger.error({ report: row.id, err: error }, "a queued perf run could not be run");
      await this.execution
        .endQueued(run, "FAILED", `the run could not start: ${messageOf(error)}`)
        .catch(() => undefined);
    } finally {
      if (this.active === run) this.active = undefined;
      finish();
    }
  }

  private resolveTarget(
    target: { kind: PerfTargetKind; name: string; version?: string | undefined },
    batchSize: number,
  ): Promise<TargetLinks> {
    return resolvePerfTarget(this.prisma, this.gateway, target, batchSize);
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
