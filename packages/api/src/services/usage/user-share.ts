/**
 * The part of a model version's work in an interval that served users, not
 * perf runs (issue 27 item 8): Δ users' inferences / Δ all inferences, 1 when
 * the interval had none. Tagged perf requests (operon_traffic=perf) load the
 * model on purpose; the CPU and GPU time they take is the host's, not a
 * user's, so the sampler scales the version's utilization (and so its cost
 * share) by this, and the rest stays unattributed.
 */
export function userShareOf(userInferences: number, allInferences: number): number {
  if (!(allInferences > 0)) return 1;
  return Math.min(1, Math.max(0, userInferences / allInferences));
}

/** A utilization scaled to the users' share; null (unknown) stays null. */
export function usersPart(utilization: number | null, share: number): number | null {
  return utilization === null ? null : utilization * share;
}
