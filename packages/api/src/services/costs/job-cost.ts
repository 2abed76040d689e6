import { Prisma, type PrismaClient } from "@operon/db";
import { z } from "zod";
import { parseJsonColumn } from "../json-column.js";
import { gpuPriceShareOf, type CostProfile } from "./cost-model.js";

/**
 * A batch job's cost (issue 24): its share of its target's cost over the
 * job's run, by the cost model's formula (cost-model.ts).
 *
 * The target's usage samples (UsageSample rows of the model, or
 * OperatorUsageSample rows of the operator) say what the target cost in
 * each interval; the job's throughput samples (BatchJobSample) say how many
 * requests the job sent. The job pays, per usage sample, its share of that
 * sample's requests:
 *
 *     cost_i = costPerHour × ((1 − g) × cpuShareSeconds_i + g × gpuShareSeconds_i) / 3600
 *              × min(1, jobRequests_i / requests_i)
 *
 * where jobRequests_i is the job's requests spread over the usage samples
 * by the time its samples overlap them (a 5 s job sample over three 1 s
 * usage samples gives each a third, wholly inside one 15 s sample gives it
 * all). A usage sample without requests costs the job nothing. The share is capped at 1: the two samplers read at different moments,
 * so a job sample may count requests the overlapping usage sample has not.
 * Job requests outside every usage sample (the control plane did not
 * sample then, or not yet: a usage sample is written when its interval
 * ends) are not costed and are reported as `unsampledRequests`, as the cost
 * model leaves time it did not sample uncosted.
 *
 * Samples taken without a hardware profile are costed on the default
 * profile, as in the cost model; without a default they are not costed.
 */
export interface TargetUsageInterval {
  at: Date;
  intervalSeconds: number;
  profileId: string | null;
  /** Every request the target answered in the interval, the job's included. */
  requests: number;
  /** cpuUtilization × intervalSeconds (0 without CPU figures). */
  cpuShareSeconds: number;
  /** gpuUtilization × intervalSeconds (0 without GPU figures). */
  gpuShareSeconds: number;
}

export interface JobRequestInterval {
  at: Date;
  intervalMs: number;
  requests: number;
}

export interface JobCostLine {
  profileId: string;
  profileName: string;
  currency: string;
  /** The job's requests costed on this profile. */
  requests: number;
  /** All of the target's requests in the samples the job overlapped. */
  targetRequests: number;
  cost: number;
}

export interface JobCost {
  /** Σ of the lines when they share a currency; null when none or several. */
  total: number | null;
  currency: string | null;
  lines: JobCostLine[];
  /** The job's requests no usage sample covered, or covered without a profile to cost them on. */
  unsampledRequests: number;
}

const MONEY_DIGITS = 1e6;

/**
 * What one job sample contributed: its requests' cost per profile (not rounded), and its requests no usage
 * sample covered. The contributions of all of a job's samples add up to attributeJobCost's result.
 */
export interface SampleCost {
  lines: JobCostLine[];
  unsampledRequests: number;
}

export const sampleCostSchema = z.object({
  lines: z.array(
    z.object({
      profileId: z.string(),
      profileName: z.string(),
      currency: z.string(),
      requests: z.number(),
      targetRequests: z.number(),
      cost: z.number(),
    }),
  ),
  unsampledRequests: z.number(),
});

export function attributeJobCost(
  usage: readonly TargetUsageInterval[],
  job: readonly JobRequestInterval[],
  profiles: readonly CostProfile[],
  defaultProfileId: string | null,
): JobCost {
  return sumSampleCosts(attributeJobCostBySample(usage, job, profiles, defaultProfileId));
}

/**
 * The same attribution, per job sample: a usage sample's cost to the job (its price × the job's capped
 * share of its requests) is split among the job samples overlapping it by their requests in it, and so is
 * its request count (targetRequests), so the parts add up to the whole.
 */
export function attributeJobCostBySample(
  usage: readonly TargetUsageInterval[],
  job: readonly JobRequestInterval[],
  profiles: readonly CostProfile[],
  defaultProfileId: string | null,
): SampleCost[] {
  const profileById = new Map(profiles.map((profile) => [profile.id, profile]));
  const fallback = defaultProfileId !== null ? profileById.get(defaultProfileId) : undefined;
  // Each job sample's requests per usage sample, by overlap; what overlaps none is unsampled.
  const parts = job.map((sample) => {
    const start = sample.at.getTime();
    const end = start + Math.max(sample.intervalMs, 1);
    return usage.map((interval) => {
      const from = Math.max(start, interval.at.getTime());
      const to = Math.min(end, interval.at.getTime() + interval.intervalSeconds * 1000);
      return to <= from ? 0 : (sample.requests * (to - from)) / (end - start);
    });
  });
  const spread = usage.map((_, index) => parts.reduce((sum, row) => sum + (row[index] ?? 0), 0));
  return job.map((sample, j) => {
    const lines = new Map<string, JobCostLine>();
    let unsampled = sample.requests;
    usage.forEach((interval, index) => {
      const part = parts[j]?.[index] ?? 0;
      if (part <= 0) return;
      unsampled -= part;
      const profile = interval.profileId !== null ? profileById.get(interval.profileId) : fallback;
      if (profile === undefined) {
        unsampled += part;
        return;
      }
      const all = spread[index] ?? part;
      const share = interval.requests > 0 ? Math.min(1, all / interval.requests) : 0;
      const price =
        (profile.costPerHour *
          ((1 - profile.gpuPriceShare) * interval.cpuShareSeconds + profile.gpuPriceShare * interval.gpuShareSeconds)) /
        3600;
      const line = lines.get(profile.id) ?? {
        profileId: profile.id,
        profileName: profile.name,
        currency: profile.currency,
        requests: 0,
        targetRequests: 0,
        cost: 0,
      };
      line.requests += part;
      line.targetRequests += (interval.requests * part) / all;
      line.cost += (price * share * part) / all;
      lines.set(profile.id, line);
    });
    return { lines: [...lines.values()], unsampledRequests: Math.max(0, unsampled) };
  });
}

