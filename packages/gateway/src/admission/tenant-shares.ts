import { ANONYMOUS_TENANT, type TenantGrant } from "@operon/protocol/api-keys";
import { OperonError } from "@operon/protocol/errors";

/**
 * Traffic shares per tenant: a start-time fair queue (SFQ, Goyal et al.
 * 1996) in front of each model's own scheduler.
 *
 * Each model gets a gate with a number of *slots*: how many requests may be
 * inside the model's scheduler at once (2 × instances × max(1, max batch
 * size): enough to keep every instance busy and batches full). While a slot
 * is free and nobody waits, a request goes straight through, whatever its
 * tenant (work-conserving: idle capacity is anyone's). Once the slots are
 * full (the model is *contended*), requests wait here in one FIFO lane per
 * tenant, and a freed slot goes to the lane whose head has the smallest
 * start tag.
 *
 * Tags are in *normalized units*: a request costs its batch items times the
 * model's measured compute time per inference in milliseconds (an EWMA of
 * compute_infer / executed batch size; 1 until the model's first execution
 * is measured). A request of tenant i with cost c gets the start tag
 * S = max(V, F_i) and moves the tenant's finish tag to F_i = S + c / share_i;
 * V (virtual time) is the largest start tag dispatched so far. A tenant
 * that was idle starts at V (no credit for idle time), and a tenant that
 * sends more than its share runs ahead of V and waits. Over any stretch of
 * contention, tenants with requests waiting get units in proportion to their
 * shares, within one request's cost per tenant.
 *
 * Policy per tenant, for a request that has to wait: "queue" waits (bounded
 * by MAX_WAITING_PER_MODEL per model: beyond, UNAVAILABLE, like a full
 * scheduler queue); "refuse" waits only while the tenant holds at most its
 * part of the slots in its lane (slots × share / shares of the tenants
 * busy on the model, at least 1): a request beyond that is over the
 * tenant's share and fails RESOURCE_EXHAUSTED with retryAfterSecs, the
 * time the tenant's lane needs to drain at its share of the model's
 * measured rate (1 to 60 s).
 *
 * Cost: nothing while no tenant is configured (the engine checks
 * `enabled` and calls the model directly). When enabled, an uncontended
 * request costs a WeakMap lookup, a Map lookup by the key's tenant id (the
 * grant's own string), a few additions and the promise of the call; a
 * waiting request one queue entry. No closures per request, no timers.
 * Counters (units, requests, refusals) are plain numbers read at scrape.
 *
 * Operators (DAG versions) are not gated themselves; their model steps are,
 * each as the operator request's tenant (operator-tenant.ts), so an
 * operator request counts the units of all its steps. A request's queue timeout
 * starts when it reaches the model's scheduler, not while it waits here;
 * a cancelled request leaves when its turn comes.
 */
export interface GatedModel<Q extends GatedRequest = GatedRequest, R extends MeasuredResult = MeasuredResult> {
  readonly model: string;
  readonly config: { max_batch_size?: number; instance_group?: ReadonlyArray<{ count?: number }> };
  /** The model's scheduler (ServedVersion.instances): the gate hands it each request in turn. */
  readonly instances: { execute(request: Q): Promise<R> };
}

/** What the gate reads of a request (ScheduledRequest has it). */
export interface GatedRequest {
  batchSize: number;
  /** Read when the request's turn comes: a request cancelled while it waited is dropped then. */
  signal?: { readonly aborted: boolean } | undefined;
}

/** What the gate reads of a finished execution (ScheduledResult has it). */
export interface MeasuredResult {
  timing: { computeInferNs: number };
  executedBatchSize: number;
}

export interface TenantSharesOptions {
  /** Clock, milliseconds (tests pass their own). */
  now?: () => number;
  /** Waiting requests per model at most (default MAX_WAITING_PER_MODEL). */
  maxWaitingPerModel?: number;
}

export const MAX_WAITING_PER_MODEL = 4096;

/** A tenant's counters since the last drain. */
export interface TenantUsage {
  tenant: string;
  share: number;
  policy: TenantGrant["policy"];
  /** Normalized units served (completed requests). */
  units: number;
  requests: number;
  /** Requests refused as over the tenant's share. */
  refused: number;
}

