import { OperonError } from "@operon/protocol/errors";
import type { CancelSignal } from "@operon/protocol/inference";
import type { Parameters, Tensor } from "@operon/protocol/tensor";
import type { ExecutionTiming } from "../observability/model-stats.js";
import { batchShapeKey, joinBatch, splitBatch } from "./batch-tensors.js";
import type { SchedulerPolicy } from "./scheduler-policy.js";
import { ConcurrencyPeak } from "./concurrency-peak.js";
import { DeadlineTimer, PROCESS_CLOCK, type TimerClock } from "./deadline-timer.js";

/** A batch-job-only batch waits for this many recent execution times without another request (backgroundWait). */
const BACKGROUND_VALLEY_EXECUTIONS = 2;
/**
 * Executions shorter than this (ns) hold a job's batch back for nothing: an online request that arrives during one
 * waits less than a millisecond, and a valley that short would be waited out by spinning on event-loop turns.
 */
const BACKGROUND_RULE_MIN_EXECUTION_NS = 1_000_000;

/**
 * The scheduler in front of a model version's instances: Triton's dynamic
 * batcher when the policy batches, its default scheduler (one request per
 * execution) when not. Both share the priority queues, queue policies
 * (timeouts with REJECT / DELAY, max_queue_size), cancellation and
 * preserve_ordering.
 *
 * Ownership rule: when `enqueue` returns a promise, the scheduler owns the
 * request and settles that promise exactly once; when it throws, the caller
 * still owns it.
 *
 * Batches form only from requests with equal non-batch shapes, never exceed
 * max_batch_size, and go to the least-busy instance the dispatcher offers.
 * A batch waits for more requests while no preferred size is reached and the
 * oldest request has waited less than max_queue_delay_microseconds, unless
 * recent traffic shows that every request its clients keep in flight is
 * already queued or executing (ConcurrencyPeak): then none can join, and it
 * goes at once.
 *
 * A streamed request (onResponse set: a decoupled model) is never batched
 * with another: it runs alone through the instance's runStream, its
 * responses go to onResponse as they come, and its promise resolves (with
 * no outputs) after the final one. Queueing, priorities, queue timeouts and
 * cancellation before it runs are the same as for any request.
 *
 * A batch job's requests (`background`) ride along: they fill the rows the
 * executions of other requests leave free, and a batch of theirs alone
 * waits for a valley in the other traffic (backgroundWait).
 */
export interface ScheduledRequest {
  inputs: Tensor[];
  outputNames: string[] | undefined;
  /** Inferences in this request (its first dimension when the model batches, else 1). */
  batchSize: number;
  /** Queue level from priorityLevelOf (0 when the model has no levels). */
  level: number;
  /** Queue timeout from queueTimeoutNsOf (0 = none). */
  timeoutNs: number;
  signal?: CancelSignal;
  /** What the instance learns of the request (see RequestContext). */
  context?: RequestContext;
  /** Set for a streamed request: receives every response, the last one with final: true. */
  onResponse?: (response: StreamedResponse) => void;
  /**
   * A batch job's request (traffic class "batch"): it rides along in executions other requests start, and starts
   * one of its own only when no other request arrived lately (see RequestScheduler's background rule).
   */
  background?: boolean;
}

/**
 * Per-request data for the instance: the BLS depth (the instance serves
 * its model's BLS calls one level deeper), and the id and parameters some
 * backends show the model. id and parameters reach the backend only when
 * the execution holds this one request (a batch of several is one tensor
 * set to the backend).
 */
export interface RequestContext {
  /** 0 for a client's request; n for a request a model made through BLS at depth n. */
  blsDepth: number;
  id?: string;
  /** The log ids (X-Request-Id) of the client requests this execution serves: the instance's log lines carry them. */
  logIds?: string[];
  /** JSON-safe (64-bit integers beyond 2^53 as decimal strings). */
  parameters?: Record<string, string | number | boolean>;
  /** The client's cancellation, for backends that can stop a request they already run (native backends). */
  signal?: CancelSignal;
  /** Outputs to keep in the instance's GPU memory (InferRequest.deviceOutputs). */
  deviceOutputs?: string[];
}