/** The job's cost from its samples' contributions: lines per profile, rounded, with a total when one currency. */
export function sumSampleCosts(samples: readonly SampleCost[]): JobCost {
  const lines = new Map<string, JobCostLine>();
  let unsampled = 0;
  for (const sample of samples) {
    unsampled += sample.unsampledRequests;
    for (const part of sample.lines) {
      const line = lines.get(part.profileId) ?? { ...part, requests: 0, targetRequests: 0, cost: 0 };
      line.requests += part.requests;
      line.targetRequests += part.targetRequests;
      line.cost += part.cost;
      lines.set(part.profileId, line);
    }
  }
  const result = [...lines.values()].map((line) => ({
    ...line,
    requests: Math.round(line.requests),
    targetRequests: Math.round(line.targetRequests),
    cost: Math.round(line.cost * MONEY_DIGITS) / MONEY_DIGITS,
  }));
  result.sort((a, b) => b.cost - a.cost || a.profileName.localeCompare(b.profileName));
  const currencies = new Set(result.map((line) => line.currency));
  const single = currencies.size === 1 ? [...currencies][0]! : null;
  return {
    total:
      single === null
        ? null
        : Math.round(result.reduce((sum, line) => sum + line.cost, 0) * MONEY_DIGITS) / MONEY_DIGITS,
    currency: single,
    lines: result,
    unsampledRequests: Math.round(Math.max(0, unsampled)),
  };
}

/** The job and its run, as queryJobCost reads them. */
export interface CostedJob {
  id: string;
  targetKind: "MODEL" | "OPERATOR";
  targetName: string;
  targetVersion: string | null;
  /** A job that may still write samples (RUNNING, QUEUED) settles only what its later samples cannot change. */
  state: string;
}

/**
 * The job's cost so far: its throughput samples against its target's usage samples overlapping them.
 *
 * What a sample contributed is **kept** on it (BatchJobSample.cost) once nothing can change it any more, and
 * read from there after: usage samples are compacted after a day and deleted past --usage-retention-days,
 * and a cost computed from what is left of them would shrink. A sample is settled when the usage sampler
 * has written a sample starting at or after its end (so every usage sample over it exists; the sampler
 * writes a sample when its interval ends), and the job can write no other sample over the same usage
 * samples (it is no longer running, or its samples already reach past the end of those usage samples).
 * Until then its part is computed on each read, as before. settleJobCosts settles them in the background,
 * long before compaction or retention could reach their usage samples.
 */
