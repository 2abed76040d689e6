/**
 * An operator's usage in one sampling interval, from its step models' (issue 27 item 10: operators in the cost
 * table).
 *
 * An operator (a registered DAG or a repository ensemble) runs no worker of its own: its requests cost what its
 * steps' calls cost. The gateway counts, per operator, the calls of each model its steps completed
 * (GET /v2/operon/scaling: operators[].modelCalls, cumulative since the operator was loaded), and each step model's
 * own statistics count those calls among its requests. So an operator is attributed, for each step model, the
 * share of that model's usage its calls make:
 *
 *     share(o, m)     = users' calls of m by o / max(users' requests of m, Σ users' calls of m by every operator)
 *     cpuUtilization  = Σ_m share(o, m) × cpuUtilization(m)          (the same for the GPU)
 *
 * Chosen over "the operator's requests × its steps' cost per request" because it needs no per-request cost of a
 * step (which varies with batch size and with who else called the model in the interval) and because the shares of
 * one model never sum past 1: the operators' parts of a step model are a breakdown of that model's cost, never
 * added to it. Costs therefore list operators beside models but total models only (cost-model.ts).
 *
 * Users' calls: an operator's perf traffic (tagged requests) calls its steps too; those calls are taken out by the
 * operator's users' share of its requests, as the step models' own requests leave perf traffic out. The max() in
 * the denominator keeps the shares within the model's usage when the statistics and the call counts were read a
 * moment apart.
 */

/** An operator's cumulative counters as the gateway reports them (summed over its versions). */
export interface OperatorCounters {
  /** Users' requests (perf traffic out). */
  requests: number;
  /** Every request, perf traffic included. */
  allRequests: number;
  /** Users' inferences. */
  inferences: number;
  /** Completed calls of each step model, perf traffic included. */
  modelCalls: Readonly<Record<string, number>>;
}

/** A step model's usage in the interval (summed over its versions): its usage sample rows. */
export interface StepModelUsage {
  /** Users' requests (the operators' calls among them). */
  requests: number;
  cpuUtilization: number | null;
  gpuUtilization: number | null;
}

export interface OperatorUsage {
  operator: string;
  requests: number;
  inferences: number;
  cpuUtilization: number | null;
  gpuUtilization: number | null;
}

/** A cumulative counter's change; a counter that went down (the operator reloaded) counts from 0. */
function delta(now: number, before: number | undefined): number {
  return before !== undefined && before <= now ? now - before : Math.max(0, now);
}

/**
 * The interval's row of every operator that had requests or step calls in it. `before` undefined for an operator
 * that was not served at the last sample: its counters count from 0.
 */
export function operatorUsage(
  before: ReadonlyMap<string, OperatorCounters>,
  now: ReadonlyMap<string, OperatorCounters>,
  models: ReadonlyMap<string, StepModelUsage>,
): OperatorUsage[] {
  const calls = new Map<string, Map<string, number>>();
  const claimed = new Map<string, number>();
  const counts = new Map<string, { requests: number; inferences: number }>();
  for (const [operator, current] of now) {
    const previous = before.get(operator);
    // One reset test for all of an operator's counters: a reload restarts them together.
    const reset = previous !== undefined && previous.allRequests > current.allRequests;
    const base = reset ? undefined : previous;
    const allRequests = delta(current.allRequests, base?.allRequests);
    const requests = Math.min(allRequests, delta(current.requests, base?.requests));
    const usersShare = allRequests > 0 ? requests / allRequests : 1;
    const own = new Map<string, number>();
    for (const [model, total] of Object.entries(current.modelCalls)) {
      const users = delta(total, base?.modelCalls[model]) * usersShare;
      if (users <= 0) continue;
      own.set(model, users);
      claimed.set(model, (claimed.get(model) ?? 0) + users);
    }
    if (allRequests === 0 && own.size === 0) continue;
    calls.set(operator, own);
    counts.set(operator, { requests, inferences: delta(current.inferences, base?.inferences) });
  }

  const rows: OperatorUsage[] = [];
  for (const [operator, own] of calls) {
    let cpu: number | null = null;
    let gpu: number | null = null;
    for (const [model, users] of own) {
      const usage = models.get(model);
      if (usage === undefined) continue;
      const denominator = Math.max(usage.requests, claimed.get(model) ?? 0);
      if (denominator <= 0) continue;
      const share = users / denominator;
      if (usage.cpuUtilization !== null) cpu = (cpu ?? 0) + share * usage.cpuUtilization;
      if (usage.gpuUtilization !== null) gpu = (gpu ?? 0) + share * usage.gpuUtilization;
    }
    rows.push({ operator, ...counts.get(operator)!, cpuUtilization: cpu, gpuUtilization: gpu });
  }
  return rows;
}
