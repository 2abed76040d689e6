/**
 * The cost model: what serving each model cost, from the usage samples and
 * the hardware profile each sample was taken on.
 *
 * The host costs its profile's costPerHour for every hour the sampler
 * covered (the union of the sampling intervals; time the control plane did
 * not sample is not costed). That cost is attributed to models by CPU
 * share: a sample's cost is
 *
 *     costPerHour × cpuUtilization × intervalSeconds / 3600
 *
 * where cpuUtilization is the share of the host's CPU capacity the model's
 * worker processes used in the interval (0..1). What no model used (idle
 * capacity, the gateway process itself, other programs) is the host's
 * unattributed cost: host cost − Σ attributed. Samples without CPU figures
 * attribute nothing.
 *
 * Inferences are successful requests (requests − errors). Per model:
 * cost per hour = its cost / the hours covered; cost per 1,000 inferences =
 * its cost / inferences × 1000 (null without inferences). Samples taken
 * without a default profile cannot be costed; their inferences are listed
 * under `unprofiled`.
 */
export interface CostSample {
  model: string;
  hardwareProfileId: string | null;
  at: Date;
  intervalSeconds: number;
  requests: number;
  errors: number;
  cpuUtilization: number | null;
}

export interface CostProfile {
  id: string;
  name: string;
  costPerHour: number;
  currency: string;
}

export interface ModelCost {
  model: string;
  profileId: string;
  profileName: string;
  currency: string;
  inferences: number;
  /** Host-hours of CPU capacity the model used: Σ cpuUtilization × hours. */
  cpuShareHours: number;
  cost: number;
  costPerHour: number;
  costPer1000Inferences: number | null;
}

export interface ProfileCost {
  profileId: string;
  name: string;
  currency: string;
  /** The profile's price. */
  costPerHour: number;
  coveredHours: number;
  hostCost: number;
  attributedCost: number;
  unattributedCost: number;
  /** unattributedCost / hostCost; null when nothing was covered. */
  unattributedShare: number | null;
  inferences: number;
  models: ModelCost[];
}

export interface CostReport {
  profiles: ProfileCost[];
  /** Every model on every profile, most expensive first. */
  models: ModelCost[];
  unprofiled: Array<{ model: string; inferences: number }>;
}

const MONEY_DIGITS = 1e6;

function money(value: number): number {
  return Math.round(value * MONEY_DIGITS) / MONEY_DIGITS;
}

export function computeCosts(samples: readonly CostSample[], profiles: readonly CostProfile[]): CostReport {
  const profileById = new Map(profiles.map((profile) => [profile.id, profile]));
  const unprofiled = new Map<string, number>();
  const byProfile = new Map<string, { intervals: Map<number, number>; models: Map<string, { inferences: number; cpuShareHours: number; cost: number }> }>();

  for (const sample of samples) {
    const inferences = Math.max(0, sample.requests - sample.errors);
    const profile = sample.hardwareProfileId !== null ? profileById.get(sample.hardwareProfileId) : undefined;
    if (profile === undefined) {
      unprofiled.set(sample.model, (unprofiled.get(sample.model) ?? 0) + inferences);
      continue;
    }
    const entry = byProfile.get(profile.id) ?? { intervals: new Map(), models: new Map() };
    byProfile.set(profile.id, entry);
    // Every model's row of one sample shares its start: the host is costed once per interval.
    const start = sample.at.getTime();
    entry.intervals.set(start, Math.max(entry.intervals.get(start) ?? 0, sample.intervalSeconds));
    const hours = sample.intervalSeconds / 3600;
    const share = sample.cpuUtilization ?? 0;
    const model = entry.models.get(sample.model) ?? { inferences: 0, cpuShareHours: 0, cost: 0 };
    model.inferences += inferences;
    model.cpuShareHours += share * hours;
    model.cost += profile.costPerHour * share * hours;
    entry.models.set(sample.model, model);
  }

  const result: CostReport = { profiles: [], models: [], unprofiled: [...unprofiled].map(([model, inferences]) => ({ model, inferences })) };
  for (const [profileId, entry] of byProfile) {
    const profile = profileById.get(profileId)!;
    const coveredHours = [...entry.intervals.values()].reduce((sum, seconds) => sum + seconds, 0) / 3600;
    const hostCost = profile.costPerHour * coveredHours;
    const models: ModelCost[] = [...entry.models].map(([model, usage]) => ({
      model,
      profileId,
      profileName: profile.name,
      currency: profile.currency,
      inferences: usage.inferences,
      cpuShareHours: usage.cpuShareHours,
      cost: money(usage.cost),
      costPerHour: coveredHours > 0 ? money(usage.cost / coveredHours) : 0,
      costPer1000Inferences: usage.inferences > 0 ? money((usage.cost / usage.inferences) * 1000) : null,
    }));
    models.sort((a, b) => b.cost - a.cost || a.model.localeCompare(b.model));
    const attributed = [...entry.models.values()].reduce((sum, usage) => sum + usage.cost, 0);
    const unattributed = Math.max(0, hostCost - attributed);
    result.profiles.push({
      profileId,
      name: profile.name,
      currency: profile.currency,
      costPerHour: profile.costPerHour,
      coveredHours,
      hostCost: money(hostCost),
      attributedCost: money(attributed),
      unattributedCost: money(unattributed),
      unattributedShare: hostCost > 0 ? unattributed / hostCost : null,
      inferences: models.reduce((sum, model) => sum + model.inferences, 0),
      models,
    });
    result.models.push(...models);
  }
  result.profiles.sort((a, b) => a.name.localeCompare(b.name));
  result.models.sort((a, b) => b.cost - a.cost || a.model.localeCompare(b.model));
  return result;
}