export async function queryJobCost(prisma: PrismaClient, job: CostedJob): Promise<JobCost> {
  const samples = await prisma.batchJobSample.findMany({
    where: { jobId: job.id },
    orderBy: { at: "asc" },
    select: { at: true, intervalMs: true, requests: true, cost: true },
  });
  const kept = samples.map((sample) =>
    sample.cost === null
      ? undefined
      : parseJsonColumn(sampleCostSchema, sample.cost, {
          table: "BatchJobSample",
          column: "cost",
          id: `${job.id} at ${sample.at.toISOString()}`,
        }),
  );
  const endOf = (sample: { at: Date; intervalMs: number }) => sample.at.getTime() + sample.intervalMs;
  const open = samples.filter((sample, index) => kept[index] === undefined && sample.requests > 0);
  if (open.length === 0) return sumSampleCosts(kept.filter((cost): cost is SampleCost => cost !== undefined));
  // The usage samples the open ones overlap: from the first open sample's start to the last's end.
  const first = open[0]!.at;
  const end = new Date(Math.max(...open.map(endOf)));
  const version = job.targetVersion === null ? null : Number(job.targetVersion);
  const usage =
    job.targetKind === "MODEL"
      ? await prisma.$queryRaw<UsageRow[]>`
          SELECT u."at", u."intervalSeconds" AS interval_seconds, u."hardwareProfileId" AS profile_id,
            u."requests"::float8 AS requests,
            coalesce(u."cpuUtilization" * u."intervalSeconds", 0)::float8 AS cpu_share_seconds,
            coalesce(u."gpuUtilization" * u."intervalSeconds", 0)::float8 AS gpu_share_seconds
          FROM "UsageSample" u JOIN "Model" m ON m."id" = u."modelId"
          WHERE m."name" = ${job.targetName} AND (${version}::int IS NULL OR u."modelVersion" = ${version}::int)
            AND u."at" < ${end} AND u."at" + make_interval(secs => u."intervalSeconds") > ${first}`
      : await prisma.$queryRaw<UsageRow[]>`
          SELECT "at", "intervalSeconds" AS interval_seconds, "hardwareProfileId" AS profile_id,
            "requests"::float8 AS requests,
            coalesce("cpuUtilization" * "intervalSeconds", 0)::float8 AS cpu_share_seconds,
            coalesce("gpuUtilization" * "intervalSeconds", 0)::float8 AS gpu_share_seconds
          FROM "OperatorUsageSample"
          WHERE "operator" = ${job.targetName}
            AND "at" < ${end} AND "at" + make_interval(secs => "intervalSeconds") > ${first}`;
  // How far the usage sampler has got: the start of the target's latest usage sample (any model version:
  // the sampler writes every version's row each interval).
  const [latest] =
    job.targetKind === "MODEL"
      ? await prisma.$queryRaw<Array<{ at: Date | null }>>`
          SELECT max(u."at") AS at FROM "UsageSample" u JOIN "Model" m ON m."id" = u."modelId"
          WHERE m."name" = ${job.targetName}`
      : await prisma.$queryRaw<Array<{ at: Date | null }>>`
          SELECT max("at") AS at FROM "OperatorUsageSample" WHERE "operator" = ${job.targetName}`;
  const profileIds = [...new Set(usage.map((row) => row.profile_id).filter((id): id is string => id !== null))];
  const profiles = await prisma.hardwareProfile.findMany({
    where: { OR: [{ id: { in: profileIds } }, { isDefault: true }] },
  });
  const intervals = usage.map((row) => ({
    at: row.at,
    intervalSeconds: Number(row.interval_seconds),
    profileId: row.profile_id,
    requests: Number(row.requests),
    cpuShareSeconds: Number(row.cpu_share_seconds),
    gpuShareSeconds: Number(row.gpu_share_seconds),
  }));
  // Every sample takes part (a kept one still counts in its usage samples' job requests); only open ones are used.
  const parts = attributeJobCostBySample(
    intervals,
    samples,
    profiles.map((profile) => ({
      id: profile.id,
      name: profile.name,
      costPerHour: Number(profile.costPerHour),
      currency: profile.currency,
      gpuPriceShare: gpuPriceShareOf(profile),
    })),
    profiles.find((profile) => profile.isDefault)?.id ?? null,
  );
  const sampledUpTo = latest?.at?.getTime() ?? Number.NEGATIVE_INFINITY;
  const stillWriting = job.state === "RUNNING" || job.state === "QUEUED";
  const lastJobEnd = Math.max(...samples.map(endOf));
  const settled: Array<{ at: Date; cost: SampleCost }> = [];
  samples.forEach((sample, index) => {
    if (kept[index] !== undefined || sample.requests === 0) return;
    const sampleEnd = endOf(sample);
    if (sampledUpTo < sampleEnd) return;
    if (stillWriting) {
      const overUsageEnd = Math.max(
        sampleEnd,
        ...intervals
          .map((interval) => ({
            from: interval.at.getTime(),
            to: interval.at.getTime() + interval.intervalSeconds * 1000,
          }))
          .filter((range) => range.from < sampleEnd && range.to > sample.at.getTime())
          .map((range) => range.to),
      );
      if (lastJobEnd < overUsageEnd) return;
    }
    settled.push({ at: sample.at, cost: parts[index]! });
  });
  if (settled.length > 0)
    await prisma.$transaction(
      settled.map((entry) =>
        prisma.batchJobSample.update({
          where: { jobId_at: { jobId: job.id, at: entry.at } },
          data: { cost: entry.cost as unknown as Prisma.InputJsonValue },
        }),
      ),
    );
  return sumSampleCosts(samples.map((_, index) => kept[index] ?? parts[index]!));
}

/**
 * Settles the kept cost of jobs whose samples are not all settled (queryJobCost keeps what it can), a few
 * jobs a call; the control plane calls it every minute, so samples are settled within minutes of their
 * usage samples, long before compaction (a day) or retention (days) changes those. Returns the jobs read.
 */
export async function settleJobCosts(prisma: PrismaClient, maxJobs = 20): Promise<number> {
  const open = await prisma.batchJobSample.findMany({
    where: { cost: { equals: Prisma.DbNull }, requests: { gt: 0 } },
    distinct: ["jobId"],
    select: { jobId: true },
    take: maxJobs,
  });
  const jobs = await prisma.batchJob.findMany({
    where: { id: { in: open.map((row) => row.jobId) } },
    select: { id: true, targetKind: true, targetName: true, targetVersion: true, state: true },
  });
  for (const job of jobs) await queryJobCost(prisma, job);
  return jobs.length;
}

interface UsageRow {
  at: Date;
  interval_seconds: number;
  profile_id: string | null;
  requests: number;
  cpu_share_seconds: number;
  gpu_share_seconds: number;
}
