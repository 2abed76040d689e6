import type { PrismaClient } from "@operon/db";
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

export function attributeJobCost(
  usage: readonly TargetUsageInterval[],
  job: readonly JobRequestInterval[],
  profiles: readonly CostProfile[],
  defaultProfileId: string | null,
): JobCost {
  const profileById = new Map(profiles.map((profile) => [profile.id, profile]));
  const fallback = defaultProfileId !== null ? profileById.get(defaultProfileId) : undefined;
  // The job's requests per usage sample, by overlap; what overlaps none is unsampled.
  const spread = usage.map(() => 0);
  let unsampled = 0;
  for (const sample of job) {
    const start = sample.at.getTime();
    const end = start + Math.max(sample.intervalMs, 1);
    let placed = 0;
    usage.forEach((interval, index) => {
      const from = Math.max(start, interval.at.getTime());
      const to = Math.min(end, interval.at.getTime() + interval.intervalSeconds * 1000);
      if (to <= from) return;
      const part = (sample.requests * (to - from)) / (end - start);
      spread[index] = (spread[index] ?? 0) + part;
      placed += part;
    });
    unsampled += sample.requests - placed;
  }
  const lines = new Map<string, JobCostLine>();
  usage.forEach((interval, index) => {
    const jobRequests = spread[index] ?? 0;
    if (jobRequests <= 0) return;
    const profile = interval.profileId !== null ? profileById.get(interval.profileId) : fallback;
    if (profile === undefined) {
      unsampled += jobRequests;
      return;
    }
    const share = interval.requests > 0 ? Math.min(1, jobRequests / interval.requests) : 0;
    const cost =
      (profile.costPerHour *
        ((1 - profile.gpuPriceShare) * interval.cpuShareSeconds + profile.gpuPriceShare * interval.gpuShareSeconds) *
        share) /
      3600;
    const line = lines.get(profile.id) ?? {
      profileId: profile.id,
      profileName: profile.name,
      currency: profile.currency,
      requests: 0,
      targetRequests: 0,
      cost: 0,
    };
    line.requests += jobRequests;
    line.targetRequests += interval.requests;
    line.cost += cost;
    lines.set(profile.id, line);
  });
  const result = [...lines.values()].map((line) => ({
    ...line,
    requests: Math.round(line.requests),
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
}

/** The job's cost so far: its throughput samples against its target's usage samples overlapping them. */
export async function queryJobCost(prisma: PrismaClient, job: CostedJob): Promise<JobCost> {
  const samples = await prisma.batchJobSample.findMany({
    where: { jobId: job.id },
    orderBy: { at: "asc" },
    select: { at: true, intervalMs: true, requests: true },
  });
  if (samples.length === 0) return attributeJobCost([], [], [], null);
  // The samples the job's own could overlap: from its first sample's start to its last's end.
  const first = samples[0]!.at;
  const last = samples[samples.length - 1]!;
  const end = new Date(last.at.getTime() + last.intervalMs);
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
  const profileIds = [...new Set(usage.map((row) => row.profile_id).filter((id): id is string => id !== null))];
  const profiles = await prisma.hardwareProfile.findMany({
    where: { OR: [{ id: { in: profileIds } }, { isDefault: true }] },
  });
  return attributeJobCost(
    usage.map((row) => ({
      at: row.at,
      intervalSeconds: Number(row.interval_seconds),
      profileId: row.profile_id,
      requests: Number(row.requests),
      cpuShareSeconds: Number(row.cpu_share_seconds),
      gpuShareSeconds: Number(row.gpu_share_seconds),
    })),
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
}

interface UsageRow {
  at: Date;
  interval_seconds: number;
  profile_id: string | null;
  requests: number;
  cpu_share_seconds: number;
  gpu_share_seconds: number;
}