interface TenantState {
  spec: TenantGrant;
  /** False once the grants stop naming it (kept until its counters are drained). */
  configured: boolean;
  units: number;
  requests: number;
  refused: number;
}

interface Waiting {
  start: number;
  cost: number;
  request: GatedRequest;
  /** How the request runs in its turn; undefined = model.instances.execute. */
  run: ((request: GatedRequest) => Promise<MeasuredResult>) | undefined;
  resolve: (result: MeasuredResult) => void;
  reject: (error: unknown) => void;
}

interface Lane {
  tenant: TenantState;
  finishTag: number;
  inFlight: number;
  queue: Waiting[];
  /** Index of the queue's head (the array is compacted when it empties). */
  head: number;
  queuedUnits: number;
}

const COST_EWMA_WEIGHT = 0.1;
const RATE_WINDOW_MS = 1000;

class ModelGate {
  slots: number;
  inFlight = 0;
  waiting = 0;
  virtualTime = 0;
  /** Milliseconds of compute per inference (EWMA); 1 until measured. */
  unitsPerInference = 1;
  measured = false;
  /** Units completed per second (last full window), 0 until known. */
  unitsPerSecond = 0;
  windowStartMs: number;
  windowUnits = 0;
  readonly lanes = new Map<string, Lane>();

  constructor(
    readonly model: GatedModel,
    nowMs: number,
  ) {
    this.slots = slotsOf(model);
    this.windowStartMs = nowMs;
  }
}

export class TenantShares {
  private readonly tenants = new Map<string, TenantState>();
  private readonly gates = new WeakMap<GatedModel, ModelGate>();
  private readonly now: () => number;
  private readonly maxWaiting: number;
  private anonymous: TenantState;
  /** False while no tenant is configured: the engine then bypasses the gate entirely. */
  enabled = false;

  constructor(options: TenantSharesOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxWaiting = options.maxWaitingPerModel ?? MAX_WAITING_PER_MODEL;
    this.anonymous = { spec: ANONYMOUS_TENANT, configured: true, units: 0, requests: 0, refused: 0 };
    this.tenants.set(ANONYMOUS_TENANT.id, this.anonymous);
  }

  /**
   * The configured tenants (from the key grants). Empty = disabled. A
   * tenant's counters and lanes survive a reconfiguration; a changed share
   * or policy applies to its next request. A tenant no grant names any more
   * is kept (unconfigured: its requests count as anonymous), so counts
   * still waiting for a scrape are not lost; tenants are few.
   */
  configure(specs: readonly TenantGrant[]): void {
    for (const state of this.tenants.values()) if (state !== this.anonymous) state.configured = false;
    for (const spec of specs) {
      const existing = this.tenants.get(spec.id);
      if (existing !== undefined) {
        existing.spec = { ...spec };
        existing.configured = true;
      } else this.tenants.set(spec.id, { spec: { ...spec }, configured: true, units: 0, requests: 0, refused: 0 });
    }
    if (!specs.some((spec) => spec.id === ANONYMOUS_TENANT.id)) this.anonymous.spec = anonymousSpecAmong(specs);
    this.enabled = specs.length > 0;
  }

