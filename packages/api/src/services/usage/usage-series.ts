import type { PrismaClient } from "@operon/db";

/**
 * Usage samples grouped into time buckets for the console's charts. A
 * sample belongs to the bucket its interval starts in. Within a bucket, per
 * model:
 *
 * - rates (requests/s, errors/s) = Σ count / the seconds the samples cover
 *   (so a bucket the sampler only partly covered is not diluted);
 * - latency quantiles and queue time: the samples' values weighted by their
 *   requests (an approximation: quantiles of different windows do not add);
 * - instances, CPU and GPU utilization, memory and GPU memory: time-weighted
 *   means over the covered seconds, the versions of a model added up.
 *
 * "overall" adds the models' rates, instances, CPU, GPU and both memories, and weights
 * latencies over all requests. A bucket without samples has null rates
 * (a gap in the chart, not a zero).
 */
/**
 * One model's samples in one bucket, summed by the database (queryBucketTotals):
 * the inputs of the rules above. `*Weighted` are Σ value × requests over
 * samples with requests and a value, `*Weight` the requests they cover;
 * `*TimeSum` are Σ value × intervalSeconds over samples with a value,
 * `*Known` whether any had one.
 */
export interface BucketTotals {
  model: string;
  /** 0-based bucket from `from`. */
  bucket: number;
  /** Σ over the distinct sample starts of the longest interval starting there (versions share a start). */
  coveredSecs: number;
  requests: number;
  errors: number;
  latencyP50Weighted: number;
  latencyP50Weight: number;
  latencyP95Weighted: number;
  latencyP95Weight: number;
  latencyP99Weighted: number;
  latencyP99Weight: number;
  queueWeighted: number;
  queueWeight: number;
  instancesTimeSum: number;
  instancesKnown: boolean;
  cpuTimeSum: number;
  cpuKnown: boolean;
  memoryTimeSum: number;
  memoryKnown: boolean;
  gpuTimeSum: number;
  gpuKnown: boolean;
  gpuMemoryTimeSum: number;
  gpuMemoryKnown: boolean;
}

export interface SeriesPoint {
  /** Start of the bucket. */
  at: Date;
  requests: number;
  errors: number;
  requestsPerSec: number | null;
  errorsPerSec: number | null;
  /** errors / requests; null without requests. */
  errorRate: number | null;
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  latencyP99Ms: number | null;
  queueMs: number | null;
  instances: number | null;
  /** Share of the host's CPU capacity (0..1). */
  cpuUtilization: number | null;
  memoryBytes: number | null;
  /** Share of the host's GPU capacity (0..1) attributed to the model (usage-sampler.ts); null without GPU readings. */
  gpuUtilization: number | null;
  gpuMemoryBytes: number | null;
}

export interface UsageSeries {
  from: Date;
  to: Date;
  bucketSecs: number;
  overall: SeriesPoint[];
  models: Array<{ model: string; points: SeriesPoint[] }>;
}

/** The most points one series may have. */
export const MAX_SERIES_POINTS = 1000;
const NICE_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800];

/** The smallest "round" bucket that gives at most ~120 points over the range. */
export function defaultBucketSecs(from: Date, to: Date): number {
  const seconds = Math.max(1, (to.getTime() - from.getTime()) / 1000);
  return NICE_BUCKETS.find((bucket) => seconds / bucket <= 120) ?? NICE_BUCKETS[NICE_BUCKETS.length - 1]!;
}

type WeightedKey = "latencyP50" | "latencyP95" | "latencyP99" | "queue";
const WEIGHTED_KEYS: readonly WeightedKey[] = ["latencyP50", "latencyP95", "latencyP99", "queue"];

/** The empty bucket: no samples (a gap in the chart). */
function emptyTotals(model: string, bucket: number): BucketTotals {
  return {
    model,
    bucket,
    coveredSecs: 0,
    requests: 0,
    errors: 0,
    latencyP50Weighted: 0,
    latencyP50Weight: 0,
    latencyP95Weighted: 0,
    latencyP95Weight: 0,
    latencyP99Weighted: 0,
    latencyP99Weight: 0,
    queueWeighted: 0,
    queueWeight: 0,
    instancesTimeSum: 0,
    instancesKnown: false,
    cpuTimeSum: 0,
    cpuKnown: false,
    memoryTimeSum: 0,
    memoryKnown: false,
    gpuTimeSum: 0,
    gpuKnown: false,
    gpuMemoryTimeSum: 0,
    gpuMemoryKnown: false,
  };
}

function weightedMean(totals: BucketTotals, key: WeightedKey): number | null {
  const weight = totals[`${key}Weight`];
  return weight > 0 ? totals[`${key}Weighted`] / weight : null;
}

