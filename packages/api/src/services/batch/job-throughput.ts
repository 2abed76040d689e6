import type { PrismaClient } from "@operon/db";
import { defaultBucketSecs, MAX_SERIES_POINTS } from "../usage/usage-series.js";

/**
 * A job's throughput over its run beside its target's online traffic: the
 * Jobs page's chart (issue 24).
 *
 * - Job rows/s: the rows of the job's throughput samples
 *   (job-throughput-recorder.ts) in each bucket, over the time those samples
 *   cover (the recorder writes every interval of a run, idle ones too). Not
 *   over the bucket's seconds: a job that ran 3 s of a 5 s bucket (one that
 *   ends within a sample period, whose one sample sets a bucket longer than
 *   the run) ran at its rows over 3 s. A bucket without samples of the job
 *   (before it started, while paused) is 0, not a gap.
 * - Online requests/s: the target's usage samples (UsageSample rows of the
 *   model, OperatorUsageSample rows of the operator; usage-sampler.ts) count
 *   every request the target answered, batch jobs' included; online is that
 *   minus the requests of every batch job on the same target in the bucket,
 *   over the seconds the usage samples cover (null: not sampled, a gap). The
 *   two samplers read at different moments, so a bucket may show a little
 *   online traffic that was the job's, or none where there was some; it is
 *   never below 0.
 *
 * A sample belongs to the bucket its interval starts in (as in
 * usage-series.ts), so buckets are never shorter than the longest sample
 * interval in the window: a shorter bucket would alternate between a whole
 * sample and none.
 */
export interface JobThroughputPoint {
  /** Start of the bucket. */
  at: Date;
  jobRowsPerSec: number;
  onlineRequestsPerSec: number | null;
}

export interface JobThroughput {
  from: Date;
  to: Date;
  bucketSecs: number;
  points: JobThroughputPoint[];
}

/** Buckets of one bucket's sums: the inputs of `throughputSeries`. */
export interface ThroughputBucketTotals {
  bucket: number;
  jobRows: number;
  /** The seconds this job's samples in the bucket cover. */
  jobCoveredSecs: number;
  /** Requests of every batch job on the target in the bucket (this one's included). */
  allJobsRequests: number;
  /** The target's requests, and the seconds its usage samples cover (0: not sampled). */
  targetRequests: number;
  targetCoveredSecs: number;
}

/** Bucket `bucket`'s totals before any sample is added. */
export function emptyBucketTotals(bucket: number): ThroughputBucketTotals {
  return { bucket, jobRows: 0, jobCoveredSecs: 0, allJobsRequests: 0, targetRequests: 0, targetCoveredSecs: 0 };
}

const NICE_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800];

/** The smallest round bucket of at least `minSecs` giving at most ~120 points over the range. */
export function jobBucketSecs(from: Date, to: Date, minSecs: number): number {
  const wanted = Math.max(defaultBucketSecs(from, to), minSecs);
  const seconds = Math.max(1, (to.getTime() - from.getTime()) / 1000);
  const floor = Math.ceil(seconds / MAX_SERIES_POINTS);
  return NICE_BUCKETS.find((bucket) => bucket >= wanted && bucket >= floor) ?? NICE_BUCKETS[NICE_BUCKETS.length - 1]!;
}

export function throughputSeries(
  from: Date,
  to: Date,
  bucketSecs: number,
  totals: readonly ThroughputBucketTotals[],
): JobThroughputPoint[] {
  const bucketMs = bucketSecs * 1000;
  const count = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / bucketMs));
  const byBucket = new Map(totals.map((entry) => [entry.bucket, entry]));
  return Array.from({ length: count }, (_, index) => {
    const start = from.getTime() + index * bucketMs;
    const entry = byBucket.get(index);
    const online =
      entry !== undefined && entry.targetCoveredSecs > 0
        ? Math.max(0, entry.targetRequests - entry.allJobsRequests) / entry.targetCoveredSecs
        : null;
    const job = entry !== undefined && entry.jobCoveredSecs > 0 ? entry.jobRows / entry.jobCoveredSecs : 0;
    return { at: new Date(start), jobRowsPerSec: job, onlineRequestsPerSec: online };
  });
}

export interface JobWindow {
  id: string;
  targetKind: "MODEL" | "OPERATOR";
  targetName: string;
  targetVersion: string | null;
  /** The run: from its first start to its end (or now, or its last change while paused). */
  from: Date;
  to: Date;
}

/**
 * The chart's window: the job's run (from its first start to its end; to now
 * while it runs, to its last change while it is paused, queued or failed),
 * with a tenth of it (at least 10 s) before the start, so the online traffic
 * the job started into shows. Null before the job first ran.
 *
 * A job that is not running ends with the bucket of its last rows: the
 * window ends just past the start of its last throughput sample with rows
 * (`lastWorkAt`), when that is before the job's end. Why: the time after
 * its last rows (the requests in flight drained, the result merged, the
 * recorder's last sample, of no rows) is no throughput, and alone in the
 * window's last bucket, or in a bucket after the one its last sample
 * started in, it read 0 rows/s as the chart's latest point right after the
 * job ended, most often for a fast job (the tail is a large part of a short
 * run).
 */
export function runWindowOf(
  job: { state: string; startedAt: Date | null; finishedAt: Date | null; updatedAt: Date },
  now: Date,
  lastWorkAt: Date | null = null,
): { from: Date; to: Date } | null {
  if (job.startedAt === null) return null;
  const ended = job.finishedAt ?? (job.state === "RUNNING" ? now : job.updatedAt);
  // Samples are in a bucket by their start: a millisecond past it, the last sample's bucket is the window's last.
  const workEnd = lastWorkAt === null ? null : lastWorkAt.getTime() + 1;
  const end = job.state !== "RUNNING" && workEnd !== null && workEnd < ended.getTime() ? new Date(workEnd) : ended;
  const to = new Date(Math.max(end.getTime(), job.startedAt.getTime() + 1000));
  const lead = Math.max(10_000, (to.getTime() - job.startedAt.getTime()) / 10);
  return { from: new Date(job.startedAt.getTime() - lead), to };
}

