import type { ConfigSearchObjective } from "@operon/db";
import type { SweepStepResult } from "@operon/perf/concurrency-sweep";
import { z } from "zod";
import { AppError } from "../../app-error.js";
import { DEFAULT_SEARCH_BOUNDS, type SearchBounds } from "./search-strategy.js";

/** What a config search is asked for and the plan it stores (ConfigSearch.plan), checked against the defaults. */

/** One concurrency step of a candidate's sweep, as stored with the candidate. */
export interface SweepStep extends SweepStepResult {
  /** null when no request succeeded. */
  latencyP99Us: number | null;
  requests: number;
  errors: number;
}

export interface ConfigSearchInput {
  model: string;
  objective: ConfigSearchObjective;
  p99BudgetMs: number;
  bounds?: Partial<SearchBounds> | undefined;
  measurement?: Partial<MeasurementPlan> | undefined;
}

export interface MeasurementPlan {
  /** The sweep goes 1, 2, 4, … up to this. */
  maxConcurrency: number;
  measurementIntervalMs: number;
  /** Windows per step at most (perf_analyzer's max trials). */
  maxTrials: number;
}

export const DEFAULT_MEASUREMENT: MeasurementPlan = { maxConcurrency: 8, measurementIntervalMs: 1000, maxTrials: 3 };

/** What ConfigSearch.plan holds. */
export interface ConfigSearchPlan {
  bounds: SearchBounds;
  measurement: MeasurementPlan;
}

/** ConfigSearch.plan as create() stores it (planOf's result), checked when read back. */
export const configSearchPlanSchema = z.object({
  bounds: z.object({
    maxInstances: z.number(),
    maxBatchSize: z.number(),
    queueDelaysUs: z.array(z.number()),
    minGainPercent: z.number(),
    maxCandidates: z.number(),
    maxDurationMs: z.number(),
  }),
  measurement: z.object({ maxConcurrency: z.number(), measurementIntervalMs: z.number(), maxTrials: z.number() }),
}) satisfies z.ZodType<ConfigSearchPlan>;

/** ConfigSearch.hardware: the default hardware profile's pricing when the search started. */
export const searchHardwareSchema = z.object({
  name: z.string(),
  kind: z.enum(["CPU", "GPU"]),
  cpuCores: z.number().nullable(),
  gpuCount: z.number(),
  costPerHour: z.number(),
  currency: z.string(),
});
export type SearchHardware = z.infer<typeof searchHardwareSchema>;

/** ConfigSearchCandidate.steps: the candidate's sweep, as the execution stores it. */
export const sweepStepsSchema = z.array(
  z.object({
    concurrency: z.number(),
    throughput: z.number(),
    latencyP99Us: z.number().nullable(),
    requests: z.number(),
    errors: z.number(),
  }),
) satisfies z.ZodType<SweepStep[]>;

/** ConfigSearchCandidate.dynamicBatching: the candidate's batching (null column = none). */
export const candidateBatchingSchema = z.object({
  preferredBatchSizes: z.array(z.number()),
  maxQueueDelayUs: z.number(),
});

/** ConfigSearchCandidate.config: the candidate's whole model config (Triton's JSON), checked to be one. */
export const candidateConfigSchema = z.record(z.string(), z.unknown());

/** Bounds and measurement plan from the input over the defaults, checked. */
export function planOf(input: ConfigSearchInput): ConfigSearchPlan {
  const plan: ConfigSearchPlan = {
    bounds: { ...DEFAULT_SEARCH_BOUNDS, ...stripUndefined(input.bounds ?? {}) },
    measurement: { ...DEFAULT_MEASUREMENT, ...stripUndefined(input.measurement ?? {}) },
  };
  if (!(input.p99BudgetMs > 0))
    throw new AppError("VALIDATION_FAILED", "the p99 budget must be above 0 ms", {
      fieldErrors: [{ path: "p99BudgetMs", message: "above 0" }],
    });
  plan.bounds.queueDelaysUs = [...new Set(plan.bounds.queueDelaysUs)].sort((a, b) => a - b);
  return plan;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
