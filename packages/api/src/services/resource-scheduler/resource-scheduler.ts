import { availableParallelism, totalmem } from "node:os";
import type { Prisma, PrismaClient, SchedulerAction } from "@operon/db";
import type { WorkersResponse } from "@operon/protocol/admin";
import { isShadowModelName } from "../config-search/candidate-config.js";
import type { ModelStatistics } from "@operon/protocol/inference";
import type { Logger } from "@operon/protocol/logger";
import { AppError } from "../../app-error.js";
import { recordAudit, SYSTEM_ACTOR, type Actor } from "../audit/audit-log.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import type { ClusterGateway } from "../cluster/cluster-gateways.js";
import { clusterDemand, gatewayDemand, readingOf, type ClusterDemand, type GatewayReading } from "./cluster-demand.js";
import { decideReplicas, type ReplicaDecision, type ReplicaPolicy } from "./gateway-replicas.js";
import { readDesiredReplicas, storeDesiredReplicas, type DesiredReplicasView } from "./desired-replicas.js";
import {
  capacityOf,
  decide,
  gpuSlotsInUse,
  type HostBudget,
  type ModelState,
  type SchedulerDecision,
  type SchedulerPolicy,
} from "./scheduler-decisions.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";
import {
  modelStepsOf,
  operatorCapacity,
  operatorDemands,
  measureOperatorTraffic,
  type OperatorCapacity,
  type OperatorSample,
  type OperatorTraffic,
} from "./operator-capacity.js";
import { kindCapacities, reportCapacities } from "./report-capacities.js";
import {
  chooseHardware,
  parseHardwareKinds,
  type HardwareFitInput,
  type HardwareKindName,
  type KindMeasure,
} from "./hardware-fit.js";
import {
  listDecisions,
  readOperatorCapacity,
  type DecisionFilter,
  type OperatorCapacityView,
  type SchedulerDecisionView,
  type SchedulerModelView,
} from "./scheduler-views.js";

/**
 * The resource scheduler's runner: every period it gathers the inputs of
 * scheduler-decisions.ts, applies the decisions through the gateway's admin
 * API and records each one (SchedulerDecision row + audit event, in one
 * transaction).
 *
 * Inputs, and why from there:
 * - demand: the gateways' statistics (GET /v2/models/stats), read each
 *   period: Δ(success + fail requests) / Δt per model, summed over versions.
 *   Fresher than the UsageSample rows (written every --usage-sample-secs,
 *   15 s by default) and the same counters they are made from. Every gateway
 *   is read: the control plane's own and each one registered on the database
 *   (cluster-gateways.ts, with the internal key), each with its own previous
 *   reading (cluster-demand.ts). Instance counts are per gateway: a model's
 *   demand for them is its busiest gateway's rate, never the sum, so N
 *   gateways do not each grow for N gateways' traffic (with one gateway,
 *   that is its rate, as before). The sum, queue time per request and busy
 *   worker CPU over all gateways size the desired gateway replica count
 *   (gateway-replicas.ts), stored (desired-replicas.ts) and handed to
 *   onDesiredReplicas (the operon_desired_gateway_replicas gauge).
 * - capacity: per-instance throughput at the p99 budget from the model's
 *   latest successful perf report (the best step whose p99 is within
 *   --scheduler-p99-budget-ms, divided by the instances the report says it
 *   ran with, one when it does not say); --scheduler-default-capacity-rps
 *   when there is none.
 * - instances, kind (CPU/GPU) and memory: GET /v2/operon/workers (resident
 *   memory of process instances; --scheduler-instance-memory-bytes for
 *   thread instances, whose memory is the gateway's).
 * - the floor: the instance count each model's config asked for, and the
 *   requests waiting in each model's queue (GET /v2/operon/scaling); on its
 *   own the scheduler only removes instances it added.
 * - pins and the on/off switch: the database (set through the API, audited).
 *
 * A model with a perf run in progress (a RUNNING PerfReport) is left alone
 * for the run: rescaling it would change what the run measures.
 *
 * The first period only takes the baseline, and a model first seen keeps
 * its configured count for a scale-down cooldown. The gateway refusing a change
 * (its limits, a model with several instance groups) is recorded as a HOLD
 * with the gateway's message and the model is left alone for ten minutes.
 */
export interface ResourceSchedulerOptions {
  /** Whether the scheduler runs when no admin has switched it (SchedulerSetting absent). */
  enabledByDefault: boolean;
  /** Seconds between decisions; 0 = no background runs (runOnce still works). */
  periodSecs: number;
  headroom: number;
  hysteresis: number;
  scaleDownCooldownSecs: number;
  /** Default: one period (new instances need a period to show in the demand). */
  scaleUpCooldownSecs?: number;
  idleUnloadSecs: number;
  defaultCapacityRps: number;
  p99BudgetMs: number;
  /** Memory the models' instances may use together; default 75 % of the host's memory. */
  memoryBudgetBytes?: number;
  /** Memory assumed per instance when the gateway cannot measure it (thread instances). */
  instanceMemoryBytes: number;
  /** CPU instance slots; default 2 × cores (the gateway's own per-model default limit). */
  cpuSlots?: number;
  /** Instances of GPU models each GPU runs at once; default 2. The GPUs are the gateway's (its workers endpoint). */
  gpuSlots?: number;
  /** The gateway's --max-instances-per-model and --max-instances (it enforces them too). */
  maxInstancesPerModel?: number;
  maxInstancesPerHost?: number;
  /** Bounds of the desired gateway replica count (--scheduler-min-gateways, --scheduler-max-gateways). */
  minGateways?: number;
  maxGateways?: number;
}