/** The start of the job's last throughput sample with rows (runWindowOf's `lastWorkAt`); null when none has any. */
export async function lastWorkAt(prisma: PrismaClient, jobId: string): Promise<Date | null> {
  const last = await prisma.batchJobSample.findFirst({
    where: { jobId, rows: { gt: 0 } },
    orderBy: { at: "desc" },
    select: { at: true },
  });
  return last?.at ?? null;
}

/** The chart's series for one job over its run. */
export async function queryJobThroughput(prisma: PrismaClient, job: JobWindow): Promise<JobThroughput> {
  const { from, to } = job;
  const longest = await longestSampleSecs(prisma, job);
  const bucketSecs = jobBucketSecs(from, to, longest);
  const fromMs = from.getTime();
  const bucketMs = bucketSecs * 1000;
  const version = job.targetVersion === null ? null : Number(job.targetVersion);
  // Every job on the same target counts against online traffic: jobs on the model or on the operator by that name.
  const [jobRows, target] = await Promise.all([
    prisma.$queryRaw<Array<{ bucket: number; rows: number; covered_ms: number; all_requests: number }>>`
      SELECT floor((extract(epoch FROM s."at") * 1000 - ${fromMs}::float8) / ${bucketMs}::float8)::int AS bucket,
        coalesce(sum(s."rows") FILTER (WHERE s."jobId" = ${job.id}), 0)::float8 AS rows,
        coalesce(sum(s."intervalMs") FILTER (WHERE s."jobId" = ${job.id}), 0)::float8 AS covered_ms,
        sum(s."requests")::float8 AS all_requests
      FROM "BatchJobSample" s
      JOIN "BatchJob" j ON j."id" = s."jobId"
      WHERE j."targetKind"::text = ${job.targetKind} AND j."targetName" = ${job.targetName}
        AND s."at" >= ${from} AND s."at" < ${to}
      GROUP BY 1`,
    job.targetKind === "MODEL"
      ? // Versions of one model share a sample start: the covered time counts each start once.
        prisma.$queryRaw<Array<{ bucket: number; requests: number; covered: number }>>`
          SELECT bucket, sum(requests)::float8 AS requests, sum(seconds)::float8 AS covered FROM (
            SELECT floor((extract(epoch FROM u."at") * 1000 - ${fromMs}::float8) / ${bucketMs}::float8)::int AS bucket,
              u."at", sum(u."requests") AS requests, max(u."intervalSeconds") AS seconds
            FROM "UsageSample" u JOIN "Model" m ON m."id" = u."modelId"
            WHERE m."name" = ${job.targetName} AND (${version}::int IS NULL OR u."modelVersion" = ${version}::int)
              AND u."at" >= ${from} AND u."at" < ${to}
            GROUP BY 1, 2) AS per_start
          GROUP BY 1`
      : prisma.$queryRaw<Array<{ bucket: number; requests: number; covered: number }>>`
          SELECT floor((extract(epoch FROM "at") * 1000 - ${fromMs}::float8) / ${bucketMs}::float8)::int AS bucket,
            sum("requests")::float8 AS requests, sum("intervalSeconds")::float8 AS covered
          FROM "OperatorUsageSample"
          WHERE "operator" = ${job.targetName} AND "at" >= ${from} AND "at" < ${to}
          GROUP BY 1`,
  ]);
  const totals = new Map<number, ThroughputBucketTotals>();
  const entry = (bucket: number) => {
    const found = totals.get(bucket) ?? emptyBucketTotals(bucket);
    totals.set(bucket, found);
    return found;
  };
  for (const row of jobRows) {
    const bucket = entry(Number(row.bucket));
    bucket.jobRows += Number(row.rows);
    bucket.jobCoveredSecs += Number(row.covered_ms) / 1000;
    bucket.allJobsRequests += Number(row.all_requests);
  }
  for (const row of target) {
    const bucket = entry(Number(row.bucket));
    bucket.targetRequests += Number(row.requests);
    bucket.targetCoveredSecs += Number(row.covered);
  }
  return { from, to, bucketSecs, points: throughputSeries(from, to, bucketSecs, [...totals.values()]) };
}

/** The longest usage or job sample interval in the window (s): buckets are at least that long. */
async function longestSampleSecs(prisma: PrismaClient, job: JobWindow): Promise<number> {
  const [usage, samples] = await Promise.all([
    job.targetKind === "MODEL"
      ? prisma.$queryRaw<Array<{ secs: number | null }>>`
          SELECT max(u."intervalSeconds")::float8 AS secs FROM "UsageSample" u JOIN "Model" m ON m."id" = u."modelId"
          WHERE m."name" = ${job.targetName} AND u."at" >= ${job.from} AND u."at" < ${job.to}`
      : prisma.$queryRaw<Array<{ secs: number | null }>>`
          SELECT max("intervalSeconds")::float8 AS secs FROM "OperatorUsageSample"
          WHERE "operator" = ${job.targetName} AND "at" >= ${job.from} AND "at" < ${job.to}`,
    prisma.batchJobSample.aggregate({ where: { jobId: job.id }, _max: { intervalMs: true } }),
  ]);
  return Math.max(1, Number(usage[0]?.secs ?? 0), Math.ceil((samples._max.intervalMs ?? 0) / 1000));
}
