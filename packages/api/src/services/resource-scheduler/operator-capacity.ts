import { specSteps } from "@operon/operator-spec/spec-summary";

/**
 * Operators as the unit of capacity (GroupAssign), pure: no clock, database
 * or gateway here; the resource scheduler's runner gathers the inputs.
 *
 * An operator can carry only as much traffic as its weakest step. A model
 * step's capacity, in operator requests per second, is its model's
 * per-instance throughput at the p99 budget (latest perf report, or the
 * default) × the model's instances ÷ the calls one operator request makes
 * of that model (two steps calling one model share its instances, so each
 * request makes two calls of it). The operator's capacity is the least of
 * its steps'; the steps that have it are its bottleneck. Steps of a route
 * are counted as if they always ran (an upper bound of the calls, so the
 * capacity errs low). Routes and exits call no model and have no capacity.
 */
export interface OperatorStep {
  step: string;
  model: string;
}

/** What the capacity needs of one step model. */
export interface StepModelCapacity {
  /** Instances serving now (0 when parked or not loaded). */
  instances: number;
  perInstanceRps: number;
  source: "report" | "default";
}

export interface StepCapacity {
  step: string;
  model: string;
  /** Calls of the step's model per operator request (the model steps of the operator that call it). */
  callsPerRequest: number;
  instances: number;
  perInstanceRps: number;
  capacitySource: "report" | "default";
  /** Operator requests per second the step carries: perInstanceRps × instances ÷ callsPerRequest. */
  capacityRps: number;
  bottleneck: boolean;
}

export interface OperatorCapacity {
  operator: string;
  /** The least step capacity (operator requests/s); null for an operator without model steps. */
  capacityRps: number | null;
  /** The steps whose capacity is the operator's (several when tied). */
  bottleneckSteps: string[];
  steps: StepCapacity[];
}

/** The model steps of a spec (id and model), in step order; anything that is not a model step is skipped. */
export function modelStepsOf(spec: unknown): OperatorStep[] {
  const steps: OperatorStep[] = [];
  for (const step of specSteps(spec)) {
    if (step["kind"] === "model" && typeof step["model"] === "string" && typeof step["id"] === "string")
      steps.push({ step: step["id"], model: step["model"] });
  }
  return steps;
}

/** Calls of each model per operator request: one per model step that calls it. */
export function callsPerModel(steps: readonly OperatorStep[]): Map<string, number> {
  const calls = new Map<string, number>();
  for (const { model } of steps) calls.set(model, (calls.get(model) ?? 0) + 1);
  return calls;
}

/** Relative tolerance for ties between step capacities (floating point). */
const TIE = 1e-9;

export function operatorCapacity(
  operator: string,
  steps: readonly OperatorStep[],
  modelOf: (model: string) => StepModelCapacity,
): OperatorCapacity {
  const calls = callsPerModel(steps);
  const rows: StepCapacity[] = steps.map(({ step, model }) => {
    const capacity = modelOf(model);
    const callsPerRequest = calls.get(model)!;
    return {
      step,
      model,
      callsPerRequest,
      instances: capacity.instances,
      perInstanceRps: capacity.perInstanceRps,
      capacitySource: capacity.source,
      capacityRps: (capacity.perInstanceRps * capacity.instances) / callsPerRequest,
      bottleneck: false,
    };
  });
  if (rows.length === 0) return { operator, capacityRps: null, bottleneckSteps: [], steps: rows };
  const least = Math.min(...rows.map((row) => row.capacityRps));
  for (const row of rows) row.bottleneck = row.capacityRps <= least * (1 + TIE) + TIE;
  return {
    operator,
    capacityRps: least,
    bottleneckSteps: rows.filter((row) => row.bottleneck).map((row) => row.step),
    steps: rows,
  };
}

/** One operator's traffic over the last period, as the runner measured it. */
export interface OperatorTraffic {
  operator: string;
  steps: readonly OperatorStep[];
  /** Operator requests completed per second (success + failure). */
  completedRps: number;
  /** Requests arriving per second: completed + the change of the requests in flight, per second. */
  arrivalRps: number;
  /**
   * Closed-loop clients, whose arrivals completions cap (measureOperatorTraffic says when). The operator then asks
   * for twice what it completes on its held models only.
   */
  saturated: boolean;
  /** The step models where its requests wait: the most requests waiting per instance, at least one. */
  heldModels: readonly string[];
  /**
   * Calls of each step model the operator completed per second over the period, as the gateway counted them (each
   * try of a retry, a fallback model's calls included); undefined from a gateway that does not count them.
   */
  callRps?: ReadonlyMap<string, number> | undefined;
}