export { RESOURCE_SCHEDULER_DEFAULTS } from "./resource-scheduler-defaults.js";

const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const REFUSED_RETRY_MS = 600_000;
/** How decide() starts the reason of a hardware fit HOLD (a config problem). */
const FIT_HOLD = "hardware fit: ";

interface Baseline {
  at: number;
  /** Each operator's requests in flight and its completed calls per model at the sample. */
  operators: Map<string, OperatorSample>;
  /** Each model's instances at the sample (0 when parked). */
  instances: Map<string, number>;
}

export class ResourceScheduler {
  private readonly timer: PeriodicTask;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private baseline: Baseline | undefined;
  private readonly history = new Map<string, Array<{ at: number; rps: number }>>();
  private readonly lastChange = new Map<string, number>();
  /** Models the gateway refused to rescale, until when they are left alone. */
  private readonly refused = new Map<string, number>();
  /** The last HOLD recorded per model: the same one is not recorded again every period. */
  private readonly lastHold = new Map<string, string>();
  /** The last hardware fit HOLD per model (its reason), forgotten in a period without one (the problem was fixed). */
  private readonly lastFitHold = new Map<string, string>();
  private parkedBefore = new Set<string>();
  /** Instances added for batch jobs per model (rule 9 of scheduler-decisions.ts); forgotten once no job runs on it. */
  private readonly batchAdded = new Map<string, number>();
  private lastView: SchedulerModelView[] = [];
  private lastOperators: OperatorCapacityView[] = [];
  /** Each gateway's last reading, by gatewayHost ("" for the control plane's own). */
  private readings = new Map<string, GatewayReading>();
  private lastCluster: ClusterDemand | undefined;
  /** Summed demand per model over the last scale-down cooldown (the replica count's scale-downs follow its peak). */
  private readonly summedHistory = new Map<string, Array<{ at: number; rps: number }>>();
  private readonly replicaListeners = new Set<(replicas: number) => void>();
  private lastReplicas: number | undefined;
  readonly policy: SchedulerPolicy;
  /** The budget without the GPUs, which each period reads from the gateway (budget.gpuDevices). */
  budget: HostBudget;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    readonly options: ResourceSchedulerOptions,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
    /** The cluster's other gateways (`--role gateway` on this database); none on one host. */
    private readonly clusterGateways: () => Promise<ClusterGateway[]> = async () => [],
  ) {
    this.timer = new PeriodicTask(() => this.runOnce(), {
      intervalMs: options.periodSecs * 1000,
      runAtStart: true,
      onError: (error) => this.logger.error({ err: error }, "resource scheduler run failed"),
    });
    const cores = availableParallelism();
    this.policy = {
      headroom: options.headroom,
      hysteresis: options.hysteresis,
      scaleUpCooldownMs: (options.scaleUpCooldownSecs ?? options.periodSecs) * 1000,
      scaleDownCooldownMs: options.scaleDownCooldownSecs * 1000,
      idleUnloadMs: options.idleUnloadSecs * 1000,
      defaultCapacityRps: options.defaultCapacityRps,
      maxInstancesPerModel: options.maxInstancesPerModel ?? 2 * cores,
      maxInstancesPerHost: options.maxInstancesPerHost ?? 8 * cores,
    };
    this.budget = {
      cpuSlots: options.cpuSlots ?? 2 * cores,
      gpuSlots: options.gpuSlots ?? 2,
      gpuDevices: [],
      memoryBytes: options.memoryBudgetBytes ?? Math.floor(totalmem() * 0.75),
    };
  }

  start(): void {
    if (this.stopped) return;
    this.timer.start();
    // The count a previous control plane decided, exported at once: a restart does not drop the gauge.
    readDesiredReplicas(this.prisma)
      .then((stored) => {
        if (stored !== null) this.publishReplicas(stored.desired);
      })
      .catch((error: unknown) =>
        this.logger.warn({ err: (error as Error).message }, "could not read the stored desired gateway replicas"),
      );
  }

  /** Called with the desired gateway replica count: the stored one at start, then each period's. */
  onDesiredReplicas(listener: (replicas: number) => void): () => void {
    this.replicaListeners.add(listener);
    // A listener that came after the stored count was read at start gets it now.
    if (this.lastReplicas !== undefined) listener(this.lastReplicas);
    return () => this.replicaListeners.delete(listener);
  }

  /** The rule's bounds and one gateway's room (gateway-replicas.ts); `coresPerGateway` from the gateways' workers. */
  replicaPolicy(coresPerGateway: number): ReplicaPolicy {
    return {
      headroom: this.policy.headroom,
      hysteresis: this.policy.hysteresis,
      scaleDownCooldownMs: this.policy.scaleDownCooldownMs,
      maxInstancesPerModel: this.policy.maxInstancesPerModel,
      slotsPerGateway: this.options.cpuSlots ?? 2 * Math.max(1, coresPerGateway),
      coresPerGateway,
      minReplicas: this.options.minGateways ?? 1,
      maxReplicas: this.options.maxGateways ?? 10,
      p99BudgetMs: this.options.p99BudgetMs,
    };
  }

  /** Stops the timer and waits for a run in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.timer.stop();
    await this.running.catch(() => undefined);
  }

  /** One period now (runs never overlap); resolves with the decisions made. */
  runOnce(): Promise<SchedulerDecision[]> {
    const next = this.running.catch(() => undefined).then(() => this.run());
    this.running = next;
    return next;
  }

  async isEnabled(): Promise<boolean> {
    const row = await this.prisma.schedulerSetting.findUnique({ where: { id: "default" } });
    return row?.enabled ?? this.options.enabledByDefault;
  }

  /** The switch, as an admin sets it (audited); the next period follows it. */
  async setEnabled(actor: Actor, enabled: boolean): Promise<{ enabled: boolean }> {
    const before = await this.isEnabled();
    await this.prisma.$transaction(async (tx) => {
      await tx.schedulerSetting.upsert({
        where: { id: "default" },
        create: { id: "default", enabled, updatedById: actor.userId },
        update: { enabled, updatedById: actor.userId },
      });
      await recordAudit(tx, actor, {
        action: enabled ? "scheduler.enable" : "scheduler.disable",
        targetType: "scheduler",
        targetId: "default",
        before: { enabled: before },
        after: { enabled },
      });
    });
    return { enabled };
  }

  /** Keeps `model` at `count` instances whatever the demand (audited); applied at once when the scheduler is on. */
  async pin(actor: Actor, model: string, count: number): Promise<{ model: string; count: number }> {
    checkModelName(model);
    if (!Number.isInteger(count) || count < 1 || count > this.policy.maxInstancesPerModel) {
      throw new AppError(
        "VALIDATION_FAILED",
        `the pinned count must be an integer from 1 to ${this.policy.maxInstancesPerModel} (--max-instances-per-model)`,
        {
          fieldErrors: [{ path: "count", message: `from 1 to ${this.policy.maxInstancesPerModel}` }],
        },
      );
    }
    await this.prisma.$transaction(async (tx) => {
      const before = await tx.schedulerPin.findUnique({ where: { model } });
      await tx.schedulerPin.upsert({
        where: { model },
        create: { model, count, pinnedById: actor.userId },
        update: { count, pinnedById: actor.userId },
      });
      await recordAudit(tx, actor, {
        action: "scheduler.pin",
        targetType: "model",
        targetId: model,
        before: before ? { count: before.count } : undefined,
        after: { count },
      });
    });
    this.kick();
    return { model, count };
  }

  async unpin(actor: Actor, model: string): Promise<{ model: string }> {
    checkModelName(model);
    await this.prisma.$transaction(async (tx) => {
      const before = await tx.schedulerPin.findUnique({ where: { model } });
      if (before === null) throw new AppError("NOT_FOUND", `model '${model}' is not pinned`);
      await tx.schedulerPin.delete({ where: { model } });
      await recordAudit(tx, actor, {
        action: "scheduler.unpin",
        targetType: "model",
        targetId: model,
        before: { count: before.count },
      });
    });
    this.kick();
    return { model };
  }

  /** The models as the last period saw them, with their pins. */
  async status(): Promise<{
    enabled: boolean;
    periodSecs: number;
    policy: SchedulerPolicy;
    budget: HostBudget;
    /** Where the CPU slot budget came from: the host's cores (2 × cores) or --scheduler-cpu-slots. */
    cpuSlotsFrom: { cores: number; flag: boolean };
    models: SchedulerModelView[];
    operators: OperatorCapacityView[];
    pins: Array<{ model: string; count: number }>;
    /** The desired gateway replica count as stored (a restarted control plane shows the kept one); null before the first. */
    replicas: (DesiredReplicasView & { minGateways: number; maxGateways: number }) | null;
    /** The last period's inputs per gateway and summed; null before a second period. */
    cluster: ClusterInputsView | null;
  }> {
    const pins = await this.prisma.schedulerPin.findMany({ orderBy: { model: "asc" } });
    const replicas = await readDesiredReplicas(this.prisma);
    return {
      replicas:
        replicas === null
          ? null
          : { ...replicas, minGateways: this.options.minGateways ?? 1, maxGateways: this.options.maxGateways ?? 10 },
      cluster: this.lastCluster === undefined ? null : clusterInputsView(this.lastCluster),
      enabled: await this.isEnabled(),
      periodSecs: this.options.periodSecs,
      policy: this.policy,
      budget: this.budget,
      cpuSlotsFrom: { cores: availableParallelism(), flag: this.options.cpuSlots !== undefined },
      models: this.lastView,
      operators: this.lastOperators,
      pins: pins.map((pin) => ({ model: pin.model, count: pin.count })),
    };
  }

  /** Decisions, newest first; `before` (an id) pages back. */
  decisions(filter: DecisionFilter): Promise<{ decisions: SchedulerDecisionView[]; nextBefore: string | null }> {
    return listDecisions(this.prisma, filter);
  }

  /** One operator's capacity now, read fresh (scheduler-views.ts); the demand is the last period's. */
  operatorCapacity(name: string): Promise<OperatorCapacityView> {
    return readOperatorCapacity(
      { prisma: this.prisma, gateway: this.gateway, policy: this.policy, p99BudgetMs: this.options.p99BudgetMs },
      name,
      this.lastOperators.find((view) => view.operator === name),
    );
  }

  /** A run soon after a pin or unpin, so that it shows without waiting a period. */
  private kick(): void {
    if (!this.timer.started || this.stopped) return;
    void this.runOnce().catch((error: unknown) => this.logger.error({ err: error }, "resource scheduler run failed"));
  }

  private async run(): Promise<SchedulerDecision[]> {
    if (this.stopped) return [];
    const now = this.clock();
    let stats: ModelStatistics[];
    let workers: WorkersResponse;
    let scaling: Awaited<ReturnType<GatewayClient["scalingState"]>>;
    let operators: Awaited<ReturnType<GatewayClient["listOperators"]>>;
    try {
      [stats, workers, scaling, operators] = await Promise.all([
        this.gateway.statistics(),
        this.gateway.workers(),
        this.gateway.scalingState(),
        this.gateway.listOperators(),
      ]);
    } catch (error) {
      this.logger.warn(
        { err: (error as Error).message },
        "resource scheduler: gateway not reachable; skipping this period",
      );
      return [];
    }
    const others = await this.readClusterGateways();
    const lastUsed = new Map<string, number>();
    for (const entry of [stats, ...others.map((other) => other.stats)].flat()) {
      if (entry.last_inference > 0)
        lastUsed.set(entry.name, Math.max(lastUsed.get(entry.name) ?? 0, entry.last_inference));
    }
    const previous = this.baseline;
    const readings = [readingOf(null, now, stats, workers), ...others.map((other) => other.reading)];
    const cluster = clusterDemand(
      readings.map((reading) => gatewayDemand(this.readings.get(reading.gatewayHost ?? ""), reading)),
    );
    // Gateways that left are forgotten: one back later starts with a baseline.
    this.readings = new Map(readings.map((reading) => [reading.gatewayHost ?? "", reading]));
    if (previous !== undefined) this.lastCluster = cluster;
    const operatorSamples = new Map<string, OperatorSample>(
      scaling.operators.map((entry) => [entry.operator, { inFlight: entry.inFlight, modelCalls: entry.modelCalls }]),
    );
    const interval = previous === undefined ? 0 : (now - previous.at) / 1000;
    /**
     * Requests completed per second over the period on the model's busiest gateway (cluster-demand.ts): instance
     * counts are per gateway. A counter that went down (a reload) counts from 0.
     */
    const rateOf = (name: string): number => (previous === undefined ? 0 : (cluster.models.get(name)?.busiestRps ?? 0));
    const byModel = new Map<
      string,
      { versions: Map<string, number>; gpu: boolean; rss: number[]; devices: Set<number> }
    >();
    for (const worker of workers.workers) {
      const model = byModel.get(worker.model) ?? {
        versions: new Map<string, number>(),
        gpu: false,
        rss: [] as number[],
        devices: new Set<number>(),
      };
      model.versions.set(worker.version, (model.versions.get(worker.version) ?? 0) + 1);
      if (worker.kind === "GPU") model.gpu = true;
      if (worker.kind === "GPU" && worker.device !== null) model.devices.add(worker.device);
      if (worker.rssBytes !== null) model.rss.push(worker.rssBytes);
      byModel.set(worker.model, model);
    }
    // The host's GPUs: what NVML lists (workers.gpus), and any GPU an instance already runs on (GPU metrics may be off).
    const hostGpus = new Set<number>();
    for (const gpu of workers.gpus) if (gpu.device !== null) hostGpus.add(gpu.device);
    for (const model of byModel.values()) for (const device of model.devices) hostGpus.add(device);
    this.budget = { ...this.budget, gpuDevices: [...hostGpus].sort((a, b) => a - b) };
    const parkedNow = new Set(scaling.parked);
    const configured = new Map(scaling.models.map((entry) => [entry.model, entry.configuredInstances]));
    const scalingOf = new Map(scaling.models.map((entry) => [entry.model, entry]));
    const queued = new Map(scaling.models.map((entry) => [entry.model, entry.queued ?? 0]));
    // A config search's shadow model is the search's to load and unload: never scaled or parked here.
    const names = [...new Set([...byModel.keys(), ...parkedNow])].filter((name) => !isShadowModelName(name)).sort();
    const fitted = names.filter((name) => (scalingOf.get(name)?.hardwareKinds ?? null) !== null);
    const [pins, capacities, enabled, measuring, byKind, profileKinds] = await Promise.all([
      this.prisma.schedulerPin.findMany(),
      reportCapacities(this.prisma, names, this.options.p99BudgetMs),
      this.isEnabled(),
      // A model under a perf run is left alone: rescaling it would change what the run measures.
      this.prisma.perfReport
        .findMany({ where: { status: "RUNNING", targetKind: "MODEL" }, select: { targetName: true } })
        .then((rows) => new Set(rows.map((row) => row.targetName))),
      kindCapacities(this.prisma, fitted, this.options.p99BudgetMs),
      this.prisma.hardwareProfile
        .findMany({ select: { kind: true }, distinct: ["kind"] })
        .then((rows) => new Set(rows.map((row) => row.kind as HardwareKindName))),
    ]);
    // Free GPU memory per GPU, where NVML reads it (hardware fit: a GPU without room is not a candidate).
    const gpuFreeMemoryBytes = new Map<number, number>();
    for (const gpu of workers.gpus)
      if (gpu.device !== null && gpu.memoryTotalBytes !== null && gpu.memoryUsedBytes !== null)
        gpuFreeMemoryBytes.set(gpu.device, gpu.memoryTotalBytes - gpu.memoryUsedBytes);
    const hardwareOf = (name: string): HardwareFitInput | undefined => {
      const raw = scalingOf.get(name)?.hardwareKinds ?? null;
      if (raw === null) return undefined;
      const parsed = parseHardwareKinds(raw);
      if ("problem" in parsed) return { allowed: [], problem: parsed.problem, measures: [] };
      const measures: KindMeasure[] = parsed.kinds.map((kind) => {
        const measured = byKind.get(name)?.get(kind);
        return {
          kind,
          profileExists: profileKinds.has(kind),
          profile: measured?.profile ?? null,
          capacityRps: measured?.capacityRps ?? null,
        };
      });
      return { allowed: parsed.kinds, measures, gpuFreeMemoryBytes };
    };
    const pinOf = new Map(pins.map((pin) => [pin.model, pin.count]));
    const perInstanceOf = (model: string): ReturnType<typeof capacityOf> =>
      capacityOf({ reportCapacityRps: capacities.get(model) ?? null } as ModelState, this.policy);
    const instancesNow = (model: string): number => {
      const seen = byModel.get(model);
      return parkedNow.has(model) || seen === undefined ? 0 : Math.max(...seen.versions.values());
    };
    this.baseline = {
      at: now,
      operators: operatorSamples,
      instances: new Map(names.map((name) => [name, instancesNow(name)])),
    };
    const operatorDemand = this.operatorTraffic(
      operators,
      rateOf,
      operatorSamples,
      previous,
      interval,
      queued,
      (model) => ({
        instances: instancesNow(model),
        perInstanceRps: perInstanceOf(model).rps,
        source: perInstanceOf(model).source,
      }),
    );
    const { models: stepDemand, operators: demandOfOperator } = operatorDemands(
      operatorDemand.traffic,
      new Map(names.map((name) => [name, rateOf(name)])),
      (model) => perInstanceOf(model).rps,
      this.policy.maxInstancesPerModel,
    );
    this.lastOperators = operatorDemand.capacities.map((capacity) => {
      const demand = demandOfOperator.find((entry) => entry.operator === capacity.operator);
      return {
        ...capacity,
        demandRps: previous === undefined ? null : (demand?.demandRps ?? 0),
        demandBasis: previous === undefined ? null : (demand?.basis ?? null),
        p99BudgetMs: this.options.p99BudgetMs,
      };
    });
    const batchDemand = await this.batchDemand();
    // A job's rows spread over the gateways (batch gateway lanes): the busiest gateway's part of them is taken as
    // its part of the model's summed traffic (1 on one gateway), since its rate is what instance counts are sized on.
    const busiestShare = (name: string): number => {
      const demand = cluster.models.get(name);
      return demand === undefined || demand.rps <= 0 ? 1 : demand.busiestRps / demand.rps;
    };
    for (const name of [...this.batchAdded.keys()]) if (!batchDemand.has(name)) this.batchAdded.delete(name);
    const states: ModelState[] = names.map((name) => {
      const seen = byModel.get(name);
      const viaOperators = stepDemand.get(name);
      const demandRps = viaOperators?.demandRps ?? rateOf(name);
      const peakDemandRps = this.notePeak(name, now, demandRps);
      const refusedUntil = this.refused.get(name);
      // First seen counts as a change: a model just loaded (or the scheduler just started) keeps its count for a cooldown.
      if (!this.lastChange.has(name)) this.lastChange.set(name, now);
      const hardware = hardwareOf(name);
      const kind: "CPU" | "GPU" = seen?.gpu === true || scalingOf.get(name)?.kind === "GPU" ? "GPU" : "CPU";
      // With hardware fit, the capacity is the one measured on the kind it runs on (another kind's says nothing of it).
      const kindCapacity = hardware?.measures.find((measure) => measure.kind === kind)?.capacityRps;
      return {
        model: name,
        instances: parkedNow.has(name) || seen === undefined ? 0 : Math.max(...seen.versions.values()),
        parked: parkedNow.has(name),
        kind,
        demandRps,
        peakDemandRps,
        reportCapacityRps: kindCapacity ?? capacities.get(name) ?? null,
        ...(hardware !== undefined ? { hardware } : {}),
        memoryPerInstanceBytes:
          seen !== undefined && seen.rss.length > 0
            ? Math.round(seen.rss.reduce((a, b) => a + b, 0) / seen.rss.length)
            : this.options.instanceMemoryBytes,
        lastUsedAt: lastUsed.get(name) ?? null,
        pinned: pinOf.get(name) ?? null,
        lastChangeAt: this.lastChange.get(name) ?? null,
        scalable: (refusedUntil === undefined || refusedUntil <= now) && !measuring.has(name),
        minInstances: configured.get(name) ?? 1,
        queued: queued.get(name) ?? 0,
        ...(kind === "GPU" ? { gpuDevices: [...(seen?.devices ?? [])].sort((a, b) => a - b) } : {}),
        ...(batchDemand.has(name)
          ? {
              batch: {
                demandRps: Math.min(demandRps, batchDemand.get(name)! * busiestShare(name)),
                addedInstances: this.batchAdded.get(name) ?? 0,
              },
            }
          : {}),
        ...(viaOperators !== undefined && viaOperators.fromOperators.some((part) => part.rps > 0)
          ? {
              operatorDemand: {
                operator: viaOperators.fromOperators[0]!.operator,
                directRps: viaOperators.directRps,
                note: this.operatorNote(name, viaOperators, demandOfOperator, operatorDemand.capacities),
              },
            }
          : {}),
      };
    });
    this.lastView = states.map((state) => {
      const capacity = capacityOf(state, this.policy);
      return {
        model: state.model,
        instances: state.instances,
        parked: state.parked,
        kind: state.kind,
        demandRps: state.demandRps,
        capacityRps: capacity.rps,
        capacitySource: capacity.source,
        defaultReason:
          capacity.source === "report" ? null : capacities.overBudget.has(state.model) ? "over-budget" : "no-report",
        p99BudgetMs: this.options.p99BudgetMs,
        pinned: state.pinned,
        lastUsedAt: state.lastUsedAt !== null ? new Date(state.lastUsedAt).toISOString() : null,
        hardware:
          state.hardware === undefined
            ? null
            : {
                allowed: state.hardware.allowed,
                ...chooseHardware(state, state.hardware, this.budget, gpuSlotsInUse(states), this.policy),
              },
      };
    });
    // Models parked earlier and loaded again since: a request brought them back.
    const reloaded = [...this.parkedBefore].filter((name) => !parkedNow.has(name) && byModel.has(name));
    this.parkedBefore = parkedNow;
    for (const name of reloaded) {
      await this.record(
        {
          model: name,
          action: "LOAD",
          from: 0,
          to: Math.max(...byModel.get(name)!.versions.values()),
          demandRps: 0,
          capacityRps: 0,
          capacitySource: "default",
          headroom: this.policy.headroom,
          reason: "loaded again on demand: a request came for it after the scheduler unloaded it",
        },
        { applied: true, error: null, inputs: { observed: true } },
      );
    }
    if (previous === undefined) return []; // the first period only takes the baseline
    const decisions = decide({ enabled, policy: this.policy, budget: this.budget, models: states }, now);
    const inputsOf = (name: string): Record<string, unknown> => {
      const state = states.find((candidate) => candidate.model === name)!;
      return { ...state, budget: this.budget, policy: this.policy };
    };
    for (const name of [...this.lastFitHold.keys()])
      if (!decisions.some((decision) => decision.model === name && decision.reason.startsWith(FIT_HOLD)))
        this.lastFitHold.delete(name);
    const applied = new Map<string, number>();
    for (const decision of decisions) {
      const changed = await this.apply(decision, inputsOf(decision.model), now);
      if (changed && (decision.action === "SCALE_UP" || decision.action === "SCALE_DOWN"))
        applied.set(decision.model, decision.to);
    }
    if (enabled) await this.alignGateways(others, states, applied);
    if (enabled)
      await this.decideReplicas(
        cluster,
        others.length,
        workers.hostCpuCores,
        others,
        perInstanceOf,
        new Set(operators.map((o) => o.name)),
        now,
      );
    return decisions;
  }

  /** Each registered gateway's statistics and workers; one that does not answer is logged and left out this period. */
  private async readClusterGateways(): Promise<ClusterGatewayRead[]> {
    let gateways: ClusterGateway[];
    try {
      gateways = await this.clusterGateways();
    } catch (error) {
      this.logger.warn(
        { err: (error as Error).message },
        "resource scheduler: the cluster's gateways could not be listed; deciding on the control plane's gateway only",
      );
      return [];
    }
    const now = this.clock();
    const read = await Promise.all(
      gateways.map(async (gateway) => {
        const host = gateway.gatewayHost ?? "";
        try {
          const [stats, workers] = await Promise.all([
            gateway.client.statistics(),
            gateway.client.workers().catch(() => undefined),
          ]);
          // Its CPU instances per model (the most of any version, as for the control plane's gateway).
          const perVersion = new Map<string, number>();
          for (const worker of workers?.workers ?? [])
            if (worker.kind !== "GPU") {
              const key = `${worker.model}\u0000${worker.version}`;
              perVersion.set(key, (perVersion.get(key) ?? 0) + 1);
            }
          const instances = new Map<string, number>();
          for (const [key, count] of perVersion) {
            const model = key.split("\u0000")[0]!;
            instances.set(model, Math.max(instances.get(model) ?? 0, count));
          }
          return {
            gatewayHost: host,
            client: gateway.client,
            stats,
            reading: readingOf(host, now, stats, workers),
            hostCpuCores: workers?.hostCpuCores ?? null,
            instances: workers === undefined ? undefined : instances,
          };
        } catch (error) {
          this.logger.warn(
            { gateway: host, err: (error as Error).message },
            `resource scheduler: gateway ${host} could not be read; its demand is left out this period`,
          );
          return undefined;
        }
      }),
    );
    return read.filter((entry) => entry !== undefined);
  }

  /**
   * Instance counts are per gateway: each registered gateway is set to the count the control plane's gateway runs
   * after this period (decided on the busiest gateway's demand, or pinned), so all gateways run alike. They serve
   * one model store, so they differ only after a decision or a gateway's restart (its config's count). CPU models
   * only (a GPU model's count depends on the host's GPUs), loaded here and served there. A gateway that refuses
   * (its own --max-instances) is logged and asked again next period.
   */
  private async alignGateways(
    others: readonly ClusterGatewayRead[],
    states: readonly ModelState[],
    applied: ReadonlyMap<string, number>,
  ): Promise<void> {
    const target = new Map<string, number>();
    for (const state of states)
      if (!state.parked && state.kind === "CPU" && state.instances > 0)
        target.set(state.model, applied.get(state.model) ?? state.instances);
    for (const gateway of others) {
      if (gateway.instances === undefined) continue;
      for (const [model, count] of target) {
        const there = gateway.instances.get(model);
        if (there === undefined || there === count) continue;
        try {
          await gateway.client.scaleModel(model, count);
          this.logger.info(
            { gateway: gateway.gatewayHost, model, from: there, to: count },
            `resource scheduler: gateway ${gateway.gatewayHost} set to the per-gateway count of '${model}'`,
          );
        } catch (error) {
          this.logger.warn(
            { gateway: gateway.gatewayHost, model, to: count, err: (error as Error).message },
            `resource scheduler: gateway ${gateway.gatewayHost} refused the per-gateway count of '${model}'`,
          );
        }
      }
    }
  }

  /** The period's desired gateway replica count (gateway-replicas.ts), stored and published. */
  private async decideReplicas(
    cluster: ClusterDemand,
    gateways: number,
    ownCores: number,
    others: ReadonlyArray<{ hostCpuCores: number | null }>,
    perInstanceOf: (model: string) => { rps: number },
    operators: ReadonlySet<string>,
    now: number,
  ): Promise<ReplicaDecision> {
    // One gateway's cores: the smallest a registered gateway reports (they are alike), else this host's.
    const cores = others
      .map((other) => other.hostCpuCores)
      .filter((value): value is number => value !== null && value > 0);
    const policy = this.replicaPolicy(cores.length > 0 ? Math.min(...cores) : ownCores);
    // Operators are left out: their step models' demand already counts their calls.
    const models = [...cluster.models]
      .filter(([model]) => !operators.has(model) && !isShadowModelName(model))
      .map(([model, demand]) => ({
        model,
        demandRps: demand.rps,
        peakDemandRps: notePeak(this.summedHistory, model, now, demand.rps, this.policy.scaleDownCooldownMs),
        capacityRps: perInstanceOf(model).rps,
      }));
    const stored = await readDesiredReplicas(this.prisma);
    const decision = decideReplicas(
      {
        models,
        busyCores: cluster.busyCores,
        queueTimeMs: cluster.queueTimeMs,
        gateways,
        previous: stored?.desired ?? null,
        lastChangeAt: stored === null ? null : Date.parse(stored.changedAt),
      },
      policy,
      now,
    );
    const { changed } = await storeDesiredReplicas(
      this.prisma,
      decision,
      { ...clusterInputsView(cluster), models, needed: decision.needed, policy },
      now,
    );
    if (changed)
      this.logger.info(
        { from: decision.from, to: decision.replicas },
        `resource scheduler: desired gateway replicas ${decision.from ?? "unset"} -> ${decision.replicas}: ${decision.reason}`,
      );
    this.publishReplicas(decision.replicas);
    return decision;
  }

  private publishReplicas(replicas: number): void {
    this.lastReplicas = replicas;
    for (const listener of this.replicaListeners) listener(replicas);
  }

  /**
   * The request rate of the running batch jobs per model they target (their rows per second: one request a
   * row), for rule 9. Operator jobs are left out: their steps' demand comes through the operators' own.
   */
  private async batchDemand(): Promise<Map<string, number>> {
    const jobs = await this.prisma.batchJob.findMany({
      where: { state: "RUNNING", targetKind: "MODEL" },
      select: { targetName: true, rowsPerSec: true },
    });
    const demand = new Map<string, number>();
    for (const job of jobs) demand.set(job.targetName, (demand.get(job.targetName) ?? 0) + (job.rowsPerSec ?? 0));
    return demand;
  }

  /** Counts the instances added for a batch job, and those that went (given back, or any scale-down below them). */
  private noteBatchInstances(decision: SchedulerDecision): void {
    const added = this.batchAdded.get(decision.model) ?? 0;
    if (decision.batch === "grow") this.batchAdded.set(decision.model, added + decision.to - decision.from);
    else if (decision.to < decision.from)
      this.batchAdded.set(
        decision.model,
        Math.max(
          0,
          Math.min(added - (decision.batch === "give-back" ? decision.from - decision.to : 0), decision.to - 1),
        ),
      );
  }

  /** Applies one decision to the control plane's gateway and records it; true when it changed the gateway. */
  private async apply(decision: SchedulerDecision, inputs: Record<string, unknown>, now: number): Promise<boolean> {
    if (decision.action === "HOLD") {
      // A hardware fit HOLD (a config problem) is recorded when its problem changes (lastFitHold), apart from budget HOLDs.
      if (decision.reason.startsWith(FIT_HOLD)) {
        if (this.lastFitHold.get(decision.model) === decision.reason) return false;
        this.lastFitHold.set(decision.model, decision.reason);
        await this.record(decision, { applied: false, error: null, inputs });
        return false;
      }
      const key = `${decision.from}->${decision.to}`;
      if (this.lastHold.get(decision.model) === key) return false;
      this.lastHold.set(decision.model, key);
      await this.record(decision, { applied: false, error: null, inputs });
      return false;
    }
    this.lastHold.delete(decision.model);
    let error: string | null = null;
    try {
      if (decision.action === "UNLOAD") await this.gateway.parkModel(decision.model);
      else if (decision.action === "MOVE")
        await this.gateway.scaleModel(decision.model, decision.to, decision.kind === "GPU" ? "KIND_GPU" : "KIND_CPU");
      else await this.gateway.scaleModel(decision.model, decision.to);
      this.lastChange.set(decision.model, now);
      if (decision.action === "UNLOAD") this.parkedBefore.add(decision.model);
      this.noteBatchInstances(decision);
    } catch (failure) {
      error = (failure as Error).message;
      this.refused.set(decision.model, now + REFUSED_RETRY_MS);
      this.logger.warn(
        { model: decision.model, action: decision.action, err: error },
        "resource scheduler: the gateway refused a change",
      );
    }
    await this.record(decision, { applied: error === null, error, inputs });
    return error === null && decision.action !== "UNLOAD";
  }

  private async record(
    decision: SchedulerDecision,
    outcome: { applied: boolean; error: string | null; inputs: Record<string, unknown> },
  ): Promise<void> {
    const action = decision.action as SchedulerAction;
    await this.prisma.$transaction(async (tx) => {
      const row = await tx.schedulerDecision.create({
        data: {
          model: decision.model,
          operator: decision.operator ?? null,
          action,
          fromCount: decision.from,
          toCount: decision.to,
          demandRps: decision.demandRps,
          capacityRps: decision.capacityRps,
          capacitySource: decision.capacitySource,
          headroom: decision.headroom,
          kind: decision.kind ?? null,
          reason:
            outcome.error !== null ? `${decision.reason}; the gateway refused: ${outcome.error}` : decision.reason,
          inputs: JSON.parse(JSON.stringify(outcome.inputs)) as Prisma.InputJsonObject,
          applied: outcome.applied,
          error: outcome.error,
        },
      });
      await recordAudit(tx, SYSTEM_ACTOR, {
        action: `scheduler.${action.toLowerCase().replace(/_(\w)/g, (_: string, c: string) => c.toUpperCase())}`,
        targetType: "model",
        targetId: decision.model,
        before: { instances: decision.from },
        after: { instances: decision.to, decision: row.id.toString(), reason: row.reason, applied: outcome.applied },
      });
    });
    this.logger.info(
      { model: decision.model, action, from: decision.from, to: decision.to, applied: outcome.applied },
      `resource scheduler: ${decision.reason}`,
    );
  }

  /**
   * Each served operator's traffic over the period (measureOperatorTraffic: completions from the statistics,
   * arrivals from the change of its requests in flight, calls of its step models from the gateway's counts) and
   * its capacity now.
   */
  private operatorTraffic(
    operators: Awaited<ReturnType<GatewayClient["listOperators"]>>,
    rateOf: (name: string) => number,
    samples: ReadonlyMap<string, OperatorSample>,
    previous: Baseline | undefined,
    interval: number,
    queued: ReadonlyMap<string, number>,
    modelOf: Parameters<typeof operatorCapacity>[2],
  ): { traffic: OperatorTraffic[]; capacities: OperatorCapacity[] } {
    const latest = new Map(operators.map((operator) => [operator.name, operator]));
    const traffic: OperatorTraffic[] = [];
    const capacities: OperatorCapacity[] = [];
    for (const operator of [...latest.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const steps = modelStepsOf(operator.spec);
      const capacity = operatorCapacity(operator.name, steps, modelOf);
      capacities.push(capacity);
      if (previous === undefined || interval <= 0 || steps.length === 0) continue;
      traffic.push(
        measureOperatorTraffic({
          capacity,
          steps,
          completedRps: rateOf(operator.name),
          intervalSecs: interval,
          before: previous.operators.get(operator.name),
          now: samples.get(operator.name) ?? { inFlight: 0 },
          instancesBefore: previous.instances,
          queued,
        }),
      );
    }
    return { traffic, capacities };
  }

  /** The reason's prefix for a model operators call: whose demand it is, and the step's place in the operator. */
  private operatorNote(
    model: string,
    demand: ReturnType<typeof operatorDemands>["models"] extends Map<string, infer D> ? D : never,
    operators: ReturnType<typeof operatorDemands>["operators"],
    capacities: readonly OperatorCapacity[],
  ): string {
    const parts = demand.fromOperators
      .filter((part) => part.rps > 0)
      .map((part) => {
        const of = operators.find((entry) => entry.operator === part.operator);
        const steps = capacities.find((entry) => entry.operator === part.operator)?.steps ?? [];
        const mine = steps.filter((step) => step.model === model);
        const role = mine.some((step) => step.bottleneck) ? "its bottleneck" : "not its bottleneck";
        return `operator '${part.operator}' (step ${mine.map((step) => `'${step.step}'`).join(", ")}, ${role}): ${of?.basis ?? ""}, ${fmt(part.rps)} req/s on this model`;
      });
    const direct = demand.directRps > 0 ? ` + ${fmt(demand.directRps)} req/s direct` : "";
    return `${parts.join("; ")}${direct}`;
  }

  /** Keeps the demand of the last scale-down cooldown; returns its peak. */
  private notePeak(model: string, now: number, rps: number): number {
    return notePeak(this.history, model, now, rps, this.policy.scaleDownCooldownMs);
  }
}

