import type { PrismaClient } from "@operon/db";

/**
 * The cost model: what serving each model cost, from the usage samples and
 * the hardware profile each sample was taken on.
 *
 * The host costs its profile's costPerHour for every hour the sampler
 * covered (the union of the sampling intervals; time the control plane did
 * not sample is not costed). On a cluster every sampled gateway is a host of
 * the profile: coveredHours and the host cost add up over the gateways, as
 * the models' shares do (each gateway's CPU share is of its own host). The price splits into a GPU part and a CPU
 * part: gpuPriceShare g of it pays for the GPUs (a GPU profile's field,
 * DEFAULT_GPU_PRICE_SHARE when unset; 0 on a CPU profile). The CPU part is
 * attributed to models by CPU share, the GPU part by GPU share: a sample's
 * cost is
 *
 *     costPerHour × ((1 − g) × cpuUtilization + g × gpuUtilization) × intervalSeconds / 3600
 *
 * where cpuUtilization is the share of the host's CPU capacity the model's
 * worker processes used in the interval (0..1), and gpuUtilization the share
 * of the host's GPU capacity attributed to its GPU instances (usage-sampler.ts).
 * What no model used (idle capacity, the gateway process itself, other
 * programs) is the host's unattributed cost: host cost − Σ attributed.
 * Samples without CPU (GPU) figures attribute nothing of that part.
 *
 * Inferences are what the models computed: a batched request of N items
 * counts N (the samples' inference_count deltas), failures count 0. Per model:
 * cost per hour = its cost / the hours covered; cost per 1,000 inferences =
 * its cost / inferences × 1000 (null without inferences).
 *
 * Samples taken without a default profile (before the first profile was
 * made, or while none existed) are costed on the default profile once one
 * exists: the host they ran on is the host the default describes, and the
 * report says how much of that profile's cost they make (`costedOnDefault`).
 * Only while no profile is the default are they left uncosted, their
 * inferences listed under `unprofiled`.
 *
 * Operators (issue 27 item 10) are costed with the same formula from their
 * OperatorUsageSample rows: the share of their step models' CPU and GPU
 * their calls made (usage/operator-usage.ts). That cost is part of the step
 * models' cost, not more of it: operators are listed (`operators`) but never
 * added to a profile's attributed cost, so no step is counted twice in a total.
 */
/** Per hardware profile (null: samples taken without one) and model, summed by the database (queryCostTotals). */
export interface CostUsageTotals {
  profileId: string | null;
  model: string;
  inferences: number;
  /** Σ cpuUtilization × intervalSeconds (samples without CPU figures add nothing). */
  cpuShareSeconds: number;
  /** Σ gpuUtilization × intervalSeconds (samples without GPU figures add nothing). */
  gpuShareSeconds: number;
}

export interface CostTotals {
  usage: CostUsageTotals[];
  /** Operators' shares of their step models, per profile and operator (model = the operator's name); absent = none. */
  operatorUsage?: CostUsageTotals[];
  /**
   * Per profile (null: samples taken without one): the host-seconds its samples cover (each gateway's sample
   * start once, with its longest interval: a cluster's gateways add up, each a host of the profile), and the
   * wall-clock seconds (each start once over the gateways; the models' cost per hour divides by it). Without
   * wallSecs, coveredSecs is both (one gateway).
   */
  covered: Array<{ profileId: string | null; coveredSecs: number; wallSecs?: number }>;
}

export interface CostProfile {
  id: string;
  name: string;
  costPerHour: number;
  currency: string;
  /** Share of the price that pays for the GPUs (0..1): gpuPriceShareOf(profile). */
  gpuPriceShare: number;
}

/** The GPU part of a GPU profile's price when the profile does not say (GPUs dominate a GPU host's price). */
export const DEFAULT_GPU_PRICE_SHARE = 0.8;

/** The profile's GPU part: its own gpuPriceShare, the default on a GPU profile, 0 on a CPU one. */
export function gpuPriceShareOf(profile: { kind: string; gpuPriceShare: number | null }): number {
  if (profile.kind !== "GPU") return 0;
  return profile.gpuPriceShare ?? DEFAULT_GPU_PRICE_SHARE;
}