function pointOf(at: Date, totals: BucketTotals): SeriesPoint {
  const seconds = totals.coveredSecs;
  const perSec = (count: number): number | null => (seconds > 0 ? count / seconds : null);
  const timeMean = (sum: number, known: boolean): number | null => (seconds > 0 && known ? sum / seconds : null);
  return {
    at,
    requests: totals.requests,
    errors: totals.errors,
    requestsPerSec: perSec(totals.requests),
    errorsPerSec: perSec(totals.errors),
    errorRate: totals.requests > 0 ? totals.errors / totals.requests : null,
    latencyP50Ms: weightedMean(totals, "latencyP50"),
    latencyP95Ms: weightedMean(totals, "latencyP95"),
    latencyP99Ms: weightedMean(totals, "latencyP99"),
    queueMs: weightedMean(totals, "queue"),
    instances: timeMean(totals.instancesTimeSum, totals.instancesKnown),
    cpuUtilization: timeMean(totals.cpuTimeSum, totals.cpuKnown),
    memoryBytes: timeMean(totals.memoryTimeSum, totals.memoryKnown),
    gpuUtilization: timeMean(totals.gpuTimeSum, totals.gpuKnown),
    gpuMemoryBytes: timeMean(totals.gpuMemoryTimeSum, totals.gpuMemoryKnown),
  };
}

/** Adds the counts and latency weights of `from` into `into` (for "overall"). */
function addCountsAndLatencies(into: BucketTotals, from: BucketTotals): void {
  into.requests += from.requests;
  into.errors += from.errors;
  for (const key of WEIGHTED_KEYS) {
    into[`${key}Weighted`] += from[`${key}Weighted`];
    into[`${key}Weight`] += from[`${key}Weight`];
  }
}

/** The chart series over [from, to) in `bucketSecs` buckets, from the database's per-model bucket totals. */
export function seriesFromTotals(
  totals: readonly BucketTotals[],
  from: Date,
  to: Date,
  bucketSecs: number,
): UsageSeries {
  const bucketMs = bucketSecs * 1000;
  const count = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / bucketMs));
  const starts = Array.from({ length: count }, (_, index) => new Date(from.getTime() + index * bucketMs));
  const perModel = new Map<string, BucketTotals[]>();
  const overall = starts.map((_, index) => emptyTotals("", index));
  for (const entry of totals) {
    if (entry.bucket < 0 || entry.bucket >= count) continue;
    const buckets = perModel.get(entry.model) ?? starts.map((_, index) => emptyTotals(entry.model, index));
    perModel.set(entry.model, buckets);
    buckets[entry.bucket] = entry;
    addCountsAndLatencies(overall[entry.bucket]!, entry);
  }
  const models = [...perModel.keys()]
    .sort()
    .map((model) => ({ model, points: perModel.get(model)!.map((bucket, index) => pointOf(starts[index]!, bucket)) }));
  const overallPoints = starts.map((at, index) => {
    // Latencies and counts over all requests; rates and capacity figures are the sum of the models'.
    const base = pointOf(at, overall[index]!);
    const sum = (
      key:
        | "requestsPerSec"
        | "errorsPerSec"
        | "instances"
        | "cpuUtilization"
        | "memoryBytes"
        | "gpuUtilization"
        | "gpuMemoryBytes",
    ): number | null => {
      const values = models
        .map((model) => model.points[index]![key])
        .filter((value): value is number => value !== null);
      return values.length > 0 ? values.reduce((total, value) => total + value, 0) : null;
    };
    return {
      ...base,
      requestsPerSec: sum("requestsPerSec"),
      errorsPerSec: sum("errorsPerSec"),
      instances: sum("instances"),
      cpuUtilization: sum("cpuUtilization"),
      memoryBytes: sum("memoryBytes"),
      gpuUtilization: sum("gpuUtilization"),
      gpuMemoryBytes: sum("gpuMemoryBytes"),
    };
  });
  return { from, to, bucketSecs, overall: overallPoints, models };
}

/**
 * Sums the samples of [from, to) per model and bucket in the database, so a
 * 30-day chart reads a few hundred rows, not every 15 s sample. Two levels:
 * per model and sample start first (a model's versions share a start, and
 * the covered time counts each start once), then per bucket.
 */