  /**
   * Runs one request of `tenantId` (undefined = anonymous; an id no grant
   * names counts as anonymous too) on `model` through the gate, which
   * hands it to model.instances.execute in its turn; the result or error
   * comes back unchanged. Throws RESOURCE_EXHAUSTED (refuse policy, over share),
   * UNAVAILABLE (too many waiting) or CANCELLED (aborted while waiting).
   * `run`: how the request runs in its turn when not by
   * model.instances.execute (a decoupled model's request streams through
   * executeStream); it counts against the share all the same.
   */
  execute<Q extends GatedRequest, R extends MeasuredResult>(
    model: GatedModel<Q, R>,
    tenantId: string | undefined,
    request: Q,
    run?: (request: Q) => Promise<R>,
  ): Promise<R> {
    let gate = this.gates.get(model as GatedModel);
    if (gate === undefined) {
      gate = new ModelGate(model as GatedModel, this.now());
      this.gates.set(model as GatedModel, gate);
    }
    const named = tenantId !== undefined ? this.tenants.get(tenantId) : undefined;
    const tenant = named !== undefined && named.configured ? named : this.anonymous;
    let lane = gate.lanes.get(tenant.spec.id);
    if (lane === undefined) {
      lane = { tenant, finishTag: 0, inFlight: 0, queue: [], head: 0, queuedUnits: 0 };
      gate.lanes.set(tenant.spec.id, lane);
    }
    const cost = Math.max(1, request.batchSize) * gate.unitsPerInference;
    const start = Math.max(gate.virtualTime, lane.finishTag);
    if (gate.waiting === 0 && gate.inFlight < gate.slots) {
      lane.finishTag = start + cost / tenant.spec.share;
      gate.virtualTime = start;
      return this.runNow(gate, lane, cost, request, run as Waiting["run"]) as Promise<R>;
    }
    if (tenant.spec.policy === "refuse") {
      const allowance = this.allowanceOf(gate, lane);
      if (lane.queue.length - lane.head >= allowance) {
        tenant.refused += 1;
        const retryAfterSecs = this.retryAfterOf(gate, lane, cost);
        return Promise.reject(
          new OperonError(
            "RESOURCE_EXHAUSTED",
            `tenant '${tenant.spec.id}' is over its share (${tenant.spec.share}) of model '${model.model}' while it is busy; retry after ${retryAfterSecs} s`,
            {
              retryAfterSecs,
            },
          ),
        );
      }
    }
    if (gate.waiting >= this.maxWaiting) {
      return Promise.reject(
        new OperonError(
          "UNAVAILABLE",
          `model '${model.model}' has ${gate.waiting} requests waiting for their tenants' turn; try again later`,
          { retryAfterSecs: 1 },
        ),
      );
    }
    lane.finishTag = start + cost / tenant.spec.share;
    return new Promise<R>((resolve, reject) => {
      lane.queue.push({
        start,
        cost,
        request,
        run: run as Waiting["run"],
        resolve: resolve as (result: MeasuredResult) => void,
        reject,
      });
      lane.queuedUnits += cost;
      gate.waiting += 1;
    });
  }

  /** Counters since the previous drain, per tenant that has any; the counters restart at 0. */
  drainUsage(): TenantUsage[] {
    const usage: TenantUsage[] = [];
    for (const state of this.tenants.values()) {
      if (state.units === 0 && state.requests === 0 && state.refused === 0) continue;
      usage.push({
        tenant: state.spec.id,
        share: state.spec.share,
        policy: state.spec.policy,
        units: state.units,
        requests: state.requests,
        refused: state.refused,
      });
      state.units = 0;
      state.requests = 0;
      state.refused = 0;
    }
    return usage;
  }

  /** The tenants configured now with their shares (the anonymous one included while enabled). */
  shares(): TenantGrant[] {
    return this.enabled
      ? [...this.tenants.values()].filter((state) => state.configured).map((state) => ({ ...state.spec }))
      : [];
  }

  private async runNow(
    gate: ModelGate,
    lane: Lane,
    cost: number,
    request: GatedRequest,
    run: Waiting["run"],
  ): Promise<MeasuredResult> {
    gate.inFlight += 1;
    lane.inFlight += 1;
    try {
      const result = await (run !== undefined ? run(request) : gate.model.instances.execute(request));
      this.measure(gate, result);
      lane.tenant.units += cost;
      lane.tenant.requests += 1;
      gate.windowUnits += cost;
      return result;
    } finally {
      gate.inFlight -= 1;
      lane.inFlight -= 1;
      this.dispatch(gate);
    }
  }