/** One operator as a period's sample saw it (GET /v2/operon/scaling: operators). */
export interface OperatorSample {
  inFlight: number;
  /** Cumulative completed calls per model since the operator was loaded; absent from older gateways. */
  modelCalls?: Readonly<Record<string, number>> | undefined;
}

/**
 * Requests in flight within this much of each other (or of the larger count × IN_FLIGHT_STEADY_SHARE) count as
 * holding steady: a closed loop's count jitters by the requests between an answer and the next send.
 */
const IN_FLIGHT_STEADY = 2;
const IN_FLIGHT_STEADY_SHARE = 0.1;
/** In flight above this many times what its completions keep busy at the steps' service times: requests queue. */
const QUEUEING_FACTOR = 3;

/**
 * One operator's traffic over a period from two samples. Arrivals are completions + the growth of the requests in
 * flight (a draining backlog makes the growth negative: arrivals below completions).
 *
 * Saturated (closed-loop clients, whose arrivals completions cap) needs all of:
 * - requests waiting at a step model, one per instance or more (the held models: the most per instance);
 * - the requests in flight holding steady: a growing or draining backlog is an open loop, its arrivals measured;
 * - the held models kept their instances since the last sample (after a scale-up the backlog drains);
 * - more in flight than QUEUEING_FACTOR × what the completions keep busy without waiting (Little's law:
 *   completions × the steps' summed service times, 1 ÷ per-instance throughput each). An open loop below
 *   capacity has a request or two queued now and then; a saturated closed loop has its clients' all.
 */
export function measureOperatorTraffic(input: {
  capacity: OperatorCapacity;
  steps: readonly OperatorStep[];
  completedRps: number;
  intervalSecs: number;
  before: OperatorSample | undefined;
  now: OperatorSample;
  /** Each model's instances at the previous sample. */
  instancesBefore: ReadonlyMap<string, number>;
  /** Each model's requests waiting in its queue now. */
  queued: ReadonlyMap<string, number>;
}): OperatorTraffic {
  const { capacity, intervalSecs } = input;
  const inFlightBefore = input.before?.inFlight ?? 0;
  const growth = (input.now.inFlight - inFlightBefore) / intervalSecs;
  const steady =
    Math.abs(input.now.inFlight - inFlightBefore) <=
    Math.max(IN_FLIGHT_STEADY, IN_FLIGHT_STEADY_SHARE * Math.max(input.now.inFlight, inFlightBefore));
  const waiting = capacity.steps
    .filter((step) => step.instances > 0)
    .map((step) => ({ step, perInstance: (input.queued.get(step.model) ?? 0) / step.instances }));
  const most = Math.max(0, ...waiting.map((entry) => entry.perInstance));
  const held = most >= 1 ? waiting.filter((entry) => entry.perInstance === most).map((entry) => entry.step) : [];
  const heldKept = held.every((step) => input.instancesBefore.get(step.model) === step.instances);
  const serviceSecs = capacity.steps.reduce(
    (sum, step) => sum + (step.perInstanceRps > 0 ? 1 / step.perInstanceRps : 0),
    0,
  );
  const queueing = input.now.inFlight > QUEUEING_FACTOR * input.completedRps * serviceSecs;
  const saturated = held.length > 0 && steady && heldKept && queueing;
  let callRps: Map<string, number> | undefined;
  if (input.now.modelCalls !== undefined) {
    callRps = new Map();
    for (const [model, after] of Object.entries(input.now.modelCalls)) {
      const before = input.before?.modelCalls?.[model] ?? 0;
      // A count that went down: the operator was loaded again since; it counts from 0.
      callRps.set(model, (after >= before ? after - before : after) / intervalSecs);
    }
  }
  return {
    operator: capacity.operator,
    steps: input.steps,
    completedRps: input.completedRps,
    arrivalRps: input.completedRps + growth,
    saturated,
    heldModels: [...new Set(held.map((step) => step.model))],
    callRps,
  };
}

/** The demand one operator puts on its models, and why. */
export interface OperatorDemand {
  operator: string;
  /** Operator requests per second the scheduler sizes the steps for. */
  demandRps: number;
  /** What the demand is made of, for the decisions' reasons. */
  basis: string;
  /** Capped: even its bottleneck at --max-instances-per-model carries less; the other steps are sized for that. */
  cappedAtRps: number | null;
}

