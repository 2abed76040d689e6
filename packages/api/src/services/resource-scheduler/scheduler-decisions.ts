/**
 * The resource scheduler's decision logic, pure: (inputs, now) -> decisions
 * with reasons. No clock, database or gateway here; the runner
 * (resource-scheduler.ts) gathers the inputs each sampling period and
 * applies what comes back, so every rule below is unit-tested with
 * synthetic demand and a controlled clock.
 *
 * Per model, each period:
 * 1. pinned: the admin's count, at once (no cooldown); nothing else applies.
 * 2. needed = ceil(demand × (1 + headroom) / capacity per instance), at least 1.
 * 3. Up when needed > instances, unless the model changed less than
 *    scaleUpCooldownMs ago (its new instances need a period to show in the demand).
 *    Demand is measured from completed requests, which a saturated model
 *    caps at what it serves now; so a model with requests waiting in its
 *    queue (at least one per instance) while it serves at least half its
 *    assumed capacity is saturated and asks for at least double its
 *    instances (a batching model's short queue at low load is not).
 * 4. Down (hysteresis): only to ceil(peak × (1 + headroom + hysteresis) / capacity),
 *    where peak is the highest demand over the last scaleDownCooldownMs (the
 *    runner keeps that window), at most halving per step, and only
 *    scaleDownCooldownMs after the model's last change. Bursts that recur
 *    within the window keep the count up instead of making it flap.
 * 5. The host's budget: CPU instance slots, GPU instance slots per GPU and memory.
 *    Scale-downs are counted first (they free room), then scale-ups in order of
 *    pressure (demand / capacity). When memory is short, idle models (no
 *    request for idleUnloadMs, not pinned) are unloaded least recently used
 *    first; a model that still does not fit gets what fits and a HOLD
 *    decision saying what it lacked.
 * 6. Operators (operator-capacity.ts): a step model's demand is its direct
 *    demand plus each calling operator's demand × its calls, so the
 *    bottleneck steps (highest pressure) grow first and in proportion, a
 *    step is never sized beyond the operator's demand, and a shared model
 *    for the sum; the decision names the operator with the largest part.
 * 7. --max-instances-per-model and --max-instances cap every count; the
 *    count the model's config asks for (minInstances) is the floor: the
 *    scheduler adds instances on demand and removes only those it added
 *    (a pin may go lower: the admin's choice).
 *
 * GPU models (instance_group KIND_GPU): Triton's count is per listed GPU, so
 * a model on GPUs [a, b] grows and shrinks by one instance on each of them at
 * once (a step of 2), and each of its GPUs needs a free slot for that. A
 * KIND_GPU model on a host without GPUs, or whose GPUs the host does not
 * have, is never scaled (a HOLD says why when demand asks for more).
 *
 * 8. Hardware fit (hardware-fit.ts): a model whose config allows both CPU and
 *    GPU moves to the kind with the lowest cost per 1,000 inferences at the
 *    p99 budget (GPU only where the host has GPUs with free slots and memory),
 *    a scale-up cooldown after its last change, unless pinned; the MOVE
 *    replaces its scaling that period, sized for the demand on the new kind.
 *    An allowed kind without any hardware profile, or a bad parameter, is a
 *    HOLD saying so.
 *
 * 9. Batch jobs (issue 24): a model a running batch job sends to is sized on
 *    its online demand (its demand less the job's requests); the job gets
 *    instances only from idle room: after every other decision, a CPU model
 *    whose job keeps its instances at least half busy grows by one instance a
 *    period while CPU slots and memory are left (a scale-up cooldown after its
 *    last change), and these instances are given back first: an online
 *    scale-up short of room takes them back (SCALE_DOWN) before anything
 *    else; online scale-downs never go below them while the job runs, nor
 *    take instances the job keeps busy.
 *    The runner counts the instances added for the job (`batch.addedInstances`).
 *
 * Parked models (unloaded for memory) are not scaled: the gateway loads them
 * again when a request comes, and the next period sees them loaded.
 * Scheduler off: no decisions at all (counts stay where they are; pins too).
 */
