/**
 * Hardware fit, pure: which kind (CPU or GPU) a model should run on, by the
 * cost of 1,000 inferences at the p99 budget. The runner
 * (resource-scheduler.ts) gathers the inputs; decide() (scheduler-decisions.ts)
 * moves the model when the choice differs from the kind it runs on.
 *
 * - The kinds a model may run on are its config's `operon_hardware_kinds`
 *   parameter ("CPU,GPU"); a model without it is never moved.
 * - A kind's capacity is the per-instance throughput at the p99 budget from
 *   the latest perf report measured on a hardware profile of that kind, and
 *   its price that profile's: an instance-hour costs the profile's CPU part
 *   of the price over the host's CPU slots (CPU), or its GPU part
 *   (gpuPriceShare) over its GPUs × GPU slots per GPU (GPU). Then
 *       cost per 1,000 inferences = instance-hour price ÷ (throughput × 3.6)
 *   (an hour is 3,600 s; per 1,000 inferences: × 1,000).
 * - A kind is a candidate only with a profile, a report within the budget,
 *   and, for the GPU, GPUs on this host (none: never tried), a free slot on
 *   each for the instances the demand needs, and GPU memory for them.
 * - The cheapest candidate wins; a tie keeps the kind the model runs on
 *   (a move costs a reload). Candidates priced in different currencies are
 *   not compared: no choice, and the reason says so.
 */

/** What the choice reads of a model (scheduler-decisions.ts's ModelState has it; not imported: it imports this). */
export interface FitModel {
  kind: "CPU" | "GPU";
  instances: number;
  demandRps: number;
  minInstances?: number;
  gpuDevices?: readonly number[];
  memoryPerInstanceBytes: number;
}

/** What the choice reads of the host's budget (HostBudget) and the policy (SchedulerPolicy). */
export interface FitBudget {
  cpuSlots: number;
  gpuSlots: number;
  gpuDevices?: readonly number[];
}

export type HardwareKindName = "CPU" | "GPU";
export const HARDWARE_KINDS: readonly HardwareKindName[] = ["CPU", "GPU"];

/** The hardware profile a kind's report was measured on (its price). */
export interface KindProfile {
  name: string;
  costPerHour: number;
  currency: string;
  /** Share of costPerHour that pays for the GPUs (0 on a CPU profile). */
  gpuPriceShare: number;
  gpuCount: number;
}

/** What is known of one allowed kind. */
export interface KindMeasure {
  kind: HardwareKindName;
  /** Whether any hardware profile of the kind exists (without one the kind cannot be priced: a config error). */
  profileExists: boolean;
  /** The profile of the latest successful perf report measured on a profile of this kind; null: none. */
  profile: KindProfile | null;
  /** Per-instance throughput at the p99 budget from that report; null: no step within the budget (or no report). */
  capacityRps: number | null;
}

/** A model's hardware fit inputs (ModelState.hardware). */
export interface HardwareFitInput {
  /** The kinds its config allows, parsed; empty when `problem` is set. */
  allowed: HardwareKindName[];
  /** What is wrong with the parameter itself, or undefined. */
  problem?: string;
  measures: KindMeasure[];
  /** Free GPU memory per host GPU (bytes); a GPU missing here is not limited by memory (unknown). */
  gpuFreeMemoryBytes?: ReadonlyMap<number, number>;
}

export interface HardwareCandidate {
  kind: HardwareKindName;
  profile: string | null;
  currency: string | null;
  capacityRps: number | null;
  /** What one instance-hour of the kind costs, and 1,000 inferences at its capacity; null when not priced. */
  instanceHourPrice: number | null;
  costPer1000: number | null;
  /** Instances the demand needs on this kind (GPU: a multiple of the host's GPUs). */
  instances: number | null;
  eligible: boolean;
  /** Why it is (not) a candidate, in words. */
  why: string;
}

export interface HardwareChoice {
  candidates: HardwareCandidate[];
  /** The kind to run on; null when none is eligible (or they cannot be compared). */
  chosen: HardwareKindName | null;
  reason: string;
  /** True when the config itself is wrong (a bad parameter, an allowed kind without any profile): worth a HOLD. */
  configProblem: boolean;
  /** What is wrong with the config, in words, when configProblem. */
  problem?: string;
}