/** A registered gateway as one period read it. */
interface ClusterGatewayRead {
  gatewayHost: string;
  client: GatewayClient;
  stats: ModelStatistics[];
  reading: GatewayReading;
  hostCpuCores: number | null;
  /** Its CPU instances per model; undefined when its workers could not be read. */
  instances: Map<string, number> | undefined;
}

/** Keeps `model`'s demand of the last `windowMs` in `history`; returns its peak. */
function notePeak(
  history: Map<string, Array<{ at: number; rps: number }>>,
  model: string,
  now: number,
  rps: number,
  windowMs: number,
): number {
  const window = (history.get(model) ?? []).filter((entry) => now - entry.at < windowMs);
  window.push({ at: now, rps });
  history.set(model, window);
  return Math.max(...window.map((entry) => entry.rps));
}

/** The scheduler's inputs per gateway and summed, as the console and the stored decision show them. */
export interface ClusterInputsView {
  gateways: Array<{
    /** null: the control plane's own gateway. */
    gatewayHost: string | null;
    requestsPerSecond: number;
    queueTimeMs: number | null;
    busyCores: number | null;
  }>;
  summed: { requestsPerSecond: number; queueTimeMs: number | null; busyCores: number | null };
}

function clusterInputsView(cluster: ClusterDemand): ClusterInputsView {
  return {
    gateways: cluster.gateways.map((gateway) => ({
      gatewayHost: gateway.gatewayHost,
      requestsPerSecond: gateway.requestsPerSecond,
      queueTimeMs: gateway.queueTimeMs,
      busyCores: gateway.busyCores,
    })),
    summed: {
      requestsPerSecond: cluster.requestsPerSecond,
      queueTimeMs: cluster.queueTimeMs,
      busyCores: cluster.busyCores,
    },
  };
}

function checkModelName(model: string): void {
  if (!MODEL_NAME.test(model)) {
    throw new AppError(
      "VALIDATION_FAILED",
      `'${model}' is not a model name (letters, digits, '_', '.', '-'; at most 128)`,
      { fieldErrors: [{ path: "model", message: "not a model name" }] },
    );
  }
}

const fmt = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