import { chooseHardware, type HardwareFitInput } from "./hardware-fit.js";

/** LOAD is never decided here: the runner records it when a parked model was loaded again by a request. */
export type SchedulerActionKind = "SCALE_UP" | "SCALE_DOWN" | "UNLOAD" | "LOAD" | "HOLD" | "MOVE";

export interface SchedulerPolicy {
  /** Spare capacity kept above demand (0.25 = 25 %). */
  headroom: number;
  /** Extra margin before scaling down (0.2 = demand must fit with 20 % more than the headroom). */
  hysteresis: number;
  scaleUpCooldownMs: number;
  scaleDownCooldownMs: number;
  /** A model with no request for this long may be unloaded when memory is short. */
  idleUnloadMs: number;
  /** Per-instance requests/s assumed for a model without a perf report (conservative). */
  defaultCapacityRps: number;
  maxInstancesPerModel: number;
  maxInstancesPerHost: number;
}

export interface HostBudget {
  /** Instances of CPU models the host runs at once. */
  cpuSlots: number;
  /** Instances of GPU models each GPU runs at once. */
  gpuSlots: number;
  /** The host's GPUs (CUDA ordinals, from the gateway's inventory); empty on a host without GPUs. */
  gpuDevices?: readonly number[];
  memoryBytes: number;
}

export interface ModelState {
  model: string;
  /** Instances running now (0 when parked). */
  instances: number;
  parked: boolean;
  kind: "CPU" | "GPU";
  /** Requests per second over the last period. */
  demandRps: number;
  /** Highest demandRps over the last scaleDownCooldownMs (scale-downs follow it); defaults to demandRps. */
  peakDemandRps?: number;
  /** Per-instance throughput at the p99 budget from the latest perf report; null = none. */
  reportCapacityRps: number | null;
  memoryPerInstanceBytes: number;
  /** Last request (epoch ms); null = never since the gateway started. */
  lastUsedAt: number | null;
  /** The admin's pinned count, or null. */
  pinned: number | null;
  /** Last change the scheduler made (epoch ms), or null. */
  lastChangeAt: number | null;
  /** False when the gateway cannot rescale it (several instance groups, an operator). */
  scalable: boolean;
  /** Never scaled below this on demand (the config's instance count); default 1. */
  minInstances?: number;
  /** Requests waiting in the model's queue at the sample; default 0. */
  queued?: number;
  /** KIND_GPU: the GPUs its instance group lists (one instance on each per step of its count). */
  gpuDevices?: readonly number[];
  /**
   * Set when operators call the model (operator-capacity.ts): demandRps is then the model's direct demand plus the
   * operators' (sized for their summed demand), `operator` the one with the largest part (decisions record it), and
   * `note` says so in the reason. Saturation is then judged per operator (its bottleneck), not per model: a fast
   * step's short queue behind a burst is not demand the operator can use.
   */
  operatorDemand?: { operator: string; note: string; directRps: number };
  /** Set when the config names the kinds it may run on (operon_hardware_kinds): the hardware fit's inputs. */
  hardware?: HardwareFitInput;
  /**
   * Set while a batch job sends to the model: its requests per second (part of demandRps) and the instances the
   * scheduler added for it (rule 9), which go back first when online demand needs the room.
   */
  batch?: { demandRps: number; addedInstances: number };
}

/** Instances one step of a model's count adds: one per GPU of a GPU model, else 1. */
export function stepOf(m: ModelState): number {
  return m.kind === "GPU" ? Math.max(1, m.gpuDevices?.length ?? 1) : 1;
}

