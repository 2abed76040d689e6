/**
 * Cost per 1,000 inferences of a candidate config, priced like the cost
 * model (cost-model.ts): the host's hardware profile costs costPerHour, and
 * a model is charged the share of the host it takes. The cost model learns
 * that share afterwards from the workers' CPU time; a search has to rank
 * configs before they serve, so it charges the share the config reserves:
 *
 *     hostShare = min(1, instances / capacity)
 *
 * where capacity is the profile's GPU count for a GPU profile and its CPU
 * cores for a CPU profile (a whole host when the profile does not say).
 * Then
 *
 *     cost per 1,000 = costPerHour × hostShare / (throughput × 3600) × 1000
 *
 * with throughput in inferences per second: four instances that add 10 %
 * throughput cost more per inference than one, which is the trade the
 * MIN_COST objective is there to make.
 */
export interface CostProfileShape {
  kind: "CPU" | "GPU";
  cpuCores: number | null;
  gpuCount: number;
  costPerHour: number;
}

export function hostShare(instanceCount: number, profile: CostProfileShape): number {
  const capacity = profile.kind === "GPU" ? profile.gpuCount : profile.cpuCores;
  if (capacity === null || capacity <= 0) return 1;
  return Math.min(1, Math.max(0, instanceCount) / capacity);
}

/** null when nothing was served (no throughput): the cost per inference is unbounded, not 0. */
export function costPer1000Inferences(
  throughputPerSec: number,
  instanceCount: number,
  profile: CostProfileShape,
): number | null {
  if (!(throughputPerSec > 0)) return null;
  const perHour = profile.costPerHour * hostShare(instanceCount, profile);
  return Math.round((perHour / (throughputPerSec * 3600)) * 1000 * 1e9) / 1e9;
}
