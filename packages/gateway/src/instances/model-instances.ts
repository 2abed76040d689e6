import type { WorkerInstanceInfo } from "@operon/protocol/admin";
import { OperonError } from "@operon/protocol/errors";
import type { Parameters, Tensor } from "@operon/protocol/tensor";
import type { ExecutionTiming } from "../observability/model-stats.js";
import {
  RequestScheduler,
  type InstanceDispatcher,
  type RequestContext,
  type ReservedInstance,
  type ScheduledRequest,
  type ScheduledResult,
  type StreamedResponse,
} from "../scheduling/request-scheduler.js";
import { schedulerPolicyFromConfig, type SchedulerPolicy } from "../scheduling/scheduler-policy.js";
import { SequenceBatcher, type SequenceDispatcher, type SequenceRequest } from "../scheduling/sequence-batcher.js";
import { sequenceFlagsOf, sequencePolicyFromConfig } from "../scheduling/sequence-policy.js";
import type { BackendInstance, InstanceIsolation } from "./backend-instance.js";
import { hostGpus } from "./gpu-inventory.js";
import { placementOf } from "./instance-placement.js";
import { DEFAULT_SANDBOX_LIMITS, isSandboxed } from "./worker-sandbox.js";
import { workerMemoryLimitBytes } from "./worker-memory-cap.js";
import type { BlsRequest, ExecuteRequestOptions } from "./worker-process.js";
import { type InstanceLaunchSpec, type ModelInstancesOptions, isolationOf, launchInstance } from "./instance-launch.js";
import { InstanceSupervisor, type PoolInstance } from "./instance-supervisor.js";

// Launching one instance lives in instance-launch.ts; its names are still offered here, to this module's importers.
export {
  assertPlaceable,
  type InstanceBlsHandler,
  type InstanceLaunchSpec,
  ISOLATION_PARAMETER,
  isolationOf,
  launchInstance,
  type ModelInstancesOptions,
} from "./instance-launch.js";

/** What the pool tells of one instance (GET /v2/operon/workers adds model, version and process usage). */
/** What the pool says of an instance; usage (CPU, memory) is read by the workers report, which gets an inline instance's from `executeSeconds`. */
export type InstanceWorkerInfo = Omit<WorkerInstanceInfo, "model" | "version" | "cpuSeconds" | "rssBytes"> & {
  executeSeconds?: number;
};

/**
 * The backend instances of one model version, each in its own worker
 * process, and the scheduler in front of them (RequestScheduler: Triton's
 * dynamic batcher or default scheduler, by the config). This class offers
 * the scheduler the least-busy ready instance with spare capacity.
 *
 * A worker that exits unexpectedly fails its in-flight requests at once with
 * UNAVAILABLE (WorkerProcess does that), is counted and logged, and is
 * restarted with backoff while the other instances keep serving; one over its
 * memory cap is recycled between requests (both: instance-supervisor.ts).
 *
 * Decoupled models (model_transaction_policy { decoupled: true }) are never
 * batched across requests: one request per execution, sent one at a time
 * to an instance. As in Triton, the instance is busy until the model's
 * execute returns, not until the request's final response: the worker
 * says when execute returned (its `executed` frame; the final response
 * counts too, whichever comes first), and the next request goes out while
 * the earlier ones still stream.
 *
 * BLS: every worker (the first ones and those restarted after a crash)
 * gets its model's BLS calls served by options.blsHandler, with the call's
 * BLS depth: one more than the deepest request the instance holds (queued
 * in the worker, executing, or still streaming). The wire does not say
 * which of them made the call, so the deepest one is assumed.
 */
export class ModelInstances implements InstanceDispatcher, SequenceDispatcher {
  private readonly instances: PoolInstance[] = [];
  private stopped = false;
  /** Set at the start of stop() or by haltRestarts(): a worker that exits from then on is not started again. */
  private restartsHalted = false;
  private readonly maxInFlight: number;
  private readonly labels: { model: string; version: string };
  private capacityListener: () => void = () => undefined;
  private nextHold = 1;
  readonly policy: SchedulerPolicy;
  /** model_transaction_policy { decoupled: true }: requests go through executeStream. */
  readonly decoupled: boolean;
  /** The dynamic batcher / default scheduler, or the sequence batcher for a model with sequence_batching. */
  private readonly scheduler: RequestScheduler | SequenceBatcher;
  /** Requests queued / executing now: the pending and executing gauges read them at scrape time. */
  private queueLength = 0;
  private running = 0;
  private readonly unhookScrape: () => void;
  private readonly unhookBackendMetrics: () => void;
  /** Called after each execution with its batch size (statistics). */
  onExecution: (batchSize: number, timing: ExecutionTiming) => void = () => undefined;
  /** Restarts crashed workers and recycles those over their memory cap (instance-supervisor.ts). */
  private readonly supervisor: InstanceSupervisor;