/** Instances of GPU models on each host GPU now (a model's instances spread evenly over its GPUs). */
export function gpuSlotsInUse(models: readonly ModelState[]): Map<number, number> {
  const perGpu = new Map<number, number>();
  for (const m of models) {
    if (m.kind !== "GPU" || m.parked) continue;
    for (const device of m.gpuDevices ?? []) perGpu.set(device, (perGpu.get(device) ?? 0) + m.instances / stepOf(m));
  }
  return perGpu;
}

/** Why a GPU model cannot be scaled on this host; undefined when it can. */
export function gpuProblem(m: ModelState, budget: HostBudget): string | undefined {
  if (m.kind !== "GPU") return undefined;
  const host = budget.gpuDevices ?? [];
  if (host.length === 0) return "a KIND_GPU model on a host without GPUs is never scaled";
  const missing = (m.gpuDevices ?? []).filter((device) => !host.includes(device));
  if (missing.length > 0) return `its GPU${missing.length === 1 ? "" : "s"} ${missing.join(", ")} not on this host`;
  if ((m.gpuDevices ?? []).length === 0) return "its instances' GPUs are unknown";
  return undefined;
}

export interface SchedulerInputs {
  enabled: boolean;
  policy: SchedulerPolicy;
  budget: HostBudget;
  models: ModelState[];
}

export interface SchedulerDecision {
  model: string;
  action: SchedulerActionKind;
  from: number;
  to: number;
  demandRps: number;
  capacityRps: number;
  capacitySource: "report" | "default";
  headroom: number;
  reason: string;
  /** The operator whose demand caused the decision (its largest part), or null for a model's own demand. */
  operator?: string | null;
  /** MOVE: the kind it moves to (`to` instances of it). */
  kind?: "CPU" | "GPU";
  /** Rule 9: an instance added for a batch job from idle room, or batch instances given back to online demand. */
  batch?: "grow" | "give-back";
}

const MIB = 1024 * 1024;

/** Per-instance capacity used for a model, and where it came from. */
export function capacityOf(model: ModelState, policy: SchedulerPolicy): { rps: number; source: "report" | "default" } {
  return model.reportCapacityRps !== null && model.reportCapacityRps > 0
    ? { rps: model.reportCapacityRps, source: "report" }
    : { rps: policy.defaultCapacityRps, source: "default" };
}

/** Instances that carry `demandRps` with `margin` to spare at `capacityRps` each (at least 1). */
export function instancesFor(demandRps: number, capacityRps: number, margin: number): number {
  return Math.max(1, Math.ceil((Math.max(0, demandRps) * (1 + margin)) / capacityRps - 1e-9));
}

/**
 * The idle models to unload, least recently used first, until `neededBytes`
 * are freed; empty when even all of them would not free enough (unloading
 * then helps no one). Pinned, busy (demand > 0), recently used and excluded
 * models are never chosen.
 */
export function lruVictims(
  models: ModelState[],
  neededBytes: number,
  now: number,
  idleUnloadMs: number,
  exclude: ReadonlySet<string>,
): ModelState[] {
  const idle = models
    .filter((m) => !m.parked && m.instances > 0 && m.pinned === null && m.demandRps === 0 && !exclude.has(m.model))
    .filter((m) => m.lastUsedAt === null || now - m.lastUsedAt >= idleUnloadMs)
    .sort((a, b) => (a.lastUsedAt ?? 0) - (b.lastUsedAt ?? 0) || a.model.localeCompare(b.model));
  const chosen: ModelState[] = [];
  let freed = 0;
  for (const model of idle) {
    if (freed >= neededBytes) break;
    chosen.push(model);
    freed += model.instances * model.memoryPerInstanceBytes;
  }
  return freed >= neededBytes ? chosen : [];
}