/** Parses the operon_hardware_kinds parameter ("CPU,GPU", "KIND_GPU", any case): the kinds, or what is wrong. */
export function parseHardwareKinds(raw: string): { kinds: HardwareKindName[] } | { problem: string } {
  const entries = raw
    .split(",")
    .map((entry) =>
      entry
        .trim()
        .toUpperCase()
        .replace(/^KIND_/, ""),
    )
    .filter((entry) => entry !== "");
  if (entries.length === 0)
    return { problem: `parameter operon_hardware_kinds is empty: list the kinds the model may run on, e.g. "CPU,GPU"` };
  const unknown = entries.filter((entry) => !HARDWARE_KINDS.includes(entry as HardwareKindName));
  if (unknown.length > 0)
    return {
      problem: `parameter operon_hardware_kinds names ${unknown.map((entry) => `'${entry}'`).join(", ")}: the kinds are CPU and GPU`,
    };
  return { kinds: HARDWARE_KINDS.filter((kind) => entries.includes(kind)) };
}

/** One instance-hour of `kind` on `profile`: its CPU part over the CPU slots, or its GPU part over GPUs × GPU slots. */
export function instanceHourPrice(profile: KindProfile, kind: HardwareKindName, budget: FitBudget): number {
  if (kind === "GPU")
    return (
      (profile.costPerHour * profile.gpuPriceShare) / (Math.max(1, profile.gpuCount) * Math.max(1, budget.gpuSlots))
    );
  return (profile.costPerHour * (1 - profile.gpuPriceShare)) / Math.max(1, budget.cpuSlots);
}

/** Cost of 1,000 inferences at `throughputRps` for `pricePerHour`: price ÷ (inferences per hour ÷ 1,000). */
export function costPer1000Inferences(pricePerHour: number, throughputRps: number): number {
  return pricePerHour / (throughputRps * 3.6);
}

/**
 * The choice for model `m`. `gpuSlotsUsed`: instances of GPU models on each host GPU now, this model's own
 * included (they are left out when it runs on the GPU already: a move frees them).
 */
export function chooseHardware(
  m: FitModel,
  fit: HardwareFitInput,
  budget: FitBudget,
  gpuSlotsUsed: ReadonlyMap<number, number>,
  policy: { headroom: number },
): HardwareChoice {
  if (fit.problem !== undefined)
    return {
      candidates: [],
      chosen: null,
      reason: `not moved: ${fit.problem}`,
      configProblem: true,
      problem: fit.problem,
    };
  const candidates = fit.measures
    .filter((measure) => fit.allowed.includes(measure.kind))
    .map((measure) => candidateOf(m, measure, fit, budget, gpuSlotsUsed, policy));
  const missing = fit.measures.filter((measure) => fit.allowed.includes(measure.kind) && !measure.profileExists);
  const configProblem = missing.length > 0;
  const problem = configProblem
    ? { problem: missing.map((measure) => `${measure.kind}: ${noProfile(measure.kind)}`).join("; ") }
    : {};
  const eligible = candidates.filter((candidate) => candidate.eligible);
  const summary = candidates.map((candidate) => `${candidate.kind}: ${candidate.why}`).join("; ");
  if (eligible.length === 0)
    return { candidates, chosen: null, reason: `no kind can be chosen (${summary})`, configProblem, ...problem };
  const currencies = new Set(eligible.map((candidate) => candidate.currency));
  if (currencies.size > 1)
    return {
      candidates,
      chosen: null,
      reason: `not compared: the candidates are priced in different currencies (${[...currencies].join(", ")})`,
      configProblem,
      ...problem,
    };
  // Cheapest first; on a tie the kind it runs on (a move costs a reload for nothing).
  const best = [...eligible].sort(
    (a, b) => a.costPer1000! - b.costPer1000! || Number(b.kind === m.kind) - Number(a.kind === m.kind),
  )[0]!;
  const others = candidates.filter((candidate) => candidate !== best);
  const versus = others
    .map((candidate) =>
      candidate.eligible
        ? `${candidate.kind} ${money(candidate.costPer1000!)}`
        : `${candidate.kind} not a candidate: ${candidate.why}`,
    )
    .join("; ");
  return {
    candidates,
    chosen: best.kind,
    reason: `${best.kind} is the cheapest: ${money(best.costPer1000!)} ${best.currency} per 1,000 inferences at the p99 budget${versus !== "" ? ` (vs ${versus})` : ""}`,
    configProblem,
    ...problem,
  };
}

