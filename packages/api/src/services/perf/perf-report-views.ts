import type {
  PerfReport as PerfReportRow,
  PerfRunStatus,
  PerfSample,
  PerfTargetKind,
  PerfTrigger,
  Prisma,
} from "@operon/db";
import type { LoadRange } from "@operon/perf/load-range";
import type { PerfReport, PerfStep } from "@operon/perf/perf-report";
import type { SweepStopReason } from "@operon/perf/concurrency-sweep";

/**
 * How perf reports are stored and shown: the JSON kept in PerfReport
 * (config, summary, hostLoad) and PerfSample rows, and the views the API
 * answers with. perf-runs.ts writes them; nothing here touches the database.
 */
/** What start stores in PerfReport.config. Automatic runs store their plan (concurrencyRange 1..max, the sweep doubles). */
export interface PerfRunConfig {
  protocol: "http";
  concurrencyRange: LoadRange;
  batchSize: number;
  measurementIntervalMs: number;
  maxTrials: number;
  totalSteps: number;
  /** Automatic runs: the sweep's plan. */
  sweep?: { concurrencies: number[]; minGainPercent: number; timeBoundSecs: number } | undefined;
}

/** Stored in PerfReport.hostLoad: how busy the host was around the run, so readers can judge the numbers. */
export interface PerfHostLoad {
  /** Requests per second the gateway served to others while the run measured (its own requests not counted). */
  otherRequestsPerSec: number | null;
  /** 1-minute load average per core before and after the run (the run's own load included in "after"). */
  loadPerCoreBefore: number;
  loadPerCoreAfter: number;
  /**
   * Automatic runs: how long the run waited for headroom (0 when the first
   * check found it), the measured model's own users' traffic and the cores
   * the gateway left idle when it started (reports before issue 27 counted
   * all traffic in requestsPerSecAtStart and have no idleCoresAtStart).
   */
  waitedMs: number | null;
  requestsPerSecAtStart: number | null;
  idleCoresAtStart?: number | null;
  /** Automatic runs: why the sweep ended. */
  stopReason: SweepStopReason | null;
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
  trigger: PerfTrigger;
  /** Automatic runs: the change that queued them (e.g. "model.upload version 3"). */
  cause: string | null;
  startedAt: Date | null;
  hostLoad: PerfHostLoad | null;
}

/** Stored in PerfReport.summary: the run's headline numbers and the per-step details Triton's perf table shows. */
export interface PerfRunSummary {
  version: string;
  protocol: "http" | "grpc";
  maxBatchSize: number;
  /** Each input's request shape (batch dimension included) as the run sent it. */
  inputs: Array<{ name: string; datatype: string; shape: number[] }>;
  /** Where the values came from: random, zero, or a data file (its name). Absent in reports stored before issue 27. */
  inputData?: { kind: "random" | "zero" | "file"; name: string | null };
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
    server: {
      queueUs: number;
      computeInputUs: number;
      computeInferUs: number;
      computeOutputUs: number;
      batchSizes: Record<string, number>;
    } | null;
  }>;
}

export const reportRelations = {
  hardwareProfile: { select: { id: true, name: true } },
  createdBy: { select: { id: true, email: true } },
} as const;

export function configOf(report: PerfReportRow): PerfRunConfig | null {
  const config = report.config;
  return typeof config === "object" &&
    config !== null &&
    !Array.isArray(config) &&
    typeof (config as Record<string, unknown>)["totalSteps"] === "number"
    ? (config as unknown as PerfRunConfig)
    : null;
}

export function viewReport(
  row: PerfReportRow & {
    hardwareProfile: { id: string; name: string } | null;
    createdBy: { id: string; email: string } | null;
  },
): PerfReportView {
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
    trigger: row.trigger,
    cause: row.cause,
    startedAt: row.startedAt,
    hostLoad: (row.hostLoad as unknown as PerfHostLoad | null) ?? null,
  };
}

export function viewSample(sample: PerfSample): PerfSampleView {
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
export function sampleOf(reportId: string, step: PerfStep, batchSize: number): Prisma.PerfSampleCreateManyInput {
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
    computeUs:
      step.server !== undefined
        ? round1(step.server.computeInputUs + step.server.computeInferUs + step.server.computeOutputUs)
        : null,
    errorCount: step.errors,
  };
}

export function summaryOf(report: PerfReport): PerfRunSummary {
  let best: PerfRunSummary["best"] = null;
  for (const step of report.steps) {
    if (step.requests > 0 && (best === null || step.throughputInferPerSec > best.throughput)) {
      best = {
        concurrency: step.concurrency ?? 0,
        throughput: step.throughputInferPerSec,
        latencyP99Us: step.latencyUs.p99,
      };
    }
  }
  return {
    version: report.version,
    protocol: report.protocol,
    maxBatchSize: report.config.maxBatchSize,
    inputs: report.config.inputs,
    inputData: { kind: report.config.inputData, name: report.config.inputDataFile ?? null },
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