export interface ModelCost {
  model: string;
  profileId: string;
  profileName: string;
  currency: string;
  inferences: number;
  /** Host-hours of CPU capacity the model used: Σ cpuUtilization × hours. */
  cpuShareHours: number;
  /** Host-hours of GPU capacity attributed to the model: Σ gpuUtilization × hours. */
  gpuShareHours: number;
  /** cost = cpuCost + gpuCost: what its CPU share and its GPU share cost. */
  cpuCost: number;
  gpuCost: number;
  cost: number;
  costPerHour: number;
  costPer1000Inferences: number | null;
}

/** An operator's part of its step models' cost: already in those models' lines (see computeCosts). */
export type OperatorCost = Omit<ModelCost, "model"> & { operator: string };

export interface ProfileCost {
  profileId: string;
  name: string;
  currency: string;
  /** The profile's price. */
  costPerHour: number;
  /** The share of the price attributed by GPU share. */
  gpuPriceShare: number;
  coveredHours: number;
  hostCost: number;
  attributedCost: number;
  unattributedCost: number;
  /** unattributedCost / hostCost; null when nothing was covered. */
  unattributedShare: number | null;
  inferences: number;
  models: ModelCost[];
  /** Operators served on this profile, most expensive first: not in attributedCost (their steps are). */
  operators: OperatorCost[];
}

export interface CostReport {
  profiles: ProfileCost[];
  /** Every model on every profile, most expensive first. */
  models: ModelCost[];
  /** Every operator on every profile, most expensive first: a breakdown of its steps' lines, not an addition. */
  operators: OperatorCost[];
  /** Samples taken without a profile, costed on the default one (included in that profile's figures); null when none. */
  costedOnDefault: { profileId: string; profileName: string; inferences: number; coveredHours: number } | null;
  /** Samples taken without a profile while no profile is the default: not costed. */
  unprofiled: Array<{ model: string; inferences: number }>;
}

const MONEY_DIGITS = 1e6;

function money(value: number): number {
  return Math.round(value * MONEY_DIGITS) / MONEY_DIGITS;
}

/**
 * `defaultProfileId`: the profile that costs the samples taken without one (it must be among `profiles`);
 * undefined or null leaves them uncosted.
 */