/** One response of a streamed request (the same shape as WorkerProcess's StreamResponse). */
export type StreamedResponse =
  | { outputs: Tensor[]; final: boolean; parameters?: Parameters }
  | { error: OperonError; final: boolean };

export interface ScheduledResult {
  outputs: Tensor[];
  timing: ExecutionTiming;
  queueNs: number;
  /** Inferences in the execution this request ran in. */
  executedBatchSize: number;
  /** Response parameters added by the runner (e.g. an operator's step timings). */
  parameters?: Parameters;
  /** An operator's step records (performance.now() ms), read only for a traced request's step spans. */
  steps?: ReadonlyArray<{ step: string; model?: string; status: string; startedAt?: number; endedAt?: number }>;
}

/** What the scheduler needs from the instances (implemented by InstancePool). */
export interface InstanceDispatcher {
  /** Reserves a ready instance with spare capacity, or undefined when none has any. */
  acquire(): ReservedInstance | undefined;
  /** Registers the callback to call whenever capacity may have appeared. */
  onCapacity(listener: () => void): void;
  /**
   * True when acquire() would find an instance now (it reserves nothing).
   * Optional: without it the scheduler assumes there may be one. The
   * batcher asks it before waiting out a queue delay: while every instance
   * is busy the batch keeps growing anyway, and the onCapacity callback
   * (not a timer turning the event loop over every few microseconds)
   * decides when it goes.
   */
  hasCapacity?(): boolean;
  /** True when no instance is alive and none will come back. */
  readonly isDead: boolean;
}

export interface ReservedInstance {
  /**
   * Runs one execution; the reservation ends when the promise settles.
   * context: the deepest BLS depth among the execution's requests, plus id
   * and parameters when it holds a single request.
   */
  run(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    context?: RequestContext,
  ): Promise<{ outputs: Tensor[]; timing: ExecutionTiming; parameters?: Parameters }>;
  /**
   * Runs one streamed request: each response goes to onResponse, exactly
   * one final; resolves after it and never rejects (failures are final
   * error responses). The reservation may end before (see ModelInstances).
   */
  /**
   * Runs several requests as one execution of a request-level backend: all
   * are sent at once (the worker hands them to execute() together); each
   * settles alone. The reservation ends when all have settled.
   */
  runRequests(
    requests: Array<{ inputs: Tensor[]; outputNames: string[] | undefined; context?: RequestContext }>,
  ): Promise<Array<PromiseSettledResult<{ outputs: Tensor[]; timing: ExecutionTiming; parameters?: Parameters }>>>;
  runStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamedResponse) => void,
    context?: RequestContext,
  ): Promise<{ timing: ExecutionTiming }>;
}

interface Job {
  request: ScheduledRequest;
  seq: number;
  key: string;
  enqueuedAt: bigint;
  /** Absolute hrtime (ns) when the queue timeout strikes; undefined = never. */
  deadline: bigint | undefined;
  delayed: boolean;
  settle: { resolve(result: ScheduledResult): void; reject(error: unknown): void };
  onAbort: (() => void) | undefined;
  /** Set when its batch failed as a whole: it runs again alone, once (see retrySplit). */
  solo: boolean;
  /** Result waiting for earlier requests (preserve_ordering). */
  pending: { ok: true; result: ScheduledResult } | { ok: false; error: unknown } | undefined;
  done: boolean;
}

export class RequestScheduler {
  private readonly clock: TimerClock;
  /**
   * FIFO per level that has requests queued (level 0 serves models without
   * priority levels), and those levels in service order (ascending: 1 is the
   * highest). Only levels in use exist, so no step of the scheduler costs
   * anything per configured level.
   */
  private readonly levels = new Map<number, Job[]>();
  private readonly activeLevels: number[] = [];
  /** Requests whose queue timeout passed under the DELAY action: served after everything else. */
  private readonly delayed: Job[] = [];
  /** Jobs not yet settled, in arrival order; kept only under preserve_ordering. */
  private readonly outstanding: Job[] = [];
  private seq = 0;
  private queued = 0;
  /** Queued jobs with a queue timeout: while 0, schedule() skips the timeout scans. */
  private withDeadline = 0;
  private running = 0;
  private stopped = false;
  private readonly timer: DeadlineTimer;
  /** What recent traffic says of a waiting batch's chances to grow (see ConcurrencyPeak). */
  private readonly concurrency = new ConcurrencyPeak();
  /** When the last request that is not background arrived (clock ns); undefined before one did. */
  private lastForegroundArrival: bigint | undefined;
  /** A moving average of an execution's wall time (ns), 0 before one finished: the background rule's yardstick. */
  private executionNs = 0;

