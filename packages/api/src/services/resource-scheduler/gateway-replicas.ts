/**
 * The resource scheduler's replica decision (issue 23), pure: how many
 * gateways (`operon serve --role gateway` pods) the cluster's summed demand
 * needs. The scheduler writes the count (GatewayReplicas row, the
 * operon_desired_gateway_replicas gauge); Kubernetes' HPA acts on it
 * (deploy/kubernetes/variants/hpa-desired-replicas), never the scheduler.
 *
 * Gateways are alike (one Deployment, one image, the same flags), so one
 * gateway's room is the scheduler's per-host policy: at most
 * maxInstancesPerModel instances of one model and slotsPerGateway instances
 * in all, and coresPerGateway cores.
 *
 * Each period, from the inputs summed over every registered gateway:
 * 1. instances_m = ceil(demand_m × (1 + headroom) / capacity_m) per model
 *    (0 without demand), as the instance rule sizes one host.
 * 2. needed = the largest of
 *    - ceil(instances_m / maxInstancesPerModel) for every model (a gateway
 *      runs at most that many instances of one model),
 *    - ceil(Σ instances_m / slotsPerGateway) (its instance slots),
 *    - ceil(Σ busy cores / (coresPerGateway × (1 − headroom))) (its CPU),
 *    - now + 1 when requests wait longer than the p99 budget on average over
 *      the gateways: completed requests understate demand on saturated
 *      gateways, so the count must grow even when the rates say it suffices.
 * 3. Up at once. Down only scaleDownCooldownMs after the last change, sized
 *    with the peak demand of that window and the hysteresis margin, and at
 *    most halving per step (as the instance rule), so bursts do not make the
 *    count flap (each gateway that goes takes its warm instances with it).
 * 4. Within [minReplicas, maxReplicas] (--scheduler-min-gateways,
 *    --scheduler-max-gateways; the HPA's own bounds apply after).
 *
 * Why not the instance decisions' count times the gateways: those are per
 * gateway (each applies the same count, sized for the busiest gateway's
 * own demand), so multiplying them by N would size the cluster for N times
 * the busiest gateway's traffic; here the sum is divided by one gateway's room.
 */
export interface ReplicaPolicy {
  headroom: number;
  hysteresis: number;
  scaleDownCooldownMs: number;
  maxInstancesPerModel: number;
  /** Instances one gateway runs at once (the scheduler's CPU slots). */
  slotsPerGateway: number;
  /** Cores one gateway has (its CPU bound); 0 = no CPU bound. */
  coresPerGateway: number;
  minReplicas: number;
  maxReplicas: number;
  p99BudgetMs: number;
}

export interface ReplicaModelDemand {
  model: string;
  /** Requests/s summed over the gateways, over the last period. */
  demandRps: number;
  /** Highest summed demand over the last scaleDownCooldownMs; defaults to demandRps. */
  peakDemandRps?: number;
  /** Requests/s one instance serves within the p99 budget. */
  capacityRps: number;
}

export interface ReplicaInputs {
  models: readonly ReplicaModelDemand[];
  /** Worker CPU cores busy, summed over the gateways; null when no gateway's CPU could be read. */
  busyCores: number | null;
  /** Mean queue time per request over the gateways (weighted by requests); null without requests. */
  queueTimeMs: number | null;
  /** Gateways registered now. */
  gateways: number;
  /** The count decided last (kept in the database); null before the first decision. */
  previous: number | null;
  /** When the count last changed (epoch ms); null = never. */
  lastChangeAt: number | null;
}

export interface ReplicaDecision {
  replicas: number;
  from: number | null;
  /** What asked for how many gateways (before the bounds). */
  needed: { byModel: number; bySlots: number; byCpu: number; saturated: boolean };
  reason: string;
}