export function computeCosts(
  totals: CostTotals,
  profiles: readonly CostProfile[],
  defaultProfileId?: string | null,
): CostReport {
  const profileById = new Map(profiles.map((profile) => [profile.id, profile]));
  const fallback = defaultProfileId != null ? profileById.get(defaultProfileId) : undefined;
  if (defaultProfileId != null && fallback === undefined)
    throw new Error(`the default hardware profile ${defaultProfileId} is not among the profiles to cost`);
  const coveredById = new Map<string, number>();
  const wallById = new Map<string, number>();
  let unprofiledSecs = 0;
  for (const entry of totals.covered) {
    if (entry.profileId === null) unprofiledSecs += entry.coveredSecs;
    const id = entry.profileId ?? fallback?.id;
    if (id !== undefined) {
      coveredById.set(id, (coveredById.get(id) ?? 0) + entry.coveredSecs);
      wallById.set(id, (wallById.get(id) ?? 0) + (entry.wallSecs ?? entry.coveredSecs));
    }
  }
  let costedOnDefaultInferences = 0;
  const unprofiled = new Map<string, number>();
  const byProfile = new Map<
    string,
    Array<{
      model: string;
      inferences: number;
      cpuShareHours: number;
      gpuShareHours: number;
      cpuCost: number;
      gpuCost: number;
      cost: number;
    }>
  >();

  // Operators' lines, costed like models' (samples without a profile on the default one; none without a default).
  const operatorLines = new Map<
    string,
    Map<string, { inferences: number; cpuShareHours: number; gpuShareHours: number }>
  >();
  for (const usage of totals.operatorUsage ?? []) {
    const profile = usage.profileId !== null ? profileById.get(usage.profileId) : fallback;
    if (profile === undefined) continue;
    const lines = operatorLines.get(profile.id) ?? new Map();
    operatorLines.set(profile.id, lines);
    const line = lines.get(usage.model) ?? { inferences: 0, cpuShareHours: 0, gpuShareHours: 0 };
    line.inferences += usage.inferences;
    line.cpuShareHours += usage.cpuShareSeconds / 3600;
    line.gpuShareHours += usage.gpuShareSeconds / 3600;
    lines.set(usage.model, line);
  }

  for (const usage of totals.usage) {
    const profile = usage.profileId !== null ? profileById.get(usage.profileId) : fallback;
    if (profile === undefined) {
      unprofiled.set(usage.model, (unprofiled.get(usage.model) ?? 0) + usage.inferences);
      continue;
    }
    if (usage.profileId === null) costedOnDefaultInferences += usage.inferences;
    // A model sampled both with and without a profile is one line of the default profile.
    const models = byProfile.get(profile.id) ?? [];
    byProfile.set(profile.id, models);
    const line = models.find((candidate) => candidate.model === usage.model);
    const cpuShareHours = usage.cpuShareSeconds / 3600;
    const gpuShareHours = usage.gpuShareSeconds / 3600;
    const cpuCost = profile.costPerHour * (1 - profile.gpuPriceShare) * cpuShareHours;
    const gpuCost = profile.costPerHour * profile.gpuPriceShare * gpuShareHours;
    if (line === undefined) {
      models.push({
        model: usage.model,
        inferences: usage.inferences,
        cpuShareHours,
        gpuShareHours,
        cpuCost,
        gpuCost,
        cost: cpuCost + gpuCost,
      });
      continue;
    }
    line.inferences += usage.inferences;
    line.cpuShareHours += cpuShareHours;
    line.gpuShareHours += gpuShareHours;
    line.cpuCost += cpuCost;
    line.gpuCost += gpuCost;
    line.cost += cpuCost + gpuCost;
  }

  const result: CostReport = {
    profiles: [],
    models: [],
    operators: [],
    costedOnDefault:
      fallback !== undefined && (unprofiledSecs > 0 || costedOnDefaultInferences > 0)
        ? {
            profileId: fallback.id,
            profileName: fallback.name,
            inferences: costedOnDefaultInferences,
            coveredHours: unprofiledSecs / 3600,
          }
        : null,
    unprofiled: [...unprofiled].map(([model, inferences]) => ({ model, inferences })),
  };
  for (const [profileId, usages] of byProfile) {
    const profile = profileById.get(profileId)!;
    const coveredHours = (coveredById.get(profileId) ?? 0) / 3600;
    // Cost per hour of a model or operator: per hour of time, not per host-hour of a cluster.
    const wallHours = (wallById.get(profileId) ?? 0) / 3600;
    const hostCost = profile.costPerHour * coveredHours;
    const models: ModelCost[] = usages.map((usage) => ({
      model: usage.model,
      profileId,
      profileName: profile.name,
      currency: profile.currency,
      inferences: usage.inferences,
      cpuShareHours: usage.cpuShareHours,
      gpuShareHours: usage.gpuShareHours,
      cpuCost: money(usage.cpuCost),
      gpuCost: money(usage.gpuCost),
      cost: money(usage.cost),
      costPerHour: wallHours > 0 ? money(usage.cost / wallHours) : 0,
      costPer1000Inferences: usage.inferences > 0 ? money((usage.cost / usage.inferences) * 1000) : null,
    }));
    models.sort((a, b) => b.cost - a.cost || a.model.localeCompare(b.model));
    const operators: OperatorCost[] = [...(operatorLines.get(profileId) ?? [])].map(([operator, line]) => {
      const cpuCost = profile.costPerHour * (1 - profile.gpuPriceShare) * line.cpuShareHours;
      const gpuCost = profile.costPerHour * profile.gpuPriceShare * line.gpuShareHours;
      const cost = cpuCost + gpuCost;
      return {
        operator,
        profileId,
        profileName: profile.name,
        currency: profile.currency,
        inferences: line.inferences,
        cpuShareHours: line.cpuShareHours,
        gpuShareHours: line.gpuShareHours,
        cpuCost: money(cpuCost),
        gpuCost: money(gpuCost),
        cost: money(cost),
        costPerHour: wallHours > 0 ? money(cost / wallHours) : 0,
        costPer1000Inferences: line.inferences > 0 ? money((cost / line.inferences) * 1000) : null,
      };
    });
    operators.sort((a, b) => b.cost - a.cost || a.operator.localeCompare(b.operator));
    // Models only: an operator's cost is the part of its steps' cost its calls made, already in their lines.
    const attributed = usages.reduce((sum, usage) => sum + usage.cost, 0);
    const unattributed = Math.max(0, hostCost - attributed);
    result.profiles.push({
      profileId,
      name: profile.name,
      currency: profile.currency,
      costPerHour: profile.costPerHour,
      gpuPriceShare: profile.gpuPriceShare,
      coveredHours,
      hostCost: money(hostCost),
      attributedCost: money(attributed),
      unattributedCost: money(unattributed),
      unattributedShare: hostCost > 0 ? unattributed / hostCost : null,
      inferences: models.reduce((sum, model) => sum + model.inferences, 0),
      models,
      operators,
    });
    result.models.push(...models);
    result.operators.push(...operators);
  }
  result.profiles.sort((a, b) => a.name.localeCompare(b.name));
  result.models.sort((a, b) => b.cost - a.cost || a.model.localeCompare(b.model));
  result.operators.sort((a, b) => b.cost - a.cost || a.operator.localeCompare(b.operator));
  return result;
}