  private constructor(
    private spec: InstanceLaunchSpec,
    private readonly options: ModelInstancesOptions,
  ) {
    const policy = schedulerPolicyFromConfig(spec.config);
    const transaction = spec.config["model_transaction_policy"] as { decoupled?: boolean } | undefined;
    this.decoupled = transaction?.decoupled === true;
    // Decoupled: one request per execution, and one execution at a time per instance, so the worker never joins two.
    this.policy = this.decoupled ? { ...policy, batching: false } : policy;
    const sequencePolicy = sequencePolicyFromConfig(spec.config, spec.initialStates);
    if (sequencePolicy !== undefined && this.decoupled) {
      throw new OperonError(
        "UNSUPPORTED",
        `model '${spec.model}': a decoupled model cannot use sequence_batching in Operon (yet)`,
      );
    }
    // Sequence models send one batch at a time per instance, so the next batch gathers every ready sequence.
    this.maxInFlight =
      this.decoupled || sequencePolicy !== undefined
        ? 1
        : (options.maxInFlightPerInstance ?? (this.policy.batching ? 1 : 2));
    this.labels = { model: spec.model, version: spec.version };
    const configuredLimit = workerMemoryLimitBytes(spec.model, spec.config, {
      serverDefaultMb: options.workerMemoryLimitMb ?? 0,
      processIsolation: isolationOf(spec, options.defaultIsolation) === "process",
      sequenceModel: sequencePolicy !== undefined,
    });
    // A sandboxed worker is also recycled between requests past the sandbox's memory (its guard stops it during one).
    const sandboxLimit = isSandboxed(spec.model, spec.backend, spec.config, spec.parameters)
      ? (options.sandboxLimits ?? DEFAULT_SANDBOX_LIMITS).memoryMb * 1024 * 1024
      : undefined;
    const memoryLimitBytes =
      sandboxLimit === undefined ? configuredLimit : Math.min(configuredLimit ?? sandboxLimit, sandboxLimit);
    this.supervisor = new InstanceSupervisor(
      {
        spec: () => this.spec,
        stopped: () => this.stopped,
        restartsHalted: () => this.restartsHalted,
        isDead: () => this.isDead,
        adopt: (name, worker) => this.adopt(name, worker),
        publishUp: () => this.publishUp(),
        capacityChanged: () => this.capacityListener(),
        failQueued: (error) => this.scheduler.failQueued(error),
      },
      options,
      this.labels,
      memoryLimitBytes,
    );
    this.unhookScrape = options.metrics.onScrape(() => {
      options.metrics.pendingRequests.set(this.labels, this.queueLength);
      options.metrics.executingRequests.set(this.labels, this.running);
    });
    // Native backends' own metric families, as each worker of this pool last published them.
    this.unhookBackendMetrics = options.metrics.addBackendMetrics(() =>
      this.instances.flatMap((instance) =>
        instance.worker?.customMetricsText ? [instance.worker.customMetricsText] : [],
      ),
    );
    const hooks = {
      describe: `model '${spec.model}' version ${spec.version}`,
      onExecution: (batchSize: number, timing: ExecutionTiming) => this.onExecution(batchSize, timing),
      onQueueLength: (length: number) => void (this.queueLength = length),
      onRunning: (count: number) => void (this.running = count),
      onBatchSplit: (requests: number) => options.metrics.batchSplits.inc(this.labels, requests),
    };
    this.scheduler =
      sequencePolicy !== undefined
        ? new SequenceBatcher(sequencePolicy, this, { ...hooks, joinInputs: this.policy.joinInputs })
        : new RequestScheduler(this.policy, this, hooks);
  }

