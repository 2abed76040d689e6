import type { WorkersResponse } from "@operon/protocol/admin";
import type { PrismaClient } from "@operon/db";
import { AppError } from "../../app-error.js";
import { computeCosts, gpuPriceShareOf, queryCostTotals, type CostReport } from "../costs/cost-model.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { latencyQuantiles, modelVersionKey, parsePrometheusText, type LatencyQuantiles } from "./prometheus-text.js";
import {
  defaultBucketSecs,
  MAX_SERIES_POINTS,
  queryBucketTotals,
  seriesFromTotals,
  type UsageSeries,
} from "./usage-series.js";
import type { Logger } from "@operon/protocol/logger";

/**
 * What the metrics router answers: charts from the stored usage samples
 * (usage-series.ts), costs (cost-model.ts), and the gateway's live numbers.
 */

/** Charts over [from, to): overall and per model (one model when `model` is given). */
export async function usageTimeSeries(
  prisma: PrismaClient,
  input: { from: Date; to: Date; model?: string | undefined; bucketSecs?: number | undefined },
): Promise<UsageSeries> {
  checkRange(input.from, input.to);
  const bucketSecs = input.bucketSecs ?? defaultBucketSecs(input.from, input.to);
  const points = Math.ceil((input.to.getTime() - input.from.getTime()) / 1000 / bucketSecs);
  if (points > MAX_SERIES_POINTS) {
    throw new AppError(
      "VALIDATION_FAILED",
      `${bucketSecs} s buckets give ${points} points over this range; at most ${MAX_SERIES_POINTS}: choose larger buckets`,
      {
        fieldErrors: [
          {
            path: "bucketSecs",
            message: `at least ${Math.ceil((input.to.getTime() - input.from.getTime()) / 1000 / MAX_SERIES_POINTS)}`,
          },
        ],
      },
    );
  }
  const totals = await queryBucketTotals(prisma, { from: input.from, to: input.to, model: input.model, bucketSecs });
  return seriesFromTotals(totals, input.from, input.to, bucketSecs);
}

/** Costs over [from, to) per model and hardware profile; see cost-model.ts for the model. */
export async function usageCosts(
  prisma: PrismaClient,
  input: { from: Date; to: Date },
): Promise<CostReport & { from: Date; to: Date }> {
  checkRange(input.from, input.to);
  const totals = await queryCostTotals(prisma, input);
  const profileIds = [
    ...new Set(totals.usage.map((usage) => usage.profileId).filter((id): id is string => id !== null)),
  ];
  // With today's default: it costs the samples taken without a profile (cost-model.ts).
  const profiles = await prisma.hardwareProfile.findMany({
    where: { OR: [{ id: { in: profileIds } }, { isDefault: true }] },
  });
  const report = computeCosts(
    totals,
    profiles.map((profile) => ({
      id: profile.id,
      name: profile.name,
      costPerHour: Number(profile.costPerHour),
      currency: profile.currency,
      gpuPriceShare: gpuPriceShareOf(profile),
    })),
    profiles.find((profile) => profile.isDefault)?.id ?? null,
  );
  return { from: input.from, to: input.to, ...report };
}

export interface CurrentModelUsage {
  model: string;
  version: string;
  /** An operator (registered DAG or ensemble) rather than a model with workers. */
  isOperator: boolean;
  /** Since the version was loaded. */
  requests: number;
  errors: number;
  inferences: number;
  executions: number;
  lastInferenceAt: Date | null;
  avgRequestUs: number | null;
  avgQueueUs: number | null;
  avgComputeInferUs: number | null;
  /** From the gateway's request latency summary (its recent window); null when it has none. */
  latencyUs: { p50: number | null; p90: number | null; p95: number | null; p99: number | null };
  instances: number | null;
  /** Instances on gateway threads (ONNX Runtime, vetted native backends): their memory is the gateway's. */
  threadInstances: number | null;
  readyInstances: number | null;
  restarts: number | null;
  cpuSeconds: number | null;
  /** Resident memory of the version's worker processes; null when all its instances are gateway threads. */
  memoryBytes: number | null;
  /** The last usage sample of the version: rates over its interval. */
  lastSample: {
    at: Date;
    intervalSeconds: number;
    requestsPerSec: number;
    errorsPerSec: number;
    cpuUtilization: number | null;
  } | null;
}

export interface CurrentUsage {
  readAt: Date;
  models: CurrentModelUsage[];
  hostCpuCores: number | null;
  gateway: WorkersResponse["gateway"] | null;
  /** Parts the gateway could not give (workers, metrics), named for the console. */
  unavailable: string[];
}