export function decide(inputs: SchedulerInputs, now: number): SchedulerDecision[] {
  if (!inputs.enabled) return [];
  const { policy, budget } = inputs;
  const decisions: SchedulerDecision[] = [];
  const base = (
    m: ModelState,
  ): Pick<SchedulerDecision, "model" | "demandRps" | "capacityRps" | "capacitySource" | "headroom" | "operator"> => {
    const capacity = capacityOf(m, policy);
    return {
      model: m.model,
      operator: m.operatorDemand?.operator ?? null,
      demandRps: m.demandRps,
      capacityRps: capacity.rps,
      capacitySource: capacity.source,
      headroom: policy.headroom,
    };
  };
  // Counts move in whole steps (a GPU model's GPUs); the per-model limit rounds down to one.
  const cap = (count: number, step = 1): number => {
    const limit = Math.max(step, Math.floor(policy.maxInstancesPerModel / step) * step);
    return Math.max(step, Math.min(Math.ceil(count / step) * step, limit));
  };

  // What each served model would like, before the budget.
  const targets = new Map<string, { to: number; reason: string; pinned: boolean }>();
  for (const m of inputs.models) {
    if (m.parked || m.instances === 0 || !m.scalable) continue;
    const { rps } = capacityOf(m, policy);
    const step = stepOf(m);
    if (m.pinned !== null) {
      const to = cap(m.pinned, step);
      if (to !== m.instances)
        targets.set(m.model, {
          to,
          pinned: true,
          reason: `pinned to ${m.pinned} by an admin${to !== m.pinned ? (to > m.pinned ? ` (rounded up to ${to}: ${step} GPUs, one instance on each per step)` : ` (capped at ${to} by --max-instances-per-model)`) : ""}`,
        });
      continue;
    }
    const sinceChange = m.lastChangeAt === null ? Number.POSITIVE_INFINITY : now - m.lastChangeAt;
    // Rule 9: sized on online demand; a batch job's queue is no saturation (it adapts to what it gets).
    const online = onlineDemandOf(m);
    const saturated =
      m.batch === undefined &&
      (m.queued ?? 0) >= m.instances &&
      (m.operatorDemand === undefined ? m.demandRps : m.operatorDemand.directRps) >= 0.5 * m.instances * rps;
    const needed = Math.max(instancesFor(online, rps, policy.headroom), saturated ? 2 * m.instances : 0);
    if (needed > m.instances) {
      if (sinceChange < policy.scaleUpCooldownMs) continue;
      const to = cap(needed, step);
      if (to === m.instances) continue;
      targets.set(m.model, {
        to,
        pinned: false,
        reason: `${m.operatorDemand !== undefined ? `${m.operatorDemand.note}; ` : ""}${saturated ? `saturated (${m.queued} requests waiting): at least doubling; ` : ""}${m.batch !== undefined ? "online " : ""}demand ${fmt(online)} req/s + ${pct(policy.headroom)} headroom needs ${needed} × ${fmt(rps)} req/s${to < needed ? `; capped at ${to} by --max-instances-per-model` : to > needed ? `; ${to} on its ${step} GPUs (count is per GPU)` : ""}`,
      });
      continue;
    }
    const peak = Math.max(online, (m.peakDemandRps ?? 0) - (m.batch?.demandRps ?? 0));
    const downTo =
      Math.ceil(
        Math.max(
          instancesFor(peak, rps, policy.headroom + policy.hysteresis),
          Math.ceil(m.instances / 2),
          (m.minInstances ?? 1) + (m.batch?.addedInstances ?? 0),
        ) / step,
      ) * step;
    // Rule 9: instances a running job keeps busy are not taken from it for lack of online demand.
    const jobBusy = m.batch !== undefined && m.demandRps >= 0.5 * m.instances * rps;
    if (downTo < m.instances && !jobBusy && sinceChange >= policy.scaleDownCooldownMs && (m.queued ?? 0) === 0) {
      targets.set(m.model, {
        to: downTo,
        pinned: false,
        reason: `${m.operatorDemand !== undefined ? `${m.operatorDemand.note}; ` : ""}${m.batch !== undefined ? "online " : ""}demand ${fmt(online)} req/s (peak ${fmt(peak)} in the last ${Math.round(policy.scaleDownCooldownMs / 1000)} s) fits ${downTo} × ${fmt(rps)} req/s with ${pct(policy.headroom + policy.hysteresis)} to spare (at most halving per step)`,
      });
    }
  }

  // The budget as the models use it now (parked ones use nothing).
  const live = inputs.models.filter((m) => !m.parked && m.instances > 0);
  const used = { cpu: 0, gpu: 0, memory: 0, instances: 0, perGpu: new Map<number, number>() };
  const add = (m: ModelState, count: number): void => {
    if (m.kind === "GPU") {
      used.gpu += count;
      const devices = m.gpuDevices ?? [];
      for (const device of devices) used.perGpu.set(device, (used.perGpu.get(device) ?? 0) + count / stepOf(m));
    } else used.cpu += count;
    used.memory += count * m.memoryPerInstanceBytes;
    used.instances += count;
  };
  for (const m of live) add(m, m.instances);

  // Hardware fit before the scale-downs and -ups: a move replaces the model's scaling this period.
  for (const m of live) {
    if (m.hardware === undefined || !m.scalable || m.pinned !== null) continue;
    const choice = chooseHardware(m, m.hardware, budget, used.perGpu, policy);
    if (choice.chosen === null || choice.configProblem) {
      if (choice.configProblem)
        decisions.push({
          ...base(m),
          action: "HOLD",
          from: m.instances,
          to: m.instances,
          reason: `hardware fit: ${choice.problem ?? choice.reason}`,
        });
      if (choice.chosen === null) continue;
    }
    if (choice.chosen === m.kind) continue;
    const sinceChange = m.lastChangeAt === null ? Number.POSITIVE_INFINITY : now - m.lastChangeAt;
    if (sinceChange < policy.scaleUpCooldownMs) continue;
    const candidate = choice.candidates.find((entry) => entry.kind === choice.chosen)!;
    const moved: ModelState = {
      ...m,
      kind: choice.chosen,
      ...(choice.chosen === "GPU" ? { gpuDevices: budget.gpuDevices ?? [] } : { gpuDevices: [] }),
    };
    const to = cap(candidate.instances ?? 1, stepOf(moved));
    targets.delete(m.model);
    add(m, -m.instances);
    add(moved, to);
    decisions.push({
      ...base(m),
      capacityRps: candidate.capacityRps ?? capacityOf(m, policy).rps,
      capacitySource: "report",
      action: "MOVE",
      from: m.instances,
      to,
      kind: choice.chosen,
      reason: `moves from ${m.kind} to ${choice.chosen}: ${choice.reason}; ${to} instance${to === 1 ? "" : "s"} for demand ${fmt(m.demandRps)} req/s + ${pct(policy.headroom)} headroom`,
    });
  }

  // Scale-downs first: they free room for the scale-ups.
  for (const m of live) {
    const target = targets.get(m.model);
    if (target === undefined || target.to >= m.instances) continue;
    add(m, target.to - m.instances);
    decisions.push({ ...base(m), action: "SCALE_DOWN", from: m.instances, to: target.to, reason: target.reason });
  }

  // Scale-ups, pins first, then by pressure (demand over what runs now). For an operator's steps the pressure is
  // its demand over the step's capacity, so its bottleneck steps come first and get the budget before the others.
  const ups = live
    .filter((m) => (targets.get(m.model)?.to ?? 0) > m.instances)
    .sort(
      (a, b) =>
        Number(targets.get(b.model)!.pinned) - Number(targets.get(a.model)!.pinned) ||
        pressure(b, policy) - pressure(a, policy) ||
        a.model.localeCompare(b.model),
    );
  const unloaded = new Set<string>();
  // Rule 9's bookkeeping: batch instances left per model, and what this period took back (for the decisions' counts).
  const batchAdded = new Map(live.map((m) => [m.model, m.batch?.addedInstances ?? 0]));
  for (const m of ups) {
    const target = targets.get(m.model)!;
    const want = target.to - m.instances;
    const problem = gpuProblem(m, budget);
    if (problem !== undefined) {
      decisions.push({
        ...base(m),
        action: "HOLD",
        from: m.instances,
        to: m.instances,
        reason: `wanted ${target.to} instances; not scaled: ${problem}`,
      });
      continue;
    }
    const step = stepOf(m);
    // A GPU model's step takes a slot on each of its GPUs: what the fullest of them has left.
    const typeSlotsLeft = (): number =>
      m.kind === "GPU"
        ? Math.min(...(m.gpuDevices ?? []).map((device) => budget.gpuSlots - (used.perGpu.get(device) ?? 0))) * step
        : budget.cpuSlots - used.cpu;
    const slotsLeft = (): number =>
      Math.max(0, Math.floor(Math.min(typeSlotsLeft(), policy.maxInstancesPerHost - used.instances) / step) * step);
    // Rule 9: instances added for batch jobs elsewhere go back first when this online scale-up lacks room.
    const short = (): number =>
      Math.max(
        want - slotsLeft(),
        Math.ceil((want * m.memoryPerInstanceBytes - (budget.memoryBytes - used.memory)) / m.memoryPerInstanceBytes),
      );
    for (const other of live) {
      if (short() <= 0) break;
      const added = batchAdded.get(other.model) ?? 0;
      if (other.model === m.model || added <= 0 || m.kind !== other.kind || unloaded.has(other.model)) continue;
      const back = Math.min(added, short());
      // Its count now: after this period's decisions on it so far (a scale-down, an earlier give-back).
      const from =
        decisions.findLast((decision) => decision.model === other.model && decision.action !== "HOLD")?.to ??
        other.instances;
      batchAdded.set(other.model, added - back);
      add(other, -back);
      decisions.push({
        ...base(other),
        action: "SCALE_DOWN",
        from,
        to: from - back,
        batch: "give-back",
        reason: `gives back ${back} instance${back === 1 ? "" : "s"} added for its batch job: online demand of ${m.model} needs the room (${target.reason})`,
      });
    }
    let grant = Math.min(want, slotsLeft());
    let memoryShort = grant * m.memoryPerInstanceBytes - (budget.memoryBytes - used.memory);
    if (memoryShort > 0) {
      const victims = lruVictims(
        live.filter((other) => !unloaded.has(other.model) && !targets.has(other.model)),
        memoryShort,
        now,
        policy.idleUnloadMs,
        new Set([m.model]),
      );
      for (const victim of victims) {
        unloaded.add(victim.model);
        add(victim, -victim.instances);
        decisions.push({
          ...base(victim),
          action: "UNLOAD",
          from: victim.instances,
          to: 0,
          reason: `memory is short for ${m.model} (${mib(memoryShort)} MiB more needed); ${victim.model} is the least recently used idle model (${victim.lastUsedAt === null ? "never used" : `last request ${Math.round((now - victim.lastUsedAt) / 1000)} s ago`}); it loads again on its next request`,
        });
      }
      // The unloads freed slots too; then whatever memory allows.
      grant =
        Math.floor(
          Math.min(
            want,
            slotsLeft(),
            Math.max(0, Math.floor((budget.memoryBytes - used.memory) / Math.max(1, m.memoryPerInstanceBytes))),
          ) / step,
        ) * step;
    }
    if (grant > 0) {
      add(m, grant);
      decisions.push({
        ...base(m),
        action: "SCALE_UP",
        from: m.instances,
        to: m.instances + grant,
        reason: target.reason + (grant < want ? `; ${want - grant} more do not fit the host's budget` : ""),
      });
    }
    if (grant < want) {
      decisions.push({
        ...base(m),
        action: "HOLD",
        from: m.instances,
        to: m.instances + grant,
        reason: `wanted ${target.to} instances; does not fit: ${fitProblem(m, want - grant, budget, used, policy)}`,
      });
    }
  }

  // Rule 9: batch jobs grow into the room every other decision left, one instance a model a period.
  for (const m of live) {
    if (m.batch === undefined || m.kind !== "CPU" || !m.scalable || m.pinned !== null || unloaded.has(m.model))
      continue;
    if (decisions.some((decision) => decision.model === m.model && decision.action !== "HOLD")) continue;
    const sinceChange = m.lastChangeAt === null ? Number.POSITIVE_INFINITY : now - m.lastChangeAt;
    const { rps } = capacityOf(m, policy);
    // Only while the job keeps what it has busy: an instance it would not use is no idle capacity filled.
    if (sinceChange < policy.scaleUpCooldownMs || m.demandRps < 0.5 * m.instances * rps) continue;
    const roomLeft =
      budget.cpuSlots - used.cpu >= 1 &&
      policy.maxInstancesPerHost - used.instances >= 1 &&
      m.instances + 1 <= policy.maxInstancesPerModel &&
      budget.memoryBytes - used.memory >= m.memoryPerInstanceBytes;
    if (!roomLeft) continue;
    add(m, 1);
    decisions.push({
      ...base(m),
      action: "SCALE_UP",
      from: m.instances,
      to: m.instances + 1,
      batch: "grow",
      reason: `a batch job sends ${fmt(m.batch.demandRps)} req/s and keeps its ${m.instances} instance${m.instances === 1 ? "" : "s"} busy; the host has CPU slots and memory idle: one more for the job (given back first when online demand needs the room)`,
    });
  }
  return decisions;
}

