import { cpus, loadavg } from "node:os";
import type { PerfReport as PerfReportRow, PerfRunStatus, Prisma, PrismaClient } from "@operon/db";
import { runConcurrencySweep, type SweepStopReason } from "@operon/perf/concurrency-sweep";
import { expandLoadRange } from "@operon/perf/load-range";
import { messageOf } from "@operon/perf/perf-error";
import type { PerfProgress } from "@operon/perf/perf-progress";
import type { PerfReport } from "@operon/perf/perf-report";
import { runPerf, type PerfOptions } from "@operon/perf/run-perf";
import type { PerfInputsStore } from "./perf-inputs.js";
import { OperatorSpecSchema, type OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import type { Logger } from "@operon/protocol/logger";
import { parseJsonColumn } from "../json-column.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient, GatewayClientOptions } from "../gateway/gateway-client.js";
import type { AutoPerfSettingsStore } from "./auto-perf-settings.js";
import { requestTotal } from "./gateway-traffic.js";
import { waitForHeadroom, type HeadroomResult, type TrafficProbe } from "./headroom-gate.js";
import { PERF_RUN_LIMITS, type PerfRunsOptions } from "./perf-run-options.js";
import { sampleOf, summaryOf, type PerfHostLoad, type PerfRunConfig } from "./perf-report-views.js";
import { lowestPriorityOf } from "./run-priority.js";
import { readStepCounters, stepWaterfall, type StepCounters, type StepTime } from "./operator-step-times.js";

/**
 * The execution of one perf run, once its turn in the measuring slot has
 * come (perf-runs.ts queues it): the headroom gate for automatic runs, the
 * move from QUEUED to RUNNING, the measurement (runPerf per concurrency, or
 * the concurrency sweep), each step stored as soon as it is measured, and
 * the result written in one transaction with the status.
 */

/** The run in the slot, as progress and cancel see it. */
export interface ActiveRun {
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

export interface PerfRunExecutionOptions {
  prisma: PrismaClient;
  gateway: GatewayClient;
  gatewayOptions: GatewayClientOptions;
  logger: Logger;
  settings: AutoPerfSettingsStore;
  probe: TrafficProbe;
  options: PerfRunsOptions;
  /** The control plane is stopping: a run waiting for headroom stays QUEUED. */
  isStopped(): boolean;
  /** How the target's inputs are filled (shapes for variable dims, sample data). */
  inputs: PerfInputsStore;
}

export class PerfRunExecution {
  private readonly prisma: PrismaClient;
  private readonly gateway: GatewayClient;
  private readonly gatewayOptions: GatewayClientOptions;
  private readonly logger: Logger;
  private readonly settings: AutoPerfSettingsStore;
  private readonly probe: TrafficProbe;
  private readonly options: PerfRunsOptions;

  constructor(private readonly context: PerfRunExecutionOptions) {
    this.prisma = context.prisma;
    this.gateway = context.gateway;
    this.gatewayOptions = context.gatewayOptions;
    this.logger = context.logger;
    this.settings = context.settings;
    this.probe = context.probe;
    this.options = context.options;
  }

  /** Runs `run` (its report is `row`, its plan `config`): gate, start, measure, store. */
  async run(run: ActiveRun, row: PerfReportRow, config: PerfRunConfig | null): Promise<void> {
    if (config === null) return this.endQueued(run, "FAILED", "the report has no readable plan");
    let gate: HeadroomResult | undefined;
    if (row.trigger === "AUTOMATIC") {
      const settings = await this.settings.get();
      if (!settings.enabled) return this.endQueued(run, "CANCELLED", "automatic runs were turned off");
      run.waitingFor = "headroom";
      try {
        const mine = await this.ownModels(row);
        const minIdleCores = this.options.headroomMinIdleCores ?? Math.min(1, cpus().length / 2);
        gate = await waitForHeadroom(
          this.probe,
          {
            maxRequestsPerSec: settings.headroomMaxRequestsPerSec,
            minIdleCores,
            maxWaitMs: settings.maxWaitSecs * 1000,
            recheckMs: this.options.headroomRecheckMs ?? 5000,
          },
          run.controller.signal,
          {
            ...(this.options.gateClock !== undefined ? { clock: this.options.gateClock } : {}),
            counts: (model) => mine.has(model),
            onBusy: (rate, _waitedMs, idle) => {
              run.waitingFor = !Number.isFinite(rate)
                ? "headroom (the gateway does not answer)"
                : rate > settings.headroomMaxRequestsPerSec
                  ? `headroom ('${row.targetName}' serves ${round1(rate)} requests/s of users' traffic; limit ${settings.headroomMaxRequestsPerSec})`
                  : `headroom (${round1(idle ?? 0)} cores idle; ${minIdleCores} needed)`;
            },
          },
        );
      } catch (error) {
        if (run.cancelledBy !== undefined) return this.endQueued(run, "CANCELLED", messageOf(error));
        if (this.context.isStopped()) return; // stays QUEUED: resumed at the next start
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
  async endQueued(run: ActiveRun, status: "FAILED" | "CANCELLED", error: string): Promise<void> {
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

  /** The target's own entries in the gateway's statistics: its name, and an operator's step models. */
  private async ownModels(row: PerfReportRow): Promise<Set<string>> {
    if (row.targetKind !== "OPERATOR") return new Set([row.targetName]);
    const steps = (await this.operatorSpec(row))?.steps ?? [];
    return new Set([row.targetName, ...steps.flatMap((step) => (step.kind === "model" ? [step.model] : []))]);
  }

  private async operatorSpec(row: PerfReportRow): Promise<OperatorSpec | undefined> {
    const operator = await this.prisma.operator.findUnique({
      where: { name: row.targetName },
      select: { id: true, spec: true },
    });
    return operator === null
      ? undefined
      : parseJsonColumn(OperatorSpecSchema, operator.spec, { table: "Operator", column: "spec", id: operator.id });
  }

  /**
   * For an operator, where the gateway's metrics are reachable: reads of its
   * per-step counters, and each step's time between two reads
   * (operator-step-times.ts). A read that fails gives no step times for that
   * level; it never fails the run.
   */
  private async stepClock(
    row: PerfReportRow,
  ): Promise<
    { read(): Promise<StepCounters | undefined>; times(a: StepCounters, b: StepCounters): StepTime[] } | undefined
  > {
    if (row.targetKind !== "OPERATOR" || this.gatewayOptions.metricsUrl === undefined) return undefined;
    const spec = await this.operatorSpec(row);
    if (spec === undefined) return undefined;
    const read = async (): Promise<StepCounters | undefined> => {
      try {
        const text = await this.gateway.metricsText();
        return text === undefined ? undefined : readStepCounters(text, row.targetName);
      } catch (error) {
        this.logger.info({ report: row.id, error: messageOf(error) }, "operator step times not read");
        return undefined;
      }
    };
    return { read, times: (before, after) => stepWaterfall(spec, before, after) };
  }

  /** An automatic run of a model with priority levels measures at its lowest (run-priority.ts); else none. */
  private async automaticPriority(row: PerfReportRow): Promise<number | undefined> {
    if (row.targetKind !== "MODEL") return undefined;
    try {
      return lowestPriorityOf(await this.gateway.modelConfig(row.targetName, row.targetVersion ?? undefined));
    } catch {
      // The run itself reports an unknown or unloaded model; no priority is no reason to fail here.
      return undefined;
    }
  }

  /** The gateway's request total of users' traffic, less the target's own entries: what other clients sent. */
  private async otherTraffic(row: PerfReportRow): Promise<number | null> {
    try {
      const mine = await this.ownModels(row);
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
    // The target's saved perf inputs, else suggested sizes for variable dims and random data.
    const inputs = await this.context.inputs.optionsFor({ kind: row.targetKind, name: row.targetName });
    const priority = row.trigger === "AUTOMATIC" ? await this.automaticPriority(row) : undefined;
    const base: PerfOptions = {
      ...inputs,
      model: row.targetName,
      // An operator is served as one version; its registry version is only the report's label.
      ...(row.targetVersion !== null && row.targetKind === "MODEL" ? { version: row.targetVersion } : {}),
      protocol: "http",
      url: this.gatewayOptions.httpUrl,
      batchSize: config.batchSize,
      measurementIntervalMs: config.measurementIntervalMs,
      maxTrials: config.maxTrials,
      ...(priority !== undefined ? { priority } : {}),
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
    const stepClock = await this.stepClock(row);
    const measureOne = async (concurrency: number, signal: AbortSignal): Promise<PerfReport> => {
      stepsBefore = parts.reduce((sum, part) => sum + part.steps.length, 0);
      const countersBefore = await stepClock?.read();
      const part = await runPerf(
        { ...base, concurrencyRange: { start: concurrency, end: concurrency, step: 1 }, signal },
        { onProgress },
      );
      parts.push(part);
      // An operator's steps, timed over this level (one concurrency, so one perf step).
      const countersAfter = countersBefore !== undefined ? await stepClock?.read() : undefined;
      const stepTimes =
        stepClock !== undefined && countersBefore !== undefined && countersAfter !== undefined
          ? stepClock.times(countersBefore, countersAfter)
          : undefined;
      if (part.steps.length > 0) {
        await this.prisma.perfSample.createMany({
          data: part.steps.map((step) => ({
            ...sampleOf(run.id, step, part.config.batchSize),
            ...(stepTimes !== undefined ? { stepTimes } : {}),
          })),
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
      idleCoresAtStart: gate?.idleCores != null ? round1(gate.idleCores) : null,
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

function loadPerCore(): number {
  return Math.round((loadavg()[0]! / Math.max(1, cpus().length)) * 100) / 100;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