  /**
   * Starts `instanceNames.length` instances. `first`, when given, is an
   * already loaded worker (the one the config was auto-completed from) and
   * becomes the first instance.
   */
  static async start(
    spec: InstanceLaunchSpec,
    instanceNames: string[],
    options: ModelInstancesOptions,
    first?: BackendInstance,
  ): Promise<ModelInstances> {
    const pool = new ModelInstances(spec, options);
    const launches = instanceNames.map(async (name, index) => {
      const worker = index === 0 && first !== undefined ? first : (await launchInstance(spec, name, options)).worker;
      return { name, worker };
    });
    const settled = await Promise.allSettled(launches);
    const failure = settled.find((result) => result.status === "rejected");
    if (failure !== undefined) {
      pool.unhookScrape();
      pool.unhookBackendMetrics();
      await Promise.all(
        settled.map((result) => (result.status === "fulfilled" ? result.value.worker.stop(1000) : undefined)),
      );
      throw (failure as PromiseRejectedResult).reason;
    }
    for (const result of settled) {
      if (result.status === "fulfilled") pool.adopt(result.value.name, result.value.worker);
    }
    pool.publishUp();
    return pool;
  }

  /** Instances in the pool (live, restarting or failed); retiring ones are no longer counted. */
  get instanceCount(): number {
    return this.instances.length;
  }

  /**
   * Grows or shrinks the pool in place to `count` instances (the resource
   * scheduler's lever), without dropping a request:
   * - growing launches the new instances first and adds each one as soon
   *   as it has loaded (a failed launch throws; those already added stay);
   * - shrinking takes the newest instances out of the pool at once (no new
   *   work reaches them: acquire() only sees the pool), lets each finish
   *   what it holds (up to drainMs), then stops its worker.
   * `names(index)` names the instance at a position (the loader's naming).
   * Resizes of one pool must not overlap (the model manager serializes them).
   */
  async resize(
    count: number,
    names: (index: number) => string,
    drainMs = 30_000,
    config?: Record<string, unknown>,
  ): Promise<void> {
    if (!Number.isInteger(count) || count < 1)
      throw new OperonError("INVALID_ARG", `instance count must be a positive integer, got ${count}`);
    if (this.stopped || this.restartsHalted)
      throw new OperonError("UNAVAILABLE", `model '${this.spec.model}' version ${this.spec.version} is stopping`);
    // The rescaled config places the new instances (a KIND_GPU group's new names are on its GPUs, never the CPU).
    if (config !== undefined) this.spec = { ...this.spec, config };
    if (count > this.instances.length) {
      const taken = new Set(this.instances.map((instance) => instance.name));
      const wanted: string[] = [];
      for (let index = 0; wanted.length < count - this.instances.length; index += 1) {
        const name = names(index);
        if (!taken.has(name)) wanted.push(name);
      }
      const launches = await Promise.allSettled(wanted.map((name) => launchInstance(this.spec, name, this.options)));
      for (const [index, launch] of launches.entries()) {
        if (launch.status !== "fulfilled") continue;
        if (this.stopped || this.restartsHalted) await launch.value.worker.stop(1000);
        else this.adopt(wanted[index]!, launch.value.worker);
      }
      this.publishUp();
      this.capacityListener();
      const failure = launches.find((launch) => launch.status === "rejected");
      if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
      return;
    }
    const leaving = this.instances.splice(count);
    for (const instance of leaving) instance.retiring = true;
    // Sequences held by a leaving instance cannot move (a backend may keep state of its own): they end, saying why.
    if (this.scheduler instanceof SequenceBatcher)
      for (const instance of leaving)
        this.scheduler.instanceLost(
          instance.name,
          `instance '${instance.name}' that held it was removed (the pool was resized)`,
        );
    this.publishUp();
    await Promise.all(leaving.map((instance) => this.retireInstance(instance, drainMs)));
  }