/** The requests online clients send: the model's demand less a running batch job's (rule 9). */
function onlineDemandOf(m: ModelState): number {
  return Math.max(0, m.demandRps - (m.batch?.demandRps ?? 0));
}

function pressure(m: ModelState, policy: SchedulerPolicy): number {
  return m.demandRps / (capacityOf(m, policy).rps * Math.max(1, m.instances));
}

function fitProblem(
  m: ModelState,
  missing: number,
  budget: HostBudget,
  used: { cpu: number; gpu: number; memory: number; instances: number; perGpu: Map<number, number> },
  policy: SchedulerPolicy,
): string {
  const problems: string[] = [];
  if (m.kind === "GPU") {
    const full = (m.gpuDevices ?? []).filter((device) => (used.perGpu.get(device) ?? 0) >= budget.gpuSlots);
    if (full.length > 0)
      problems.push(
        `GPU instance slots all used on GPU ${full.join(", ")} (${budget.gpuSlots} per GPU; each step of this model takes one on each of GPUs ${(m.gpuDevices ?? []).join(", ")})`,
      );
  } else if (used.cpu >= budget.cpuSlots) {
    problems.push(
      `CPU instance slots all used: ${used.cpu} CPU instances loaded, the budget is ${budget.cpuSlots}${used.cpu > budget.cpuSlots ? ": more are loaded than the budget holds, so no CPU model scales up until some go or --scheduler-cpu-slots raises it" : ""}`,
    );
  }
  if (used.instances >= policy.maxInstancesPerHost)
    problems.push(`--max-instances ${policy.maxInstancesPerHost} reached`);
  if (budget.memoryBytes - used.memory < m.memoryPerInstanceBytes) {
    problems.push(
      `memory: ${mib(budget.memoryBytes - used.memory)} MiB left of ${mib(budget.memoryBytes)} MiB, ${mib(m.memoryPerInstanceBytes)} MiB per instance, and no idle model to unload`,
    );
  }
  return `${missing} more instance${missing === 1 ? "" : "s"} (${problems.join("; ") || "budget"})`;
}

const fmt = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
const pct = (value: number): string => `${Math.round(value * 100)} %`;
const mib = (bytes: number): string => (bytes / MIB).toFixed(0);