  constructor(
    private readonly policy: SchedulerPolicy,
    private readonly dispatcher: InstanceDispatcher,
    private readonly hooks: {
      /** One execution finished (for execution_count and batch_stats). */
      onExecution?(batchSize: number, timing: ExecutionTiming): void;
      /** The queue length changed (for nv_inference_pending_request_count). */
      onQueueLength?(length: number): void;
      /** The number of requests executing changed. */
      onRunning?(count: number): void;
      /** A failed batch of `requests` requests was split to run them again one by one. */
      onBatchSplit?(requests: number): void;
      describe: string;
      /** Time and timers (tests pass a fake); default the process clock. */
      clock?: TimerClock;
    },
  ) {
    this.clock = hooks.clock ?? PROCESS_CLOCK;
    this.timer = new DeadlineTimer(() => this.schedule(), this.clock);
    // Returning capacity matters only to requests queued (an empty queue's pass would do nothing but cost a turn).
    dispatcher.onCapacity(() => {
      if (this.queued > 0) this.scheduleThisTurn();
    });
  }

  /** True while a scheduling pass is due at the end of this event-loop turn. */
  private turnPending = false;

  /**
   * Schedules once, at the end of this event-loop turn (the check phase, right after the I/O poll), however many
   * requests or returning instances this turn brought: a batch forms from everything read in one poll rather than the
   * first request taking an idle instance alone. A request waits microseconds for it, not a timer's millisecond.
   */
  private scheduleThisTurn(): void {
    if (this.turnPending) return;
    this.turnPending = true;
    this.clock.setImmediate(this.onTurn);
  }

  private readonly onTurn = (): void => {
    this.turnPending = false;
    this.schedule();
  };

  /** Requests queued, not yet executing. */
  get queueLength(): number {
    return this.queued;
  }

  /** Requests queued or executing. */
  get inFlightCount(): number {
    return this.queued + this.running;
  }

  enqueue(request: ScheduledRequest): Promise<ScheduledResult> {
    if (this.stopped) throw new OperonError("UNAVAILABLE", `${this.hooks.describe} is unloading`);
    if (this.dispatcher.isDead) throw new OperonError("UNAVAILABLE", `${this.hooks.describe} has no running instance`);
    if (request.signal?.aborted) throw cancelledError();
    const queuedAtLevel = this.levels.get(request.level)?.length ?? 0;
    const queuePolicy = this.policy.queuePolicies[request.level] ?? this.policy.queuePolicies[0]!;
    if (queuePolicy.maxQueueSize > 0 && queuedAtLevel >= queuePolicy.maxQueueSize) {
      throw new OperonError(
        "UNAVAILABLE",
        `Exceeds maximum queue size: ${this.hooks.describe} already has ${queuedAtLevel} requests queued at priority level ${request.level} (max_queue_size ${queuePolicy.maxQueueSize})`,
      );
    }
    const enqueuedAt = this.clock.now();
    if (request.background !== true) this.lastForegroundArrival = enqueuedAt;
    return new Promise<ScheduledResult>((resolve, reject) => {
      const job: Job = {
        request,
        seq: this.seq++,
        key: batchShapeKey(request.inputs),
        enqueuedAt,
        deadline: request.timeoutNs > 0 ? enqueuedAt + BigInt(request.timeoutNs) : undefined,
        delayed: false,
        settle: { resolve, reject },
        onAbort: undefined,
        solo: false,
        pending: undefined,
        done: false,
      };
      if (request.signal !== undefined) {
        // A bound function, not `() => this.cancel(job)`: with the arrow, every request stayed reachable from
        // old-generation memory after it finished and was promoted by the next scavenge (with everything it
        // holds) until a full collection; ~1.5 KB per request through the engine alone, 0 with this or with
        // V8's --no-allocation-site-pretenuring (bench/gc-survivors.mjs, ../frontends/live-list.ts).
        job.onAbort = this.cancel.bind(this, job);
        request.signal.addEventListener("abort", job.onAbort, { once: true });
      }
      this.queueAt(request.level).push(job);
      if (job.deadline !== undefined) this.withDeadline += 1;
      if (this.policy.preserveOrdering) this.outstanding.push(job);
      this.queued += 1;
      this.concurrency.noteArrival(this.queued + this.running, enqueuedAt);
      this.hooks.onQueueLength?.(this.queued);
      // Every instance busy and no queue timeout to watch: returning capacity schedules (onCapacity), so nothing
      // needs to run at the end of this turn.
      if (job.deadline === undefined && this.dispatcher.hasCapacity?.() === false) return;
      this.scheduleThisTurn();
    });
  }