  /**
   * Replaces every instance of the pool with new ones placed by `config`
   * (the resource scheduler's move between CPU and GPU), without failing a
   * request: all the new instances are launched and loaded first, beside
   * the old ones, which keep serving; only when every one of them is up do
   * they join the pool and the old ones leave it, each draining what it
   * holds (up to drainMs) before its worker stops. When any launch fails,
   * those already started are stopped and the pool is left exactly as it
   * was (old instances, old config), and the error is thrown: a KIND_GPU
   * instance the host cannot place is refused by launchInstance, never run
   * on the CPU. `names` must not clash with the pool's names (the caller
   * gives the new group a name of its own), and the old workers are never
   * restarted under the new config, which does not place them.
   */
  async replaceAll(names: readonly string[], config: Record<string, unknown>, drainMs = 30_000): Promise<void> {
    if (names.length === 0) throw new OperonError("INVALID_ARG", "a pool needs at least one instance");
    if (this.stopped || this.restartsHalted)
      throw new OperonError("UNAVAILABLE", `model '${this.spec.model}' version ${this.spec.version} is stopping`);
    const clash = names.find((name) => this.instances.some((instance) => instance.name === name));
    if (clash !== undefined)
      throw new OperonError("INTERNAL", `instance name '${clash}' is already in the pool of '${this.spec.model}'`);
    // Launched with their own spec: this.spec stays the old one until they are up (an old worker restarted during the
    // launches is placed by the old config, so a GPU instance never comes back on the CPU).
    const spec = { ...this.spec, config };
    const launches = await Promise.allSettled(names.map((name) => launchInstance(spec, name, this.options)));
    const failure = launches.find((launch) => launch.status === "rejected");
    if (failure !== undefined || this.stopped || this.restartsHalted) {
      await Promise.all(
        launches.map((launch) => (launch.status === "fulfilled" ? launch.value.worker.stop(1000) : undefined)),
      );
      if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
      throw new OperonError("UNAVAILABLE", `model '${this.spec.model}' version ${this.spec.version} is stopping`);
    }
    this.spec = spec;
    const leaving = this.instances.splice(0);
    for (const instance of leaving) instance.retiring = true;
    for (const [index, launch] of launches.entries())
      this.adopt(names[index]!, (launch as PromiseFulfilledResult<{ worker: BackendInstance }>).value.worker);
    if (this.scheduler instanceof SequenceBatcher)
      for (const instance of leaving)
        this.scheduler.instanceLost(
          instance.name,
          `instance '${instance.name}' that held it was replaced (the model moved to other hardware)`,
        );
    this.publishUp();
    this.capacityListener();
    await Promise.all(leaving.map((instance) => this.retireInstance(instance, drainMs)));
  }

  /** Waits until a retiring instance holds nothing (or drainMs passed), then stops its worker. */
  private async retireInstance(instance: PoolInstance, drainMs: number): Promise<void> {
    const deadline = Date.now() + drainMs;
    while (instance.worker !== undefined && instance.inFlight > 0 && Date.now() < deadline) await sleep(10);
    const worker = instance.worker;
    instance.worker = undefined;
    await worker?.stop(5000);
    this.options.logger.info(
      { model: this.spec.model, version: this.spec.version, instance: instance.name },
      "instance removed (pool resized)",
    );
  }

  /** Instances with a live worker. */
  get readyCount(): number {
    return this.instances.filter((instance) => instance.worker !== undefined).length;
  }

  /** Requests waiting in the queue (not yet sent to an instance). */
  get queuedCount(): number {
    return this.queueLength;
  }

  /** Requests queued or executing. */
  get pendingCount(): number {
    return this.scheduler.inFlightCount;
  }

  /** True when no instance is alive and none will come back. */
  get isDead(): boolean {
    return this.instances.every((instance) => instance.worker === undefined && instance.gaveUp);
  }

  describe(): Array<{ name: string; pid: number | undefined; inFlight: number; restarting: boolean }> {
    return this.instances.map((instance) => ({
      name: instance.name,
      pid: instance.worker?.pid,
      inFlight: instance.inFlight,
      restarting: instance.restarting,
    }));
  }

  /** Each instance's worker as the admin API shows it: placement, process, state and restarts. */
  workerInfos(): InstanceWorkerInfo[] {
    return this.instances.map((instance) => {
      const worker = instance.worker;
      const placement = placementOf(
        this.spec.model,
        this.spec.config,
        instance.name,
        (this.options.gpus ?? hostGpus()).count,
      );
      return {
        instance: instance.name,
        backend: this.spec.backend,
        kind: placement.kind === "KIND_GPU" ? "GPU" : "CPU",
        device: placement.device,
        isolation: worker?.isolation ?? this.askedIsolation(),
        pid: worker?.pid ?? null,
        ...(worker?.tid !== undefined ? { tid: worker.tid } : {}),
        ...(worker?.isolation === "inline" && worker.executeSeconds !== undefined
          ? { executeSeconds: worker.executeSeconds }
          : {}),
        state: worker !== undefined ? "READY" : instance.gaveUp ? "FAILED" : "RESTARTING",
        inFlight: instance.inFlight,
        restarts: instance.restarts,
        startedAt: worker !== undefined ? new Date(worker.startedAt).toISOString() : null,
      };
    });
  }

  /** Where an instance not running now would run: "auto" shows as a thread, where one that does not fit goes. */
  private askedIsolation(): InstanceIsolation {
    const asked = isolationOf(this.spec, this.options.defaultIsolation);
    return asked === "auto" ? "thread" : asked;
  }