function candidateOf(
  m: FitModel,
  measure: KindMeasure,
  fit: HardwareFitInput,
  budget: FitBudget,
  gpuSlotsUsed: ReadonlyMap<number, number>,
  policy: { headroom: number },
): HardwareCandidate {
  // Priced whenever measured, so that the console shows what a kind would cost even where it is not a candidate.
  const price =
    measure.profile !== null && measure.capacityRps !== null && measure.capacityRps > 0
      ? instanceHourPrice(measure.profile, measure.kind, budget)
      : null;
  const base = {
    kind: measure.kind,
    profile: measure.profile?.name ?? null,
    currency: measure.profile?.currency ?? null,
    capacityRps: measure.capacityRps,
    instanceHourPrice: price,
    costPer1000: price === null ? null : costPer1000Inferences(price, measure.capacityRps!),
    instances: null,
  };
  const refuse = (why: string): HardwareCandidate => ({ ...base, eligible: false, why });
  const devices = budget.gpuDevices ?? [];
  // First: on a host without a GPU the GPU is never tried, whatever is measured or priced.
  if (measure.kind === "GPU" && devices.length === 0) return refuse("this host has no GPU");
  if (!measure.profileExists) return refuse(noProfile(measure.kind));
  if (measure.profile === null)
    return refuse(`no successful perf report measured on a ${measure.kind} hardware profile`);
  if (price === null || measure.capacityRps === null)
    return refuse(`its latest ${measure.kind} perf report has no step within the p99 budget`);
  const priced = { ...base, costPer1000: base.costPer1000! };
  const needed = Math.max(
    m.minInstances ?? 1,
    Math.ceil((Math.max(0, m.demandRps) * (1 + policy.headroom)) / measure.capacityRps - 1e-9),
    1,
  );
  const perInstance = `${money(price)} ${measure.profile.currency} an instance-hour ÷ (${fmt(measure.capacityRps)} req/s × 3.6) = ${money(priced.costPer1000)} per 1,000 (profile '${measure.profile.name}')`;
  if (measure.kind === "CPU") return { ...priced, instances: needed, eligible: true, why: perInstance };
  // One instance per GPU per round (a KIND_GPU group without `gpus` uses them all).
  const perGpu = Math.ceil(needed / devices.length);
  const instances = perGpu * devices.length;
  const own = m.kind === "GPU" ? m.instances / Math.max(1, (m.gpuDevices ?? devices).length) : 0;
  const short = devices.filter((device) => budget.gpuSlots - ((gpuSlotsUsed.get(device) ?? 0) - own) < perGpu);
  if (short.length > 0)
    return {
      ...priced,
      instances,
      eligible: false,
      why: `needs ${perGpu} GPU slot${perGpu === 1 ? "" : "s"} on each GPU; GPU ${short.join(", ")} ha${short.length === 1 ? "s" : "ve"} fewer free (${budget.gpuSlots} per GPU)`,
    };
  const needBytes = perGpu * m.memoryPerInstanceBytes;
  const lacking = devices.filter((device) => {
    const free = fit.gpuFreeMemoryBytes?.get(device);
    return free !== undefined && free + (m.kind === "GPU" ? own * m.memoryPerInstanceBytes : 0) < needBytes;
  });
  if (lacking.length > 0)
    return {
      ...priced,
      instances,
      eligible: false,
      why: `needs ${mib(needBytes)} MiB of GPU memory on each GPU; GPU ${lacking.join(", ")} ha${lacking.length === 1 ? "s" : "ve"} ${lacking.map((device) => `${mib(fit.gpuFreeMemoryBytes!.get(device)!)} MiB`).join(", ")} free`,
    };
  return { ...priced, instances, eligible: true, why: perInstance };
}

const noProfile = (kind: HardwareKindName): string =>
  `the model allows ${kind}, but no ${kind} hardware profile exists: add one (Costs)`;
const money = (value: number): string => (value >= 1 ? value.toFixed(2) : value.toPrecision(3));
const fmt = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
const mib = (bytes: number): string => (bytes / (1024 * 1024)).toFixed(0);