export function decideReplicas(inputs: ReplicaInputs, policy: ReplicaPolicy, now: number): ReplicaDecision {
  checkPolicy(policy);
  const from = inputs.previous;
  const current = from ?? Math.max(inputs.gateways, policy.minReplicas);
  const up = neededFor(inputs, policy, (model) => model.demandRps, policy.headroom, current);
  const clamp = (count: number): number => Math.min(policy.maxReplicas, Math.max(policy.minReplicas, count));
  const bounded = (count: number, why: string): string =>
    count > policy.maxReplicas
      ? `${why}; capped at --scheduler-max-gateways ${policy.maxReplicas}`
      : count < policy.minReplicas
        ? `${why}; kept at --scheduler-min-gateways ${policy.minReplicas}`
        : why;
  if (up.count >= current || from === null) {
    const replicas = clamp(up.count);
    return { replicas, from, needed: up.needed, reason: bounded(up.count, up.why) };
  }
  // Down: sized for the window's peak with the hysteresis margin, after the cooldown, at most halving.
  const down = neededFor(
    inputs,
    policy,
    (model) => model.peakDemandRps ?? model.demandRps,
    policy.headroom + policy.hysteresis,
    current,
  );
  if (down.count >= current)
    return { replicas: clamp(current), from, needed: up.needed, reason: `holding ${current}: ${down.why} at the peak` };
  if (inputs.lastChangeAt !== null && now - inputs.lastChangeAt < policy.scaleDownCooldownMs) {
    const waitS = Math.ceil((policy.scaleDownCooldownMs - (now - inputs.lastChangeAt)) / 1000);
    return {
      replicas: clamp(current),
      from,
      needed: up.needed,
      reason: `holding ${current}: ${down.why}, but the last change was under the cooldown ago (${waitS} s left)`,
    };
  }
  const target = Math.max(down.count, Math.ceil(current / 2));
  return { replicas: clamp(target), from, needed: down.needed, reason: bounded(target, `${down.why} (at the peak)`) };
}

function neededFor(
  inputs: ReplicaInputs,
  policy: ReplicaPolicy,
  demandOf: (model: ReplicaModelDemand) => number,
  margin: number,
  current: number,
): { count: number; needed: ReplicaDecision["needed"]; why: string } {
  let byModel = 0;
  let busiest = "";
  let instances = 0;
  for (const model of inputs.models) {
    const demand = demandOf(model);
    if (demand <= 0 || model.capacityRps <= 0) continue;
    const count = Math.ceil((demand * (1 + margin)) / model.capacityRps);
    instances += count;
    const gateways = Math.ceil(count / policy.maxInstancesPerModel);
    if (gateways > byModel) {
      byModel = gateways;
      busiest = `${model.model} needs ${count} instance${count === 1 ? "" : "s"} for ${fmt(demand)} req/s`;
    }
  }
  const bySlots = Math.ceil(instances / policy.slotsPerGateway);
  const byCpu =
    inputs.busyCores === null || policy.coresPerGateway <= 0
      ? 0
      : Math.ceil(inputs.busyCores / (policy.coresPerGateway * Math.max(0.05, 1 - margin)));
  const saturated = inputs.queueTimeMs !== null && inputs.queueTimeMs > policy.p99BudgetMs;
  const count = Math.max(1, byModel, bySlots, byCpu, saturated ? current + 1 : 0);
  const parts = [
    byModel > 0 ? `${busiest} (${byModel} at ${policy.maxInstancesPerModel} per gateway)` : "no demand",
    `${instances} instance${instances === 1 ? "" : "s"} in all: ${bySlots} at ${policy.slotsPerGateway} slots per gateway`,
    ...(inputs.busyCores !== null && policy.coresPerGateway > 0
      ? [`${fmt(inputs.busyCores)} cores busy: ${byCpu} at ${policy.coresPerGateway} cores per gateway`]
      : []),
    ...(saturated ? [`requests wait ${fmt(inputs.queueTimeMs!)} ms on average (over the p99 budget): one more`] : []),
  ];
  return {
    count,
    needed: { byModel, bySlots, byCpu, saturated },
    why: `${count} gateway${count === 1 ? "" : "s"}: ${parts.join("; ")}`,
  };
}

function checkPolicy(policy: ReplicaPolicy): void {
  if (!Number.isInteger(policy.minReplicas) || policy.minReplicas < 1)
    throw new RangeError(`--scheduler-min-gateways must be an integer of at least 1, got ${policy.minReplicas}`);
  if (!Number.isInteger(policy.maxReplicas) || policy.maxReplicas < policy.minReplicas)
    throw new RangeError(
      `--scheduler-max-gateways (${policy.maxReplicas}) must be an integer of at least --scheduler-min-gateways (${policy.minReplicas})`,
    );
  if (policy.slotsPerGateway < 1 || policy.maxInstancesPerModel < 1)
    throw new RangeError("a gateway must have room for at least one instance (slots and instances per model ≥ 1)");
}

const fmt = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