  /** Rejects new work, waits for queued and running requests (up to timeoutMs), then fails what is left. */
  async stop(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.inFlightCount > 0 && Date.now() < deadline && !this.dispatcher.isDead) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.stopped = true;
    this.clearTimer();
    for (const job of [...this.allQueued()]) {
      this.removeQueued(job);
      this.finish(job, {
        ok: false,
        error: new OperonError("UNAVAILABLE", `${this.hooks.describe} was unloaded before the request ran`),
      });
    }
  }

  /** Fails every queued request (the instances are gone for good). */
  failQueued(error: OperonError): void {
    for (const job of [...this.allQueued()]) {
      this.removeQueued(job);
      this.finish(job, { ok: false, error });
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    this.expireTimeouts(now);
    if (this.dispatcher.isDead && this.queued > 0) {
      this.failQueued(new OperonError("UNAVAILABLE", `${this.hooks.describe} has no running instance`));
      return;
    }
    let wakeAt: bigint | undefined;
    while (this.queued > 0) {
      // Every instance busy (the common case under load): a batch built now would be dropped, and the returning
      // capacity calls schedule() again. Not building it saves a scan of the queue on every enqueue.
      if (this.dispatcher.hasCapacity?.() === false) break;
      const decision = this.nextBatch(now);
      if (decision.kind === "wait") {
        // No instance free: the wait ends with capacity (onCapacity calls schedule()), so no timer spins meanwhile.
        if (this.dispatcher.hasCapacity?.() !== false) wakeAt = decision.until;
        break;
      }
      const instance = this.dispatcher.acquire();
      if (instance === undefined) break; // onCapacity calls schedule() again
      this.dispatch(instance, decision.jobs);
    }
    const deadline = this.earliestDeadline();
    if (deadline !== undefined && (wakeAt === undefined || deadline < wakeAt)) wakeAt = deadline;
    this.armTimer(wakeAt);
  }

  /** Picks the next batch in priority order, or says how long to wait for a fuller one. */
  private nextBatch(now: bigint): { kind: "send"; jobs: Job[] } | { kind: "wait"; until: bigint } {
    const order = foregroundFirst(this.allQueued());
    const head = order[0]!;
    if (!this.policy.batching || head.request.onResponse !== undefined || head.solo) {
      const backgroundWait = this.backgroundWait([head], now);
      return backgroundWait !== undefined ? { kind: "wait", until: backgroundWait } : { kind: "send", jobs: [head] };
    }
    const max = this.policy.maxBatchSize;
    const jobs: Job[] = [];
    let total = 0;
    for (const job of order) {
      if (
        job.key !== head.key ||
        total + job.request.batchSize > max ||
        job.request.onResponse !== undefined ||
        job.solo
      )
        break;
      jobs.push(job);
      total += job.request.batchSize;
    }
    if (jobs.length === 0) return { kind: "send", jobs: [head] }; // a single request is never larger than max (validated)
    const backgroundWait = this.backgroundWait(jobs, now);
    if (backgroundWait !== undefined) return { kind: "wait", until: backgroundWait };
    const preferred = this.policy.preferredBatchSizes;
    if (total >= max) return { kind: "send", jobs };
    if (preferred.length > 0 && total >= preferred[preferred.length - 1]!)
      return { kind: "send", jobs: trimToPreferred(jobs, preferred) };
    if (this.policy.maxQueueDelayNs === 0) return { kind: "send", jobs };
    // Every request the clients have lately kept in flight is already here: none can join before one is answered.
    if (this.concurrency.allHere(this.queued + this.running, now))
      return { kind: "send", jobs: trimToPreferred(jobs, preferred) };
    const oldest = jobs.reduce((min, job) => (job.enqueuedAt < min ? job.enqueuedAt : min), head.enqueuedAt);
    const due = oldest + BigInt(this.policy.maxQueueDelayNs);
    if (now >= due) return { kind: "send", jobs: trimToPreferred(jobs, preferred) };
    return { kind: "wait", until: due };
  }

  /**
   * The background rule: a batch of batch-job requests only (`background`) may not start an execution while
   * other requests are arriving. An execution cannot be interrupted, so an online request that arrives while a
   * job's rows run waits for them (up to a whole execution); and for arrivals at random, the time since the
   * last one says nothing of when the next comes. So while online requests keep coming, a job's requests only
   * fill the rows left free in the executions online requests start (they are queued at the lowest priority,
   * so those come first), and the job takes an execution of its own only once no other request arrived for
   * twice the recent execution time: a valley, not a gap between two online requests. Returns when the batch
   * may start, or undefined when it may start now (it holds a request that is not background, no execution
   * has been timed yet or executions take under BACKGROUND_RULE_MIN_EXECUTION_NS, or the valley is there).
   */
  private backgroundWait(jobs: readonly Job[], now: bigint): bigint | undefined {
    const lastForeground = this.lastForegroundArrival;
    if (lastForeground === undefined || this.executionNs < BACKGROUND_RULE_MIN_EXECUTION_NS) return undefined;
    for (const job of jobs) if (job.request.background !== true) return undefined;
    const until = lastForeground + BigInt(Math.round(BACKGROUND_VALLEY_EXECUTIONS * this.executionNs));
    return now < until ? until : undefined;
  }

  /** One execution took `ns` (wall): the moving average the background rule measures valleys by. */
  private noteExecutionTime(ns: bigint): void {
    const sample = Number(ns);
    this.executionNs = this.executionNs === 0 ? sample : this.executionNs + (sample - this.executionNs) / 8;
  }

  private dispatch(instance: ReservedInstance, jobs: Job[]): void {
    if (jobs.length === 1 && jobs[0]!.request.onResponse !== undefined) {
      this.dispatchStream(instance, jobs[0]!, jobs[0]!.request.onResponse);
      return;
    }
    const startedAt = process.hrtime.bigint();
    for (const job of jobs) this.removeQueued(job);
    this.setRunning(this.running + jobs.length);
    const batchSizes = jobs.map((job) => job.request.batchSize);
    const executedBatchSize = batchSizes.reduce((sum, size) => sum + size, 0);
    if (jobs.length > 1 && !this.policy.joinInputs) {
      this.dispatchRequests(instance, jobs, startedAt, executedBatchSize);
      return;
    }
    let inputs: Tensor[];
    let outputNames: string[] | undefined;
    try {
      inputs = this.policy.batching
        ? joinBatch(
            jobs.map((job) => job.request.inputs),
            batchSizes,
          )
        : jobs[0]!.request.inputs;
      outputNames = unionOutputs(jobs);
    } catch (error) {
      this.setRunning(this.running - jobs.length);
      for (const job of jobs) this.finish(job, { ok: false, error });
      return;
    }
    const began = this.clock.now();
    instance.run(inputs, outputNames, executionContext(jobs)).then(
      ({ outputs, timing, parameters }) => {
        this.noteExecutionTime(this.clock.now() - began);
        this.setRunning(this.running - jobs.length);
        this.hooks.onExecution?.(executedBatchSize, timing);
        let parts: Tensor[][];
        try {
          parts = jobs.length === 1 ? [outputs] : splitBatch(outputs, batchSizes);
        } catch (error) {
          for (const job of jobs) this.finish(job, { ok: false, error });
          return;
        }
        jobs.forEach((job, index) => {
          const wanted = job.request.outputNames;
          const mine = parts[index]!;
          this.finish(job, {
            ok: true,
            result: {
              outputs: wanted === undefined ? mine : mine.filter((output) => wanted.includes(output.name)),
              timing,
              queueNs: Number(startedAt - job.enqueuedAt),
              executedBatchSize,
              // The backend's response parameters belong to a request of its own, not to a joined batch.
              ...(parameters !== undefined && jobs.length === 1 ? { parameters } : {}),
            },
          });
        });
      },
      (error: unknown) => {
        this.setRunning(this.running - jobs.length);
        if (this.retrySplit(jobs, error)) return;
        for (const job of jobs) this.finish(job, { ok: false, error });
      },
    );
  }

  /**
   * A batch of several requests that failed as a whole (the backend threw
   * for the execution, e.g. out of memory or one malformed request) runs
   * again one request at a time, once, ahead of the queue: one bad request
   * then fails alone (Triton's guide splits out-of-memory batches the same
   * way). Not for CANCELLED or UNAVAILABLE (the instance went away or the
   * model is unloading: retrying alone would not help), nor while stopping.
   * Returns whether the jobs were queued again (the scheduler owns them).
   */
  private retrySplit(jobs: Job[], error: unknown): boolean {
    if (jobs.length < 2 || this.stopped || this.dispatcher.isDead) return false;
    const kind = error instanceof OperonError ? error.kind : "INTERNAL";
    if (kind === "CANCELLED" || kind === "UNAVAILABLE") return false;
    const again = jobs.filter((job) => !job.done && !job.solo && job.request.signal?.aborted !== true);
    if (again.length !== jobs.length) return false;
    // Front of their level's queue, in their order; no queue timeout (they already waited their turn).
    for (const job of [...again].reverse()) {
      job.solo = true;
      job.delayed = false;
      job.deadline = undefined;
      this.queueAt(job.request.level).unshift(job);
    }
    this.queued += again.length;
    this.hooks.onQueueLength?.(this.queued);
    this.hooks.onBatchSplit?.(again.length);
    queueMicrotask(() => this.schedule());
    return true;
  }

  /** A streamed request: alone, through runStream; settles (without outputs) after its final response. */
  /** A batch for a request-level backend: one execution, each request settled on its own (its own errors). */
  private dispatchRequests(
    instance: ReservedInstance,
    jobs: Job[],
    startedAt: bigint,
    executedBatchSize: number,
  ): void {
    const requests = jobs.map((job) => ({
      inputs: job.request.inputs,
      outputNames: job.request.outputNames,
      ...(job.request.context !== undefined ? { context: job.request.context } : {}),
    }));
    const began = this.clock.now();
    void instance.runRequests(requests).then((settled) => {
      this.noteExecutionTime(this.clock.now() - began);
      this.setRunning(this.running - jobs.length);
      const wholeBatch = batchWideFailure(settled);
      if (wholeBatch !== undefined && this.retrySplit(jobs, wholeBatch)) return;
      const firstOk = settled.find((result) => result.status === "fulfilled");
      if (firstOk !== undefined) this.hooks.onExecution?.(executedBatchSize, firstOk.value.timing);
      jobs.forEach((job, index) => {
        const result = settled[index]!;
        if (result.status === "rejected") {
          this.finish(job, { ok: false, error: result.reason });
          return;
        }
        this.finish(job, {
          ok: true,
          result: {
            outputs: result.value.outputs,
            timing: result.value.timing,
            queueNs: Number(startedAt - job.enqueuedAt),
            executedBatchSize,
            ...(result.value.parameters !== undefined ? { parameters: result.value.parameters } : {}),
          },
        });
      });
    });
  }

  private dispatchStream(instance: ReservedInstance, job: Job, onResponse: (response: StreamedResponse) => void): void {
    const startedAt = process.hrtime.bigint();
    this.removeQueued(job);
    this.setRunning(this.running + 1);
    const { request } = job;
    const done = (timing: ExecutionTiming): void => {
      this.setRunning(this.running - 1);
      this.hooks.onExecution?.(request.batchSize, timing);
      this.finish(job, {
        ok: true,
        result: {
          outputs: [],
          timing,
          queueNs: Number(startedAt - job.enqueuedAt),
          executedBatchSize: request.batchSize,
        },
      });
    };
    instance.runStream(request.inputs, request.outputNames, onResponse, request.context).then(
      ({ timing }) => done(timing),
      (error: unknown) => {
        // runStream never rejects; if it did, the stream still needs its final response.
        onResponse({
          error: error instanceof OperonError ? error : new OperonError("INTERNAL", String(error)),
          final: true,
        });
        done({ computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 });
      },
    );
  }

  private setRunning(count: number): void {
    this.running = count;
    this.hooks.onRunning?.(count);
  }

  /** Settles a job, holding it back behind earlier ones when preserve_ordering is on. */
  private finish(job: Job, outcome: NonNullable<Job["pending"]>): void {
    if (job.done) return;
    if (job.onAbort !== undefined) job.request.signal?.removeEventListener("abort", job.onAbort);
    job.pending = outcome;
    if (!this.policy.preserveOrdering) {
      this.deliver(job);
      return;
    }
    while (this.outstanding.length > 0 && this.outstanding[0]!.pending !== undefined)
      this.deliver(this.outstanding.shift()!);
  }

  private deliver(job: Job): void {
    if (job.done) return;
    job.done = true;
    const outcome = job.pending!;
    if (outcome.ok) job.settle.resolve(outcome.result);
    else job.settle.reject(outcome.error);
  }

  private cancel(job: Job): void {
    if (!this.isQueued(job)) return; // already running: it completes, the frontend drops the response
    this.removeQueued(job);
    this.dropOutstanding(job);
    job.done = true;
    job.settle.reject(cancelledError());
    this.schedule();
  }

  /** Queue timeouts: REJECT fails the request, DELAY moves it behind every other request. */
  private expireTimeouts(now: bigint): void {
    if (this.withDeadline === 0) return;
    for (const level of [...this.activeLevels]) {
      const queue = this.levels.get(level)!;
      for (const job of [...queue]) {
        if (job.deadline === undefined || job.deadline > now) continue;
        const action = (this.policy.queuePolicies[level] ?? this.policy.queuePolicies[0]!).timeoutAction;
        if (action === "DELAY") {
          queue.splice(queue.indexOf(job), 1);
          this.dropLevelIfEmpty(level, queue);
          job.delayed = true;
          job.deadline = undefined;
          this.withDeadline -= 1;
          this.delayed.push(job);
        } else {
          this.removeQueued(job);
          this.dropOutstanding(job);
          job.done = true;
          if (job.onAbort !== undefined) job.request.signal?.removeEventListener("abort", job.onAbort);
          job.settle.reject(
            new OperonError(
              "UNAVAILABLE",
              `Request timeout expired: it waited in the queue of ${this.hooks.describe} longer than ${Math.round(job.request.timeoutNs / 1000)} µs`,
            ),
          );
        }
      }
    }
  }

  private earliestDeadline(): bigint | undefined {
    if (this.withDeadline === 0) return undefined;
    let earliest: bigint | undefined;
    for (const queue of this.levels.values()) {
      for (const job of queue)
        if (job.deadline !== undefined && (earliest === undefined || job.deadline < earliest)) earliest = job.deadline;
    }
    return earliest;
  }

  private armTimer(at: bigint | undefined): void {
    if (at === undefined) this.timer.clear();
    else this.timer.arm(at);
  }

  private clearTimer(): void {
    this.timer.clear();
  }

  /** Queued jobs in service order: level 1 (highest) first … then the delayed ones. */
  private allQueued(): Job[] {
    // The common case (one level in use, nothing delayed): the queue itself, read-only, no copy.
    if (this.activeLevels.length === 1 && this.delayed.length === 0) return this.levels.get(this.activeLevels[0]!)!;
    const order: Job[] = [];
    for (const level of this.activeLevels) order.push(...this.levels.get(level)!);
    order.push(...this.delayed);
    return order;
  }

  /** The queue of a level, made (and placed in service order) when the level gets its first request. */
  private queueAt(level: number): Job[] {
    let queue = this.levels.get(level);
    if (queue === undefined) {
      queue = [];
      this.levels.set(level, queue);
      let at = this.activeLevels.length;
      while (at > 0 && this.activeLevels[at - 1]! > level) at -= 1;
      this.activeLevels.splice(at, 0, level);
    }
    return queue;
  }

  private dropLevelIfEmpty(level: number, queue: Job[]): void {
    if (queue.length > 0) return;
    this.levels.delete(level);
    this.activeLevels.splice(this.activeLevels.indexOf(level), 1);
  }

  private isQueued(job: Job): boolean {
    return (job.delayed ? this.delayed : (this.levels.get(job.request.level) ?? [])).includes(job);
  }

  private removeQueued(job: Job): void {
    const queue = job.delayed ? this.delayed : this.levels.get(job.request.level);
    if (queue === undefined) return;
    const index = queue.indexOf(job);
    if (index < 0) return;
    queue.splice(index, 1);
    if (!job.delayed) this.dropLevelIfEmpty(job.request.level, queue);
    if (job.deadline !== undefined) this.withDeadline -= 1;
    this.queued -= 1;
    this.hooks.onQueueLength?.(this.queued);
  }

  private dropOutstanding(job: Job): void {
    if (!this.policy.preserveOrdering) return;
    const index = this.outstanding.indexOf(job);
    if (index >= 0) this.outstanding.splice(index, 1);
    while (this.outstanding.length > 0 && this.outstanding[0]!.pending !== undefined)
      this.deliver(this.outstanding.shift()!);
  }
}