/** A model's demand with the operators' part in it. */
export interface ModelDemand {
  model: string;
  /** Requests per second to size the model for: direct + Σ operators' demand × calls. */
  demandRps: number;
  /** Requests that came to the model directly (not as an operator's step), per second. */
  directRps: number;
  /** Each operator's part (its demand × its calls of the model), largest first. */
  fromOperators: Array<{ operator: string; rps: number }>;
}

/**
 * The demand the operators put on their step models, summed per model with
 * the model's own (direct) requests: a model shared by several operators is
 * sized for all of them.
 *
 * - An operator's demand is its arrival rate (completions alone are capped by
 *   the bottleneck step: an open-loop client's surplus shows as a growing
 *   backlog). A saturated closed-loop operator asks for twice its completions
 *   on its held models (where its requests wait), as a saturated model does;
 *   its other steps are sized for the arrivals measured (they do not hold it).
 * - No step is sized beyond what the operator can use: the demand is capped
 *   at what its bottleneck carries at --max-instances-per-model.
 * - A model's direct demand is what it completed less the calls the operators
 *   made of it over the period (never below 0). The gateway counts those calls
 *   per operator and model; from a gateway that does not, they are taken as
 *   the larger of the operator's completions and arrivals × its calls of the
 *   model (an upper bound: a step before the bottleneck completes the
 *   arrivals, not the operator's completions). The operators' part is their
 *   demand × their calls of the model.
 */
export function operatorDemands(
  traffic: readonly OperatorTraffic[],
  measuredModelRps: ReadonlyMap<string, number>,
  perInstanceRps: (model: string) => number,
  maxInstancesPerModel: number,
): { operators: OperatorDemand[]; models: Map<string, ModelDemand> } {
  const operators: OperatorDemand[] = [];
  const viaOperators = new Map<string, number>();
  const parts = new Map<string, Array<{ operator: string; rps: number }>>();
  for (const entry of traffic) {
    const calls = callsPerModel(entry.steps);
    if (calls.size === 0) continue;
    const arrivals = Math.max(0, entry.arrivalRps);
    const reachable = Math.min(
      ...[...calls].map(([model, count]) => (perInstanceRps(model) * maxInstancesPerModel) / count),
    );
    const saturatedRps = entry.saturated ? 2 * entry.completedRps : 0;
    const doubled = saturatedRps > arrivals;
    const wanted = doubled ? saturatedRps : arrivals;
    const cappedAtRps = wanted > reachable ? reachable : null;
    const demandRps = Math.min(wanted, reachable);
    // The steps where its requests do not wait: sized for the arrivals (capped alike), never for the doubling.
    const othersRps = Math.min(arrivals, reachable);
    let basis = doubled
      ? `saturated (requests wait at ${entry.heldModels.map((model) => `'${model}'`).join(", ")} while its requests in flight hold steady): twice the ${fmt(entry.completedRps)} req/s it completes there, ${fmt(arrivals)} req/s arriving on its other steps`
      : `${fmt(arrivals)} req/s arriving (${fmt(entry.completedRps)} completed)`;
    if (cappedAtRps !== null)
      basis += `; capped at ${fmt(cappedAtRps)} req/s, what its bottleneck carries at --max-instances-per-model ${maxInstancesPerModel}`;
    operators.push({ operator: entry.operator, demandRps, basis, cappedAtRps });
    for (const [model, count] of calls) {
      const called = entry.callRps?.get(model) ?? Math.max(entry.completedRps, arrivals) * count;
      viaOperators.set(model, (viaOperators.get(model) ?? 0) + called);
      const list = parts.get(model) ?? [];
      const rps = doubled && entry.heldModels.includes(model) ? demandRps : othersRps;
      list.push({ operator: entry.operator, rps: rps * count });
      parts.set(model, list);
    }
  }
  const models = new Map<string, ModelDemand>();
  for (const [model, list] of parts) {
    const directRps = Math.max(0, (measuredModelRps.get(model) ?? 0) - (viaOperators.get(model) ?? 0));
    list.sort((a, b) => b.rps - a.rps || a.operator.localeCompare(b.operator));
    models.set(model, {
      model,
      demandRps: directRps + list.reduce((sum, part) => sum + part.rps, 0),
      directRps,
      fromOperators: list,
    });
  }
  return { operators, models };
}

const fmt = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