  /** Hands a request to the scheduler; see RequestScheduler for the ownership rule. */
  execute(request: ScheduledRequest & { parameters?: Parameters }): Promise<ScheduledResult> {
    // A sequence model's request names its sequence with the sequence extension's parameters.
    if (this.scheduler instanceof SequenceBatcher) {
      const sequenced: SequenceRequest = {
        ...request,
        sequence: sequenceFlagsOf(request.parameters ?? {}, this.spec.model),
      };
      return this.scheduler.enqueue(sequenced);
    }
    return this.scheduler.enqueue(request);
  }

  /**
   * A streamed request (decoupled models): queued like any other, then run
   * alone; each response goes to onResponse as it comes, exactly one final.
   * The promise settles after the final response (no outputs in its
   * result), or rejects when the request never ran (queue timeout,
   * cancelled while queued, unloading); ownership as for execute.
   */
  executeStream(request: ScheduledRequest, onResponse: (response: StreamedResponse) => void): Promise<ScheduledResult> {
    if (this.scheduler instanceof SequenceBatcher)
      throw new OperonError(
        "UNSUPPORTED",
        `model '${this.spec.model}' is a sequence model: it does not stream responses`,
      );
    return this.scheduler.enqueue({ ...request, onResponse });
  }

  /**
   * No worker that exits from now on is started again (a shutdown begins:
   * SIGTERM to the process group reaches the workers as well, and restarting
   * them would leave processes behind the server).
   */
  haltRestarts(): void {
    this.restartsHalted = true;
  }

  /** Stops accepting work, lets queued and running requests finish (up to timeoutMs), then stops the workers. */
  async stop(timeoutMs = 30_000): Promise<void> {
    if (this.stopped) return;
    // Restarts end before the drain: on a shutdown the workers may get the signal too (one process group).
    this.restartsHalted = true;
    await this.scheduler.stop(timeoutMs);
    this.stopped = true;
    await Promise.all(this.instances.map((instance) => instance.worker?.stop(5000)));
    for (const instance of this.instances) instance.worker = undefined;
    this.unhookScrape();
    this.unhookBackendMetrics();
    this.options.metrics.pendingRequests.remove(this.labels);
    this.options.metrics.executingRequests.remove(this.labels);
  }

  /** InstanceDispatcher: reserves the least-busy ready instance with spare capacity. */
  acquire(): ReservedInstance | undefined {
    let best: PoolInstance | undefined;
    for (const instance of this.instances) {
      if (instance.worker === undefined || instance.recycling === true || instance.inFlight >= this.maxInFlight)
        continue;
      if (best === undefined || instance.inFlight < best.inFlight) best = instance;
    }
    return best === undefined ? undefined : this.reserve(best);
  }

  /** SequenceDispatcher: the instances a sequence can be given to now. */
  liveInstanceNames(): string[] {
    return this.instances.filter((instance) => instance.worker !== undefined).map((instance) => instance.name);
  }

  /** SequenceDispatcher: reserves this instance (a sequence's own) when it is live with spare capacity. */
  acquireOn(name: string): ReservedInstance | undefined {
    const instance = this.instances.find((candidate) => candidate.name === name);
    if (
      instance === undefined ||
      instance.worker === undefined ||
      instance.recycling === true ||
      instance.inFlight >= this.maxInFlight
    )
      return undefined;
    return this.reserve(instance);
  }

  private reserve(instance: PoolInstance): ReservedInstance {
    const worker = instance.worker!;
    instance.inFlight += 1;
    let reserved = true;
    const release = (): void => {
      if (!reserved) return;
      reserved = false;
      if (instance.worker === worker) instance.inFlight -= 1;
      this.supervisor.checkMemory(instance, worker);
      this.capacityListener();
    };
    return {
      run: (inputs, outputNames, context) => {
        const dropHold = this.hold(instance, context);
        return worker.execute(inputs, outputNames, workerOptions(context)).then(
          (result) => {
            dropHold();
            release();
            return result;
          },
          (error: unknown) => {
            dropHold();
            release();
            throw error;
          },
        );
      },
      runRequests: (requests) => {
        const drops = requests.map((request) => this.hold(instance, request.context));
        const send = () =>
          requests.map((request) =>
            worker.execute(request.inputs, request.outputNames, workerOptions(request.context)),
          );
        const runs = worker.corked !== undefined ? worker.corked(send) : send();
        return Promise.allSettled(runs).then((settled) => {
          for (const drop of drops) drop();
          release();
          return settled;
        });
      },
      runStream: (inputs, outputNames, onResponse, context) => {
        const dropHold = this.hold(instance, context);
        const started = process.hrtime.bigint();
        let executeNs = 0;
        const executed = (): void => {
          if (!reserved) return;
          executeNs = Number(process.hrtime.bigint() - started);
          release();
        };
        const deliver = (response: StreamedResponse): void => {
          if (response.final) executed();
          onResponse(response);
        };
        return worker
          .executeStream(inputs, outputNames, deliver, { ...workerOptions(context), onExecuted: executed })
          .then(() => {
            executed();
            dropHold();
            // The gateway's view: from sending the request until the model's execute returned.
            return { timing: { computeInputNs: 0, computeInferNs: executeNs, computeOutputNs: 0 } };
          });
      },
    };
  }