/** Sums the samples of [from, to) per profile and model in the database (a month of 15 s samples stays one small answer). */
export async function queryCostTotals(prisma: PrismaClient, range: { from: Date; to: Date }): Promise<CostTotals> {
  const [usage, covered, operatorUsage] = await Promise.all([
    prisma.$queryRaw<
      Array<{
        profile_id: string | null;
        model: string;
        inferences: number;
        cpu_share_seconds: number;
        gpu_share_seconds: number;
      }>
    >`
      SELECT s."hardwareProfileId" AS profile_id,
        m."name" AS model,
        sum(s."inferences")::float8 AS inferences,
        coalesce(sum(s."cpuUtilization" * s."intervalSeconds"), 0)::float8 AS cpu_share_seconds,
        coalesce(sum(s."gpuUtilization" * s."intervalSeconds"), 0)::float8 AS gpu_share_seconds
      FROM "UsageSample" s
      JOIN "Model" m ON m."id" = s."modelId"
      WHERE s."at" >= ${range.from} AND s."at" < ${range.to}
      GROUP BY 1, 2`,
    // Every model's row of one gateway's sample shares its start: each gateway's host is costed once per
    // interval, so a cluster's hosts add up (gatewayHost null: the control plane's own gateway); the wall
    // time counts each start once (the gateways of one sample share it).
    prisma.$queryRaw<Array<{ profile_id: string | null; covered_seconds: number; wall_seconds: number }>>`
      WITH per_gateway AS (
        SELECT "hardwareProfileId" AS profile_id, "gatewayHost" AS gateway_host, "at", max("intervalSeconds") AS seconds
        FROM "UsageSample"
        WHERE "at" >= ${range.from} AND "at" < ${range.to}
        GROUP BY 1, 2, 3
      ), per_start AS (
        SELECT profile_id, "at", max(seconds) AS seconds FROM per_gateway GROUP BY 1, 2
      )
      SELECT h.profile_id, h.covered_seconds, w.wall_seconds
      FROM (SELECT profile_id, sum(seconds)::float8 AS covered_seconds FROM per_gateway GROUP BY 1) h
      JOIN (SELECT profile_id, sum(seconds)::float8 AS wall_seconds FROM per_start GROUP BY 1) w
        ON h.profile_id IS NOT DISTINCT FROM w.profile_id`,
    prisma.$queryRaw<
      Array<{
        profile_id: string | null;
        operator: string;
        inferences: number;
        cpu_share_seconds: number;
        gpu_share_seconds: number;
      }>
    >`
      SELECT "hardwareProfileId" AS profile_id,
        "operator",
        sum("inferences")::float8 AS inferences,
        coalesce(sum("cpuUtilization" * "intervalSeconds"), 0)::float8 AS cpu_share_seconds,
        coalesce(sum("gpuUtilization" * "intervalSeconds"), 0)::float8 AS gpu_share_seconds
      FROM "OperatorUsageSample"
      WHERE "at" >= ${range.from} AND "at" < ${range.to}
      GROUP BY 1, 2`,
  ]);
  return {
    usage: usage.map((row) => ({
      profileId: row.profile_id,
      model: row.model,
      inferences: Number(row.inferences),
      cpuShareSeconds: Number(row.cpu_share_seconds),
      gpuShareSeconds: Number(row.gpu_share_seconds),
    })),
    covered: covered.map((row) => ({
      profileId: row.profile_id,
      coveredSecs: Number(row.covered_seconds),
      wallSecs: Number(row.wall_seconds),
    })),
    operatorUsage: operatorUsage.map((row) => ({
      profileId: row.profile_id,
      model: row.operator,
      inferences: Number(row.inferences),
      cpuShareSeconds: Number(row.cpu_share_seconds),
      gpuShareSeconds: Number(row.gpu_share_seconds),
    })),
  };
}
