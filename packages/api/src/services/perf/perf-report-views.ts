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
import { z } from "zod";
import { parseJsonColumn } from "../json-column.js";
import { type StepTime, stepTimesSchema } from "./operator-step-times.js";

/**
 * How perf reports are stored and shown: the JSON kept in PerfReport
 * (config, summary, hostLoad) and PerfSample rows, and the views the API
 * answers with. perf-runs.ts writes them; nothing here touches the database.
 */
const loadRangeSchema = z.object({ start: z.number(), end: z.number(), step: z.number() });
const sweepStopReasonSchema = z.enum([
  "plateau",
  "max-concurrency",
  "time-bound",
  "aborted",
  "no-throughput",
  "p99-budget",
]) satisfies z.ZodType<SweepStopReason>;

/** What start stores in PerfReport.config. Automatic runs store their plan (concurrencyRange 1..max, the sweep doubles). */
export const perfRunConfigSchema = z.object({
  protocol: z.literal("http"),
  concurrencyRange: loadRangeSchema satisfies z.ZodType<LoadRange>,
  batchSize: z.number(),
  measurementIntervalMs: z.number(),
  maxTrials: z.number(),
  totalSteps: z.number(),
  /** Automatic runs: the sweep's plan. */
  sweep: z
    .object({ concurrencies: z.array(z.number()), minGainPercent: z.number(), timeBoundSecs: z.number() })
    .optional(),
});
export type PerfRunConfig = z.infer<typeof perfRunConfigSchema>;

/** Stored in PerfReport.hostLoad: how busy the host was around the run, so readers can judge the numbers. */
export const perfHostLoadSchema = z.object({
  /** Requests per second the gateway served to others while the run measured (its own requests not counted). */
  otherRequestsPerSec: z.number().nullable(),
  /** 1-minute load average per core before and after the run (the run's own load included in "after"). */
  loadPerCoreBefore: z.number(),
  loadPerCoreAfter: z.number(),
  /**
   * Automatic runs: how long the run waited for headroom (0 when the first
   * check found it), the measured model's own users' traffic and the cores
   * the gateway left idle when it started (reports before issue 27 counted
   * all traffic in requestsPerSecAtStart and have no idleCoresAtStart).
   */
  waitedMs: z.number().nullable(),
  requestsPerSecAtStart: z.number().nullable(),
  idleCoresAtStart: z.number().nullable().optional(),
  /** Automatic runs: why the sweep ended. */
  stopReason: sweepStopReasonSchema.nullable(),
});
export type PerfHostLoad = z.infer<typeof perfHostLoadSchema>;

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
  /** An operator's steps at this level, as a waterfall (operator-step-times.ts); null for models and older reports. */
  stepTimes: StepTime[] | null;
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
export const perfRunSummarySchema = z.object({
  version: z.string(),
  protocol: z.enum(["http", "grpc"]),
  maxBatchSize: z.number(),
  /** Each input's request shape (batch dimension included) as the run sent it. */
  inputs: z.array(z.object({ name: z.string(), datatype: z.string(), shape: z.array(z.number()) })),
  /** Where the values came from: random, zero, or a data file (its name). Absent in reports stored before issue 27. */
  inputData: z.object({ kind: z.enum(["random", "zero", "file"]), name: z.string().nullable() }).optional(),
  /** The priority level every request carried (automatic runs: the model's lowest); null or absent: none. */
  priority: z.number().int().nullable().optional(),
  startedAt: z.string(),
  finishedAt: z.string(),
  totalRequests: z.number(),
  totalErrors: z.number(),
  /** Set on a report read from a perf_analyzer CSV (perf.importCsv): the file's name and the instances it measured. */
  imported: z.object({ fileName: z.string(), instanceCount: z.number() }).optional(),
  /** The step with the highest throughput. */
  best: z.object({ concurrency: z.number(), throughput: z.number(), latencyP99Us: z.number() }).nullable(),
  errorSamples: z.array(z.string()),
  steps: z.array(
    z.object({
      concurrency: z.number(),
      requests: z.number(),
      errors: z.number(),
      /** Whether the step's last windows agreed within the stability percentage; null for an imported CSV (it does not say). */
      stable: z.boolean().nullable(),
      throughputRequestsPerSec: z.number(),
      server: z
        .object({
          queueUs: z.number(),
          computeInputUs: z.number(),
          computeInferUs: z.number(),
          computeOutputUs: z.number(),
          batchSizes: z.record(z.string(), z.number()),
        })
        .nullable(),
    }),
  ),
});
export type PerfRunSummary = z.infer<typeof perfRunSummarySchema>;

export const reportRelations = {
  hardwareProfile: { select: { id: true, name: true } },
  createdBy: { select: { id: true, email: true } },
} as const;

/** The run's stored plan; null when the row has none. Throws INTERNAL naming the row when it does not parse. */
export function configOf(report: PerfReportRow): PerfRunConfig | null {
  return report.config === null
    ? null
    : parseJsonColumn(perfRunConfigSchema, report.config, { table: "PerfReport", column: "config", id: report.id });
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
    summary:
      row.summary === null
        ? null
        : parseJsonColumn(perfRunSummarySchema, row.summary, { table: "PerfReport", column: "summary", id: row.id }),
    hardwareProfile: row.hardwareProfile,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
    trigger: row.trigger,
    cause: row.cause,
    startedAt: row.startedAt,
    hostLoad:
      row.hostLoad === null
        ? null
        : parseJsonColumn(perfHostLoadSchema, row.hostLoad, { table: "PerfReport", column: "hostLoad", id: row.id }),
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
    stepTimes:
      sample.stepTimes === null
        ? null
        : parseJsonColumn(stepTimesSchema, sample.stepTimes, {
            table: "PerfSample",
            column: "stepTimes",
            id: sample.id,
          }),
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
    priority: report.config.priority ?? null,
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
