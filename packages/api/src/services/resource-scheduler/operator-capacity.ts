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
   * The bottleneck step's model has requests waiting (at least one per instance) while the backlog does not grow:
   * closed-loop clients, whose arrivals completions cap. The operator then asks for twice what it completes.
   */
  saturated: boolean;
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
 *   backlog); a saturated closed-loop operator asks for twice its completions,
 *   as a saturated model does.
 * - No step is sized beyond what the operator can use: the demand is capped
 *   at what its bottleneck carries at --max-instances-per-model.
 * - A model's direct demand is what it completed less the operators' calls
 *   completed over the period (never below 0); the operators' part is their
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
    let demandRps = arrivals;
    let basis = `${fmt(arrivals)} req/s arriving (${fmt(entry.completedRps)} completed)`;
    if (entry.saturated && 2 * entry.completedRps > demandRps) {
      demandRps = 2 * entry.completedRps;
      basis = `saturated (its bottleneck step has requests waiting): twice the ${fmt(entry.completedRps)} req/s it completes`;
    }
    const reachable = Math.min(
      ...[...calls].map(([model, count]) => (perInstanceRps(model) * maxInstancesPerModel) / count),
    );
    const cappedAtRps = demandRps > reachable ? reachable : null;
    if (cappedAtRps !== null) {
      demandRps = cappedAtRps;
      basis += `; capped at ${fmt(cappedAtRps)} req/s, what its bottleneck carries at --max-instances-per-model ${maxInstancesPerModel}`;
    }
    operators.push({ operator: entry.operator, demandRps, basis, cappedAtRps });
    for (const [model, count] of calls) {
      viaOperators.set(model, (viaOperators.get(model) ?? 0) + entry.completedRps * count);
      const list = parts.get(model) ?? [];
      list.push({ operator: entry.operator, rps: demandRps * count });
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