  /** Fills free slots with the waiting requests of smallest start tag. */
  private dispatch(gate: ModelGate): void {
    while (gate.waiting > 0 && gate.inFlight < gate.slots) {
      let next: Lane | undefined;
      for (const lane of gate.lanes.values()) {
        if (
          lane.head < lane.queue.length &&
          (next === undefined || lane.queue[lane.head]!.start < next.queue[next.head]!.start)
        )
          next = lane;
      }
      if (next === undefined) return;
      const waiting = next.queue[next.head]!;
      next.queue[next.head] = undefined as unknown as Waiting;
      next.head += 1;
      if (next.head === next.queue.length) {
        next.queue.length = 0;
        next.head = 0;
      }
      next.queuedUnits -= waiting.cost;
      gate.waiting -= 1;
      if (waiting.request.signal?.aborted === true) {
        waiting.reject(new OperonError("CANCELLED", "the request was cancelled while it waited for its tenant's turn"));
        continue;
      }
      if (waiting.start > gate.virtualTime) gate.virtualTime = waiting.start;
      this.runNow(gate, next, waiting.cost, waiting.request, waiting.run).then(waiting.resolve, waiting.reject);
    }
  }

  private measure(gate: ModelGate, result: MeasuredResult): void {
    const computeNs = result.timing?.computeInferNs;
    if (typeof computeNs === "number" && computeNs > 0 && result.executedBatchSize > 0) {
      const perInferenceMs = computeNs / result.executedBatchSize / 1e6;
      gate.unitsPerInference = gate.measured
        ? gate.unitsPerInference + COST_EWMA_WEIGHT * (perInferenceMs - gate.unitsPerInference)
        : perInferenceMs;
      gate.measured = true;
    }
    const now = this.now();
    const elapsed = now - gate.windowStartMs;
    if (elapsed >= RATE_WINDOW_MS) {
      gate.unitsPerSecond = (gate.windowUnits * 1000) / elapsed;
      gate.windowUnits = 0;
      gate.windowStartMs = now;
    }
  }

  /** Requests a refuse-policy tenant may hold waiting: its share of the slots among the tenants busy on the model. */
  private allowanceOf(gate: ModelGate, lane: Lane): number {
    let busyShares = lane.tenant.spec.share;
    for (const other of gate.lanes.values()) {
      if (other !== lane && (other.inFlight > 0 || other.head < other.queue.length))
        busyShares += other.tenant.spec.share;
    }
    return Math.max(1, Math.floor((gate.slots * lane.tenant.spec.share) / busyShares));
  }

  private retryAfterOf(gate: ModelGate, lane: Lane, cost: number): number {
    if (gate.unitsPerSecond <= 0) return 1;
    let busyShares = lane.tenant.spec.share;
    for (const other of gate.lanes.values()) {
      if (other !== lane && (other.inFlight > 0 || other.head < other.queue.length))
        busyShares += other.tenant.spec.share;
    }
    const tenantRate = (gate.unitsPerSecond * lane.tenant.spec.share) / busyShares;
    return Math.min(60, Math.max(1, Math.ceil((lane.queuedUnits + cost) / tenantRate)));
  }
}

/** Requests the model's scheduler may hold at once before tenants wait here: 2 × instances × max(1, max batch size). */
export function slotsOf(model: GatedModel): number {
  const instances =
    (model.config.instance_group ?? []).reduce((sum, group) => sum + Math.max(1, group.count ?? 1), 0) || 1;
  return 2 * instances * Math.max(1, model.config.max_batch_size ?? 0);
}

/**
 * The anonymous tenant while shares are on: requests without a key get no
 * more than the least-favoured configured tenant, its share (at most
 * ANONYMOUS_TENANT's 1) and its policy (refuse before queue at equal
 * shares). Otherwise a refuse-policy tenant's members would step around
 * their share by sending no key at all.
 */
export function anonymousSpecAmong(specs: readonly TenantGrant[]): TenantGrant {
  let least: TenantGrant | undefined;
  for (const spec of specs) {
    if (spec.id === ANONYMOUS_TENANT.id) continue;
    if (least === undefined || spec.share < least.share || (spec.share === least.share && spec.policy === "refuse"))
      least = spec;
  }
  if (least === undefined) return ANONYMOUS_TENANT;
  return { id: ANONYMOUS_TENANT.id, share: Math.min(ANONYMOUS_TENANT.share, least.share), policy: least.policy };
}