/**
 * Triton sends the largest preferred batch it can form: the longest prefix
 * of whole requests whose sizes add up to a preferred size. When none does,
 * everything gathered goes.
 */
function trimToPreferred(jobs: Job[], preferred: readonly number[]): Job[] {
  if (preferred.length === 0) return jobs;
  let best = 0;
  let sum = 0;
  jobs.forEach((job, index) => {
    sum += job.request.batchSize;
    if (preferred.includes(sum)) best = index + 1;
  });
  return best > 0 ? jobs.slice(0, best) : jobs;
}

/** Outputs to compute for a batch: undefined (all) when any request wants all. */
function unionOutputs(jobs: Job[]): string[] | undefined {
  // Most requests want every output: nothing is allocated for them.
  for (const job of jobs) if (job.request.outputNames === undefined) return undefined;
  const names = new Set<string>();
  for (const job of jobs) for (const name of job.request.outputNames!) names.add(name);
  return [...names];
}

/** The instance's view of an execution: the deepest BLS depth, and id/parameters when it is one request. */
function executionContext(jobs: Job[]): RequestContext | undefined {
  if (jobs.length === 1) return jobs[0]!.request.context;
  return batchContext(jobs.map((job) => job.request.context));
}

/** The context of one execution serving several requests: the deepest BLS depth, every request's log ids. */
export function batchContext(contexts: ReadonlyArray<RequestContext | undefined>): RequestContext {
  let blsDepth = 0;
  let logIds: string[] | undefined;
  for (const context of contexts) {
    blsDepth = Math.max(blsDepth, context?.blsDepth ?? 0);
    if (context?.logIds !== undefined) (logIds ??= []).push(...context.logIds);
  }
  return logIds !== undefined ? { blsDepth, logIds } : { blsDepth };
}