export async function queryBucketTotals(
  prisma: PrismaClient,
  range: { from: Date; to: Date; model?: string | undefined; bucketSecs: number },
): Promise<BucketTotals[]> {
  const fromMs = range.from.getTime();
  const bucketMs = range.bucketSecs * 1000;
  const rows = await prisma.$queryRaw<BucketTotalsRow[]>`
    WITH per_start AS (
      SELECT m."name" AS model,
        s."at",
        max(s."intervalSeconds") AS seconds,
        sum(s."requests") AS requests,
        sum(s."errors") AS errors,
        sum(s."latencyP50Ms" * s."requests") FILTER (WHERE s."latencyP50Ms" IS NOT NULL) AS p50_weighted,
        sum(s."requests") FILTER (WHERE s."latencyP50Ms" IS NOT NULL) AS p50_weight,
        sum(s."latencyP95Ms" * s."requests") FILTER (WHERE s."latencyP95Ms" IS NOT NULL) AS p95_weighted,
        sum(s."requests") FILTER (WHERE s."latencyP95Ms" IS NOT NULL) AS p95_weight,
        sum(s."latencyP99Ms" * s."requests") FILTER (WHERE s."latencyP99Ms" IS NOT NULL) AS p99_weighted,
        sum(s."requests") FILTER (WHERE s."latencyP99Ms" IS NOT NULL) AS p99_weight,
        sum(s."queueTimeMs" * s."requests") FILTER (WHERE s."queueTimeMs" IS NOT NULL) AS queue_weighted,
        sum(s."requests") FILTER (WHERE s."queueTimeMs" IS NOT NULL) AS queue_weight,
        sum(s."instanceCount" * s."intervalSeconds") AS instances_time,
        sum(s."cpuUtilization" * s."intervalSeconds") AS cpu_time,
        count(s."cpuUtilization") AS cpu_known,
        sum(s."memoryBytes"::float8 * s."intervalSeconds") AS memory_time,
        count(s."memoryBytes") AS memory_known,
        sum(s."gpuUtilization" * s."intervalSeconds") AS gpu_time,
        count(s."gpuUtilization") AS gpu_known,
        sum(s."gpuMemoryBytes"::float8 * s."intervalSeconds") AS gpu_memory_time,
        count(s."gpuMemoryBytes") AS gpu_memory_known
      FROM "UsageSample" s
      JOIN "Model" m ON m."id" = s."modelId"
      WHERE s."at" >= ${range.from} AND s."at" < ${range.to}
        AND (${range.model ?? null}::text IS NULL OR m."name" = ${range.model ?? null}::text)
      GROUP BY m."name", s."at"
    )
    SELECT model,
      floor((extract(epoch FROM "at") * 1000 - ${fromMs}::float8) / ${bucketMs}::float8)::int AS bucket,
      sum(seconds)::float8 AS covered_seconds,
      sum(requests)::float8 AS requests,
      sum(errors)::float8 AS errors,
      coalesce(sum(p50_weighted), 0)::float8 AS p50_weighted,
      coalesce(sum(p50_weight), 0)::float8 AS p50_weight,
      coalesce(sum(p95_weighted), 0)::float8 AS p95_weighted,
      coalesce(sum(p95_weight), 0)::float8 AS p95_weight,
      coalesce(sum(p99_weighted), 0)::float8 AS p99_weighted,
      coalesce(sum(p99_weight), 0)::float8 AS p99_weight,
      coalesce(sum(queue_weighted), 0)::float8 AS queue_weighted,
      coalesce(sum(queue_weight), 0)::float8 AS queue_weight,
      coalesce(sum(instances_time), 0)::float8 AS instances_time,
      coalesce(sum(cpu_time), 0)::float8 AS cpu_time,
      sum(cpu_known)::float8 AS cpu_known,
      coalesce(sum(memory_time), 0)::float8 AS memory_time,
      sum(memory_known)::float8 AS memory_known,
      coalesce(sum(gpu_time), 0)::float8 AS gpu_time,
      sum(gpu_known)::float8 AS gpu_known,
      coalesce(sum(gpu_memory_time), 0)::float8 AS gpu_memory_time,
      sum(gpu_memory_known)::float8 AS gpu_memory_known
    FROM per_start
    GROUP BY model, 2
    ORDER BY model, 2`;
  return rows.map((row) => ({
    model: row.model,
    bucket: Number(row.bucket),
    coveredSecs: Number(row.covered_seconds),
    requests: Number(row.requests),
    errors: Number(row.errors),
    latencyP50Weighted: Number(row.p50_weighted),
    latencyP50Weight: Number(row.p50_weight),
    latencyP95Weighted: Number(row.p95_weighted),
    latencyP95Weight: Number(row.p95_weight),
    latencyP99Weighted: Number(row.p99_weighted),
    latencyP99Weight: Number(row.p99_weight),
    queueWeighted: Number(row.queue_weighted),
    queueWeight: Number(row.queue_weight),
    instancesTimeSum: Number(row.instances_time),
    // instanceCount is never null: every sample knows it.
    instancesKnown: true,
    cpuTimeSum: Number(row.cpu_time),
    cpuKnown: Number(row.cpu_known) > 0,
    memoryTimeSum: Number(row.memory_time),
    memoryKnown: Number(row.memory_known) > 0,
    gpuTimeSum: Number(row.gpu_time),
    gpuKnown: Number(row.gpu_known) > 0,
    gpuMemoryTimeSum: Number(row.gpu_memory_time),
    gpuMemoryKnown: Number(row.gpu_memory_known) > 0,
  }));
}

interface BucketTotalsRow {
  model: string;
  bucket: number;
  covered_seconds: number;
  requests: number;
  errors: number;
  p50_weighted: number;
  p50_weight: number;
  p95_weighted: number;
  p95_weight: number;
  p99_weighted: number;
  p99_weight: number;
  queue_weighted: number;
  queue_weight: number;
  instances_time: number;
  cpu_time: number;
  cpu_known: number;
  memory_time: number;
  memory_known: number;
  gpu_time: number;
  gpu_known: number;
  gpu_memory_time: number;
  gpu_memory_known: number;
}
