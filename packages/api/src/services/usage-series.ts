/**
 * Usage samples grouped into time buckets for the console's charts. A
 * sample belongs to the bucket its interval starts in. Within a bucket, per
 * model:
 *
 * - rates (requests/s, errors/s) = Σ count / the seconds the samples cover
 *   (so a bucket the sampler only partly covered is not diluted);
 * - latency quantiles and queue time: the samples' values weighted by their
 *   requests (an approximation: quantiles of different windows do not add);
 * - instances, CPU utilization, memory: time-weighted means over the covered
 *   seconds, the versions of a model added up.
 *
 * "overall" adds the models' rates, instances, CPU and memory, and weights
 * latencies over all requests. A bucket without samples has null rates
 * (a gap in the chart, not a zero).
 */
export interface SeriesSample {
  model: string;
  at: Date;
  intervalSeconds: number;
  requests: number;
  errors: number;
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  latencyP99Ms: number | null;
  queueTimeMs: number | null;
  instanceCount: number;
  cpuUtilization: number | null;
  memoryBytes: number | null;
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

interface ModelBucket {
  covered: Map<number, number>;
  requests: number;
  errors: number;
  weighted: Record<"latencyP50Ms" | "latencyP95Ms" | "latencyP99Ms" | "queueTimeMs", { sum: number; weight: number }>;
  timeWeighted: Record<"instanceCount" | "cpuUtilization" | "memoryBytes", { sum: number; known: boolean }>;
}

function emptyBucket(): ModelBucket {
  const pair = () => ({ sum: 0, weight: 0 });
  const known = () => ({ sum: 0, known: false });
  return {
    covered: new Map(),
    requests: 0,
    errors: 0,
    weighted: { latencyP50Ms: pair(), latencyP95Ms: pair(), latencyP99Ms: pair(), queueTimeMs: pair() },
    timeWeighted: { instanceCount: known(), cpuUtilization: known(), memoryBytes: known() },
  };
}

function coveredSeconds(bucket: ModelBucket): number {
  return [...bucket.covered.values()].reduce((sum, seconds) => sum + seconds, 0);
}

function weightedMean(pair: { sum: number; weight: number }): number | null {
  return pair.weight > 0 ? pair.sum / pair.weight : null;
}

function pointOf(at: Date, bucket: ModelBucket): SeriesPoint {
  const seconds = coveredSeconds(bucket);
  const perSec = (count: number): number | null => (seconds > 0 ? count / seconds : null);
  const timeMean = (key: keyof ModelBucket["timeWeighted"]): number | null =>
    seconds > 0 && bucket.timeWeighted[key].known ? bucket.timeWeighted[key].sum / seconds : null;
  return {
    at,
    requests: bucket.requests,
    errors: bucket.errors,
    requestsPerSec: perSec(bucket.requests),
    errorsPerSec: perSec(bucket.errors),
    errorRate: bucket.requests > 0 ? bucket.errors / bucket.requests : null,
    latencyP50Ms: weightedMean(bucket.weighted.latencyP50Ms),
    latencyP95Ms: weightedMean(bucket.weighted.latencyP95Ms),
    latencyP99Ms: weightedMean(bucket.weighted.latencyP99Ms),
    queueMs: weightedMean(bucket.weighted.queueTimeMs),
    instances: timeMean("instanceCount"),
    cpuUtilization: timeMean("cpuUtilization"),
    memoryBytes: timeMean("memoryBytes"),
  };
}

function addSample(bucket: ModelBucket, sample: SeriesSample): void {
  const start = sample.at.getTime();
  bucket.covered.set(start, Math.max(bucket.covered.get(start) ?? 0, sample.intervalSeconds));
  bucket.requests += sample.requests;
  bucket.errors += sample.errors;
  for (const key of ["latencyP50Ms", "latencyP95Ms", "latencyP99Ms", "queueTimeMs"] as const) {
    const value = sample[key];
    if (value !== null && sample.requests > 0) {
      bucket.weighted[key].sum += value * sample.requests;
      bucket.weighted[key].weight += sample.requests;
    }
  }
  for (const key of ["instanceCount", "cpuUtilization", "memoryBytes"] as const) {
    const value = sample[key];
    if (value !== null) {
      bucket.timeWeighted[key].sum += value * sample.intervalSeconds;
      bucket.timeWeighted[key].known = true;
    }
  }
}

export function bucketUsage(samples: readonly SeriesSample[], from: Date, to: Date, bucketSecs: number): UsageSeries {
  const bucketMs = bucketSecs * 1000;
  const count = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / bucketMs));
  const starts = Array.from({ length: count }, (_, index) => new Date(from.getTime() + index * bucketMs));
  const perModel = new Map<string, ModelBucket[]>();
  const overallWeighted: ModelBucket[] = starts.map(() => emptyBucket());
  for (const sample of samples) {
    const index = Math.floor((sample.at.getTime() - from.getTime()) / bucketMs);
    if (index < 0 || index >= count) continue;
    const buckets = perModel.get(sample.model) ?? starts.map(() => emptyBucket());
    perModel.set(sample.model, buckets);
    addSample(buckets[index]!, sample);
    addSample(overallWeighted[index]!, sample);
  }
  const models = [...perModel.keys()].sort().map((model) => ({ model, points: perModel.get(model)!.map((bucket, index) => pointOf(starts[index]!, bucket)) }));
  const overall = starts.map((at, index) => {
    // Latencies and counts over all samples; rates and capacity figures are the sum of the models'.
    const base = pointOf(at, overallWeighted[index]!);
    const sum = (key: "requestsPerSec" | "errorsPerSec" | "instances" | "cpuUtilization" | "memoryBytes"): number | null => {
      const values = models.map((model) => model.points[index]![key]).filter((value): value is number => value !== null);
      return values.length > 0 ? values.reduce((total, value) => total + value, 0) : null;
    };
    return {
      ...base,
      requestsPerSec: sum("requestsPerSec"),
      errorsPerSec: sum("errorsPerSec"),
      instances: sum("instances"),
      cpuUtilization: sum("cpuUtilization"),
      memoryBytes: sum("memoryBytes"),
    };
  });
  return { from, to, bucketSecs, overall, models };
}