/**
 * The error of a request-level execution that failed as a whole: every
 * request rejected with the same kind and message (the model threw for the
 * batch rather than answering each request). Undefined otherwise.
 */
function batchWideFailure(settled: ReadonlyArray<PromiseSettledResult<unknown>>): unknown {
  if (settled.length < 2) return undefined;
  const first = settled[0]!;
  if (first.status !== "rejected") return undefined;
  const key = (reason: unknown): string =>
    reason instanceof OperonError ? `${reason.kind}:${reason.message}` : `?:${String(reason)}`;
  const same = key(first.reason);
  return settled.every((result) => result.status === "rejected" && key(result.reason) === same)
    ? first.reason
    : undefined;
}

function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "request was cancelled by the client before it ran");
}

/**
 * The queue in service order with the first request that is not background ahead of the background ones before
 * it: at one priority level (a model without levels, or a client at the lowest), an online request goes before
 * the batch job's requests that arrived earlier, rather than behind a batch that the background rule holds. The
 * queue itself (no copy) when its head is not background, the common case.
 */
function foregroundFirst(order: Job[]): Job[] {
  if (order[0]?.request.background !== true) return order;
  const at = order.findIndex((job) => job.request.background !== true);
  if (at === -1) return order;
  return [order[at]!, ...order.slice(0, at), ...order.slice(at + 1)];
}