  /** InstanceDispatcher: whether acquire() would find an instance now. */
  hasCapacity(): boolean {
    for (const instance of this.instances)
      if (instance.worker !== undefined && instance.recycling !== true && instance.inFlight < this.maxInFlight)
        return true;
    return false;
  }

  onCapacity(listener: () => void): void {
    this.capacityListener = listener;
  }

  /** Records the BLS depth of a request the instance's worker now holds; returns its removal. */
  private hold(instance: PoolInstance, context: RequestContext | undefined): () => void {
    const depth = context?.blsDepth ?? 0;
    // serveBls takes the deepest held depth, at least 0: an execution at depth 0 need not be held (most are).
    if (depth === 0) return NOTHING_HELD;
    const token = this.nextHold++;
    instance.depths.set(token, depth);
    return () => void instance.depths.delete(token);
  }

  /** A BLS call of the instance's model, one level deeper than the deepest request the instance holds. */
  private serveBls(instance: PoolInstance, call: BlsRequest): Promise<{ outputs: Tensor[] }> {
    const handler = this.options.blsHandler;
    if (handler === undefined) {
      return Promise.reject(
        new OperonError(
          "UNAVAILABLE",
          `BLS is not available: nothing serves model calls from instance '${instance.name}'`,
        ),
      );
    }
    let deepest = 0;
    for (const depth of instance.depths.values()) deepest = Math.max(deepest, depth);
    return handler(call, deepest + 1);
  }

  private adopt(name: string, worker: BackendInstance): void {
    let instance = this.instances.find((candidate) => candidate.name === name);
    if (instance === undefined) {
      instance = {
        name,
        worker: undefined,
        restarts: 0,
        inFlight: 0,
        depths: new Map(),
        restarting: false,
        failedRestarts: 0,
        gaveUp: false,
      };
      this.instances.push(instance);
    }
    instance.worker = worker;
    const owner = instance;
    // Every worker of the pool, restarted ones included, has its model's BLS calls served.
    worker.onBlsRequest = (call) => this.serveBls(owner, call);
    worker.on("exit", (info: { code: number | null; signal: string | null; expected: boolean }) => {
      if (owner.worker !== worker) return;
      owner.worker = undefined;
      if (owner.retiring === true) return;
      owner.inFlight = 0;
      owner.depths.clear();
      this.publishUp();
      // The sequences it held end with it (the batcher says so to their later requests).
      if (this.scheduler instanceof SequenceBatcher) this.scheduler.instanceLost(name);
      if (info.expected || this.stopped || this.restartsHalted) return;
      this.supervisor.crashed(owner, worker, info);
    });
  }

  private publishUp(): void {
    this.options.metrics.workersUp.set(this.labels, this.readyCount);
  }
}

/** The id and parameters the worker shows the model; undefined when the execution is not one request's. */
function workerOptions(context: RequestContext | undefined): ExecuteRequestOptions | undefined {
  if (
    context === undefined ||
    (context.id === undefined &&
      context.parameters === undefined &&
      context.signal === undefined &&
      context.logIds === undefined &&
      context.deviceOutputs === undefined)
  )
    return undefined;
  // Set one by one, not spread from conditional objects: this runs for every execution, and each spread is a copy.
  const options: ExecuteRequestOptions = {};
  if (context.id !== undefined) options.id = context.id;
  if (context.logIds !== undefined) options.logIds = context.logIds;
  if (context.parameters !== undefined) options.parameters = context.parameters;
  if (context.signal !== undefined) options.signal = context.signal;
  if (context.deviceOutputs !== undefined) options.deviceOutputs = context.deviceOutputs;
  return options;
}

const NOTHING_HELD = (): void => undefined;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