/** The gateway's live per-model numbers (statistics, workers, latency summaries) with each version's last sample. */
export async function currentUsage(
  prisma: PrismaClient,
  gateway: GatewayClient,
  logger: Logger,
): Promise<CurrentUsage> {
  const [stats, operators] = await Promise.all([gateway.statistics(), gateway.listOperators()]);
  const unavailable: string[] = [];
  const [workers, quantiles] = await Promise.all([
    gateway.workers().catch((error: unknown) => {
      logger.warn({ err: error }, "could not read the gateway's workers");
      unavailable.push(`workers: ${(error as Error).message}`);
      return undefined;
    }),
    gateway
      .metricsText()
      .then((text): LatencyQuantiles => (text === undefined ? new Map() : latencyQuantiles(parsePrometheusText(text))))
      .catch((error: unknown) => {
        logger.warn({ err: error }, "could not read the gateway's metrics");
        unavailable.push(`metrics: ${(error as Error).message}`);
        return new Map() as LatencyQuantiles;
      }),
  ]);
  const operatorNames = new Set(operators.map((operator) => operator.name));
  const recent = await prisma.usageSample.findMany({
    where: {
      at: { gte: new Date(Date.now() - 3_600_000) },
      model: { name: { in: [...new Set(stats.map((entry) => entry.name))] } },
    },
    orderBy: { at: "desc" },
    select: {
      at: true,
      intervalSeconds: true,
      requests: true,
      errors: true,
      cpuUtilization: true,
      modelVersion: true,
      model: { select: { name: true } },
    },
  });
  const mean = (ns: number, count: number): number | null => (count > 0 ? Math.round(ns / count / 100) / 10 : null);
  const models = stats.map((entry): CurrentModelUsage => {
    const key = modelVersionKey(entry.name, entry.version);
    const own = workers?.workers.filter((worker) => worker.model === entry.name && worker.version === entry.version);
    const request = quantiles.get(key)?.request ?? {};
    const quantile = (q: number): number | null =>
      Object.entries(request).find(([label]) => Number(label) === q)?.[1] ?? null;
    const last = lastSampleOf(
      recent.filter(
        (sample) => sample.model.name === entry.name && String(sample.modelVersion ?? "") === entry.version,
      ),
    );
    const inference = entry.inference_stats;
    const sum = (values: Array<number | null>): number | null =>
      values.some((value) => value !== null) ? values.reduce<number>((total, value) => total + (value ?? 0), 0) : null;
    return {
      model: entry.name,
      version: entry.version,
      isOperator: operatorNames.has(entry.name),
      requests: inference.success.count + inference.fail.count,
      errors: inference.fail.count,
      inferences: entry.inference_count,
      executions: entry.execution_count,
      lastInferenceAt: entry.last_inference > 0 ? new Date(entry.last_inference) : null,
      avgRequestUs: mean(inference.success.ns, inference.success.count),
      avgQueueUs: mean(inference.queue.ns, inference.queue.count),
      avgComputeInferUs: mean(inference.compute_infer.ns, inference.compute_infer.count),
      latencyUs: { p50: quantile(0.5), p90: quantile(0.9), p95: quantile(0.95), p99: quantile(0.99) },
      instances: own?.length ?? null,
      threadInstances: own?.filter((worker) => worker.isolation !== "process").length ?? null,
      readyInstances: own?.filter((worker) => worker.state === "READY").length ?? null,
      restarts: own !== undefined ? own.reduce((total, worker) => total + worker.restarts, 0) : null,
      cpuSeconds: own !== undefined ? sum(own.map((worker) => worker.cpuSeconds)) : null,
      memoryBytes: own !== undefined ? sum(own.map((worker) => worker.rssBytes)) : null,
      lastSample:
        last === undefined
          ? null
          : {
              at: last.at,
              intervalSeconds: last.intervalSeconds,
              requestsPerSec: last.requests / last.intervalSeconds,
              errorsPerSec: last.errors / last.intervalSeconds,
              cpuUtilization: last.cpuUtilization,
            },
    };
  });
  return {
    readAt: new Date(),
    models,
    hostCpuCores: workers?.hostCpuCores ?? null,
    gateway: workers?.gateway ?? null,
    unavailable,
  };
}

interface RecentSample {
  at: Date;
  intervalSeconds: number;
  requests: number;
  errors: number;
  cpuUtilization: number | null;
}

/**
 * The latest sample of one model version, newest first in `samples`, summed over the gateways that
 * sampled it at that start (a cluster's gateways share each sample's start): requests, errors and CPU
 * add up, the interval is the longest. Undefined without samples.
 */
export function lastSampleOf(samples: readonly RecentSample[]): RecentSample | undefined {
  const first = samples[0];
  if (first === undefined) return undefined;
  const same = samples.filter((sample) => sample.at.getTime() === first.at.getTime());
  const cpu = same.filter((sample) => sample.cpuUtilization !== null);
  return {
    at: first.at,
    intervalSeconds: Math.max(...same.map((sample) => sample.intervalSeconds)),
    requests: same.reduce((total, sample) => total + sample.requests, 0),
    errors: same.reduce((total, sample) => total + sample.errors, 0),
    cpuUtilization: cpu.length > 0 ? cpu.reduce((total, sample) => total + sample.cpuUtilization!, 0) : null,
  };
}

const MAX_RANGE_MS = 400 * 24 * 3_600_000;

function checkRange(from: Date, to: Date): void {
  if (!(to.getTime() > from.getTime())) {
    throw new AppError("VALIDATION_FAILED", "`to` must be after `from`", {
      fieldErrors: [{ path: "to", message: "must be after from" }],
    });
  }
  if (to.getTime() - from.getTime() > MAX_RANGE_MS) {
    throw new AppError("VALIDATION_FAILED", "the range may span at most 400 days", {
      fieldErrors: [{ path: "from", message: "at most 400 days before to" }],
    });
  }
}
