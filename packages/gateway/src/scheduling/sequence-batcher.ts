import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { ExecutionTiming } from "../observability/model-stats.js";
import { batchShapeKey, joinBatch, splitBatch } from "./batch-tensors.js";
import { DeadlineTimer, PROCESS_CLOCK, type TimerClock } from "./deadline-timer.js";
import {
  batchContext,
  type RequestContext,
  type ReservedInstance,
  type ScheduledRequest,
  type ScheduledResult,
} from "./request-scheduler.js";
import { controlTensors, type SequenceFlags, type SequencePolicy, showSequenceId } from "./sequence-policy.js";

/**
 * Triton's sequence batcher, beside the dynamic batcher: the scheduler of
 * a stateful model (sequence_batching). Every request names a sequence
 * (its correlation id); the requests of one sequence run one at a time, in
 * order, always on the same instance, and each gets the control inputs
 * and implicit state the model expects (sequence-policy.ts).
 *
 * Slots: each instance holds up to policy.slotsPerInstance sequences at
 * once (direct: max_batch_size slots; oldest: max_candidate_sequences). A
 * sequence takes a slot with its first request and keeps it until its END
 * request has run, it idles out, its instance is lost or the model
 * unloads. Sequences that find every slot taken wait in a FIFO backlog,
 * their requests queued, and take the next slot freed.
 *
 * Batches: an execution on an instance joins the next request of each of
 * its sequences that has one ready (ordered by arrival, equal shapes, at
 * most max_batch_size rows); it waits up to the strategy's
 * max_queue_delay_microseconds for more (oldest: up to a preferred size)
 * unless every sequence the instance holds already has a row in it. Rows
 * are only ever real requests: READY is always true (Triton's direct
 * strategy also sends empty slots with READY false; Operon does not).
 *
 * Implicit state lives here, in the gateway: a sequence's state tensors
 * are kept between its requests (initial_state on START), joined into the
 * batch like any input, and taken back out of the outputs, so the client
 * never sees them and a worker restart could not lose them. A worker that
 * exits still fails the sequences it held (UNAVAILABLE, naming the
 * instance): a backend may keep state of its own per sequence.
 *
 * A sequence with nothing queued or running for max_sequence_idle_microseconds
 * is released (its slot freed); a later request of it is refused, saying so.
 *
 * Ownership rule (the scheduler contract): when enqueue returns a promise
 * the batcher owns the request and settles it exactly once; when it
 * throws, the caller still owns it.
 */
export interface SequenceRequest extends ScheduledRequest {
  sequence?: SequenceFlags;
}

/** What the batcher needs from the instances (implemented by ModelInstances). */
export interface SequenceDispatcher {
  /** Names of the instances with a live worker, in pool order. */
  liveInstanceNames(): string[];
  /** Reserves that instance when it is live with spare capacity. */
  acquireOn(name: string): ReservedInstance | undefined;
  onCapacity(listener: () => void): void;
  readonly isDead: boolean;
}

interface Job {
  request: SequenceRequest;
  flags: SequenceFlags;
  sequence: Sequence;
  controls: Tensor[];
  enqueuedAt: bigint;
  settle: { resolve(result: ScheduledResult): void; reject(error: unknown): void };
  onAbort: (() => void) | undefined;
  done: boolean;
}

interface Sequence {
  flags: SequenceFlags;
  /** The instance whose slot it holds; undefined while in the backlog. */
  instance: string | undefined;
  queue: Job[];
  running: boolean;
  /** Its implicit state, one tensor per policy.states entry. */
  state: Tensor[];
  /** When it last had a request arrive or finish (idle release counts from here). */
  lastActivityAt: bigint;
  /** Its END request is queued or ran: no further request may follow. */
  endQueued: boolean;
  /** Set once released: a request still running finishes, but its state is dropped. */
  released: boolean;
}

/** Correlation ids of released sequences remembered for a clear refusal (oldest forgotten first). */
const REMEMBERED_RELEASES = 10_000;

/** Sequences one model holds at most (active and backlogged), and their state bytes at most. */
export const MAX_SEQUENCES = 100_000;
export const MAX_SEQUENCE_STATE_BYTES = 1024 * 1024 * 1024;

export class SequenceBatcher {
  private readonly clock: TimerClock;
  private readonly timer: DeadlineTimer;
  /** Active sequences (holding a slot or in the backlog) by key. */
  private readonly sequences = new Map<string, Sequence>();
  private readonly backlog: Sequence[] = [];
  private readonly slots = new Map<string, Set<Sequence>>();
  /** Why a recent sequence is gone, by key (idle, lost instance): the refusal of its later requests. */
  private readonly releasedWhy = new Map<string, OperonError>();
  private readonly maxSequences: number;
  private queued = 0;
  private running = 0;
  private stopped = false;
  /** No sequence can idle out before this (undefined: scan at the next schedule()). */
  private nextIdleAt: bigint | undefined;

  constructor(
    private readonly policy: SequencePolicy,
    private readonly dispatcher: SequenceDispatcher,
    private readonly hooks: {
      describe: string;
      /** True: a batch is one joined tensor set (ONNX Runtime); false: each request stays one (TypeScript backend). */
      joinInputs: boolean;
      onExecution?(batchSize: number, timing: ExecutionTiming): void;
      onQueueLength?(length: number): void;
      onRunning?(count: number): void;
      clock?: TimerClock;
    },
  ) {
    this.clock = hooks.clock ?? PROCESS_CLOCK;
    this.timer = new DeadlineTimer(() => this.schedule(), this.clock);
    const stateBytes = policy.states.reduce((sum, state) => sum + state.initial.length, 0);
    this.maxSequences = Math.max(
      1,
      Math.min(MAX_SEQUENCES, Math.floor(MAX_SEQUENCE_STATE_BYTES / Math.max(stateBytes, 1))),
    );
    dispatcher.onCapacity(() => this.schedule());
  }

  get queueLength(): number {
    return this.queued;
  }

  get inFlightCount(): number {
    return this.queued + this.running;
  }

  /** Active sequences: holding a slot, or waiting for one in the backlog. */
  get sequenceCount(): number {
    return this.sequences.size;
  }

  get backlogLength(): number {
    return this.backlog.length;
  }

  enqueue(request: SequenceRequest): Promise<ScheduledResult> {
    if (this.stopped) throw new OperonError("UNAVAILABLE", `${this.hooks.describe} is unloading`);
    if (this.dispatcher.isDead) throw new OperonError("UNAVAILABLE", `${this.hooks.describe} has no running instance`);
    if (request.signal?.aborted) throw cancelledError();
    const flags = request.sequence;
    if (flags === undefined)
      throw new OperonError("INTERNAL", `${this.hooks.describe}: request without sequence flags`);
    if (this.policy.maxBatchSize > 0 && request.batchSize !== 1) {
      throw new OperonError(
        "INVALID_ARG",
        `${this.hooks.describe} is a sequence model: each request of a sequence holds one row (batch size 1), got ${request.batchSize}`,
      );
    }
    const shown = showSequenceId(flags.id);
    let sequence = this.sequences.get(flags.key);
    if (flags.start) {
      if (sequence !== undefined && (sequence.running || sequence.queue.length > 0)) {
        throw new OperonError(
          "INVALID_ARG",
          `sequence ${shown} of ${this.hooks.describe} has requests queued or running; it cannot start again until they finish`,
        );
      }
      // Triton: a START for an id in use begins a new sequence (the old one, idle, is dropped).
      if (sequence !== undefined) this.release(sequence, undefined);
      if (this.sequences.size >= this.maxSequences) {
        throw new OperonError(
          "UNAVAILABLE",
          `${this.hooks.describe} already holds ${this.sequences.size} sequences, its limit; end some (sequence_end) or wait for idle ones to be released`,
        );
      }
      const controls = controlTensors(this.policy, flags);
      this.releasedWhy.delete(flags.key);
      sequence = {
        flags,
        instance: undefined,
        queue: [],
        running: false,
        state: this.policy.states.map((state) => ({
          name: state.inputName,
          datatype: state.datatype,
          shape: state.shape,
          data: state.initial,
        })),
        lastActivityAt: this.clock.now(),
        endQueued: false,
        released: false,
      };
      this.sequences.set(flags.key, sequence);
      this.backlog.push(sequence);
      return this.queue(request, flags, sequence, controls);
    }
    if (sequence === undefined) {
      const why = this.releasedWhy.get(flags.key);
      if (why !== undefined) throw why;
      throw new OperonError(
        "INVALID_ARG",
        `inference request for sequence ${shown} to ${this.hooks.describe} must specify the START flag on the first request of the sequence (parameter 'sequence_start')`,
      );
    }
    if (sequence.endQueued) {
      throw new OperonError(
        "INVALID_ARG",
        `sequence ${shown} of ${this.hooks.describe} already received its END request; start a new sequence (sequence_start) to continue`,
      );
    }
    return this.queue(request, flags, sequence, controlTensors(this.policy, flags));
  }

  private queue(
    request: SequenceRequest,
    flags: SequenceFlags,
    sequence: Sequence,
    controls: Tensor[],
  ): Promise<ScheduledResult> {
    const enqueuedAt = this.clock.now();
    return new Promise<ScheduledResult>((resolve, reject) => {
      const job: Job = {
        request,
        flags,
        sequence,
        controls,
        enqueuedAt,
        settle: { resolve, reject },
        onAbort: undefined,
        done: false,
      };
      if (request.signal !== undefined) {
        // Bound, not an arrow: see RequestScheduler.enqueue (the arrow kept finished requests reachable).
        job.onAbort = this.cancel.bind(this, job);
        request.signal.addEventListener("abort", job.onAbort, { once: true });
      }
      if (flags.end) sequence.endQueued = true;
      sequence.queue.push(job);
      sequence.lastActivityAt = enqueuedAt;
      this.setQueued(this.queued + 1);
      this.schedule();
    });
  }

  /**
   * Unload: requests of sequences holding a slot run (up to timeoutMs);
   * the backlog's fail at once; then every sequence ends, and what is
   * still queued fails UNAVAILABLE.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.stopped) return;
    for (const sequence of [...this.backlog])
      this.release(
        sequence,
        new OperonError(
          "UNAVAILABLE",
          `${this.hooks.describe} is unloading: sequence ${showSequenceId(sequence.flags.id)} ended before it got a slot`,
        ),
      );
    const deadline = Date.now() + timeoutMs;
    while (this.inFlightCount > 0 && Date.now() < deadline && !this.dispatcher.isDead) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.stopped = true;
    this.timer.clear();
    for (const sequence of [...this.sequences.values()]) {
      this.release(
        sequence,
        new OperonError(
          "UNAVAILABLE",
          `${this.hooks.describe} was unloaded: sequence ${showSequenceId(sequence.flags.id)} ended`,
        ),
      );
    }
  }

  /** Fails every queued request (the instances are gone for good); their sequences end. */
  failQueued(error: OperonError): void {
    for (const sequence of [...this.sequences.values()]) this.release(sequence, error);
  }

  /**
   * A worker exited: the sequences it held end (the backend may have kept
   * state of its own for them), their queued requests fail now and later
   * ones are refused, naming the instance.
   */
  instanceLost(name: string, why = `the worker of instance '${name}' that held it exited`): void {
    const held = this.slots.get(name);
    if (held === undefined) return;
    this.slots.delete(name);
    for (const sequence of [...held]) {
      this.release(
        sequence,
        new OperonError(
          "UNAVAILABLE",
          `sequence ${showSequenceId(sequence.flags.id)} of ${this.hooks.describe} was lost: ${why}; start the sequence again (sequence_start)`,
        ),
      );
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    let wakeAt = this.releaseIdle(now);
    if (this.dispatcher.isDead && this.sequences.size > 0) {
      this.failQueued(new OperonError("UNAVAILABLE", `${this.hooks.describe} has no running instance`));
      return;
    }
    this.assignSlots();
    for (const [name, held] of this.slots) {
      for (;;) {
        const ready: Job[] = [];
        for (const sequence of held) if (!sequence.running && sequence.queue.length > 0) ready.push(sequence.queue[0]!);
        if (ready.length === 0) break;
        ready.sort((a, b) => (a.enqueuedAt < b.enqueuedAt ? -1 : a.enqueuedAt > b.enqueuedAt ? 1 : 0));
        const decision = this.nextBatch(ready, held.size, now);
        if (decision.kind === "wait") {
          if (wakeAt === undefined || decision.until < wakeAt) wakeAt = decision.until;
          break;
        }
        const instance = this.dispatcher.acquireOn(name);
        if (instance === undefined) break; // onCapacity calls schedule() again
        this.dispatch(instance, decision.jobs);
      }
    }
    if (wakeAt === undefined) this.timer.clear();
    else this.timer.arm(wakeAt);
  }

  /** Gives free slots (least-loaded live instance first) to the backlog, oldest sequence first. */
  private assignSlots(): void {
    if (this.backlog.length === 0) return;
    const live = this.dispatcher.liveInstanceNames();
    for (const name of live) if (!this.slots.has(name)) this.slots.set(name, new Set());
    while (this.backlog.length > 0) {
      let best: string | undefined;
      let bestLoad = Infinity;
      for (const name of live) {
        const load = this.slots.get(name)!.size;
        if (load < this.policy.slotsPerInstance && load < bestLoad) {
          best = name;
          bestLoad = load;
        }
      }
      if (best === undefined) return;
      const sequence = this.backlog.shift()!;
      sequence.instance = best;
      this.slots.get(best)!.add(sequence);
    }
  }

  private nextBatch(
    ready: Job[],
    held: number,
    now: bigint,
  ): { kind: "send"; jobs: Job[] } | { kind: "wait"; until: bigint } {
    const max = this.policy.maxBatchSize;
    if (max === 0) return { kind: "send", jobs: [ready[0]!] };
    const key = batchShapeKey(ready[0]!.request.inputs);
    const jobs = ready.filter((job) => batchShapeKey(job.request.inputs) === key).slice(0, max);
    // Direct: once every sequence the instance holds has a row, no more can come.
    if (jobs.length >= max || (this.policy.strategy === "direct" && jobs.length === held))
      return { kind: "send", jobs };
    const preferred = this.policy.preferredBatchSizes;
    if (preferred.length > 0 && jobs.length >= preferred[preferred.length - 1]!) return { kind: "send", jobs };
    if (this.policy.maxQueueDelayNs === 0) return { kind: "send", jobs };
    const due = jobs[0]!.enqueuedAt + BigInt(this.policy.maxQueueDelayNs);
    if (now >= due) {
      const fit = [...preferred].reverse().find((size) => size <= jobs.length);
      return { kind: "send", jobs: fit !== undefined ? jobs.slice(0, fit) : jobs };
    }
    return { kind: "wait", until: due };
  }

  private dispatch(instance: ReservedInstance, jobs: Job[]): void {
    const startedAt = this.clock.now();
    for (const job of jobs) {
      job.sequence.queue.shift();
      job.sequence.running = true;
      if (job.onAbort !== undefined) job.request.signal?.removeEventListener("abort", job.onAbort);
      job.onAbort = undefined;
    }
    this.setQueued(this.queued - jobs.length);
    this.setRunning(this.running + jobs.length);
    const rows = jobs.map((job) => [...job.request.inputs, ...job.controls, ...job.sequence.state]);
    const outputNames = this.outputNamesOf(jobs);
    const executed = jobs.length;
    const settleAll = (outcome: { outputs: Tensor[][]; timing: ExecutionTiming } | { error: unknown }): void => {
      this.setRunning(this.running - jobs.length);
      if ("outputs" in outcome) this.hooks.onExecution?.(executed, outcome.timing);
      jobs.forEach((job, index) => {
        if ("error" in outcome) this.complete(job, { error: outcome.error });
        else
          this.complete(job, {
            outputs: outcome.outputs[index]!,
            timing: outcome.timing,
            queueNs: Number(startedAt - job.enqueuedAt),
            executed,
          });
      });
      this.schedule();
    };
    if (jobs.length > 1 && !this.hooks.joinInputs) {
      void instance
        .runRequests(rows.map((inputs, index) => ({ inputs, outputNames, ...contextOf(jobs[index]!) })))
        .then((settled) => {
          this.setRunning(this.running - jobs.length);
          const firstOk = settled.find((result) => result.status === "fulfilled");
          if (firstOk !== undefined) this.hooks.onExecution?.(executed, firstOk.value.timing);
          jobs.forEach((job, index) => {
            const result = settled[index]!;
            if (result.status === "rejected") this.complete(job, { error: result.reason });
            else
              this.complete(job, {
                outputs: result.value.outputs,
                timing: result.value.timing,
                queueNs: Number(startedAt - job.enqueuedAt),
                executed,
              });
          });
          this.schedule();
        });
      return;
    }
    let inputs: Tensor[];
    try {
      inputs =
        jobs.length === 1
          ? rows[0]!
          : joinBatch(
              rows,
              jobs.map(() => 1),
            );
    } catch (error) {
      settleAll({ error });
      return;
    }
    const context = jobs.length === 1 ? jobs[0]!.request.context : batchContext(jobs.map((job) => job.request.context));
    instance.run(inputs, outputNames, context).then(
      ({ outputs, timing }) => {
        let parts: Tensor[][];
        try {
          parts =
            jobs.length === 1
              ? [outputs]
              : splitBatch(
                  outputs,
                  jobs.map(() => 1),
                );
        } catch (error) {
          settleAll({ error });
          return;
        }
        settleAll({ outputs: parts, timing });
      },
      (error: unknown) => settleAll({ error }),
    );
  }

  /** Outputs the instance computes: undefined (all) when any request wants all, else theirs plus the state outputs. */
  private outputNamesOf(jobs: Job[]): string[] | undefined {
    const names = new Set<string>();
    for (const job of jobs) {
      if (job.request.outputNames === undefined) return undefined;
      for (const name of job.request.outputNames) names.add(name);
    }
    for (const name of this.policy.reservedOutputs) names.add(name);
    return [...names];
  }

  /** One request of a batch finished: keep its state outputs, answer it with the rest, end its sequence after END. */
  private complete(
    job: Job,
    outcome: { outputs: Tensor[]; timing: ExecutionTiming; queueNs: number; executed: number } | { error: unknown },
  ): void {
    const sequence = job.sequence;
    sequence.running = false;
    sequence.lastActivityAt = this.clock.now();
    if ("error" in outcome) {
      // The failed request left the state as it was: the sequence goes on from there.
      if (job.flags.end) this.release(sequence, undefined);
      this.settle(job, { ok: false, error: outcome.error });
      return;
    }
    const nextState: Tensor[] = [];
    for (const state of this.policy.states) {
      const output = outcome.outputs.find((tensor) => tensor.name === state.outputName);
      if (output === undefined || output.data.length !== state.initial.length) {
        const error = new OperonError(
          "INTERNAL",
          `${this.hooks.describe}: the model's output '${state.outputName}' (the next value of state '${state.inputName}') ${output === undefined ? "is missing" : `has ${output.data.length} bytes, not the state's ${state.initial.length}`}; sequence ${showSequenceId(job.flags.id)} ended`,
        );
        this.release(sequence, error);
        this.settle(job, { ok: false, error });
        return;
      }
      // A copy: the output may be a view of a batch buffer the next execution reuses.
      nextState.push({
        name: state.inputName,
        datatype: state.datatype,
        shape: state.shape,
        data: Buffer.from(output.data),
      });
    }
    if (!sequence.released) sequence.state = nextState;
    if (job.flags.end) this.release(sequence, undefined);
    const wanted = job.request.outputNames;
    const outputs = outcome.outputs.filter(
      (tensor) =>
        !this.policy.reservedOutputs.has(tensor.name) && (wanted === undefined || wanted.includes(tensor.name)),
    );
    this.settle(job, {
      ok: true,
      result: { outputs, timing: outcome.timing, queueNs: outcome.queueNs, executedBatchSize: outcome.executed },
    });
  }

  /**
   * Ends a sequence: frees its slot (or backlog place) and fails its
   * queued requests with `why`; `why` is remembered for its later
   * requests. undefined: it ended normally (END), nothing is remembered.
   */
  private release(sequence: Sequence, why: OperonError | undefined): void {
    if (sequence.released) return;
    sequence.released = true;
    if (this.sequences.get(sequence.flags.key) === sequence) this.sequences.delete(sequence.flags.key);
    if (sequence.instance !== undefined) this.slots.get(sequence.instance)?.delete(sequence);
    else {
      const at = this.backlog.indexOf(sequence);
      if (at >= 0) this.backlog.splice(at, 1);
    }
    if (why !== undefined) {
      this.releasedWhy.delete(sequence.flags.key);
      this.releasedWhy.set(sequence.flags.key, why);
      if (this.releasedWhy.size > REMEMBERED_RELEASES) this.releasedWhy.delete(this.releasedWhy.keys().next().value!);
    }
    const queued = sequence.queue.splice(0);
    if (queued.length > 0) this.setQueued(this.queued - queued.length);
    const error =
      why ??
      new OperonError("INVALID_ARG", `sequence ${showSequenceId(sequence.flags.id)} of ${this.hooks.describe} ended`);
    for (const job of queued) this.settle(job, { ok: false, error });
    // A freed slot may take a backlogged sequence.
    if (!this.stopped && this.backlog.length > 0) this.clock.setImmediate(() => this.schedule());
  }

  /**
   * Releases idle sequences; returns when the next one would idle out.
   * The scan is skipped until that time: a sequence's activity only moves
   * forward and a new one is due after every existing one, so the earliest
   * due time of the last scan bounds all of them. schedule() runs on every
   * request; with many sequences, a scan each time would cost O(sequences).
   */
  private releaseIdle(now: bigint): bigint | undefined {
    if (this.sequences.size === 0) return undefined;
    if (this.nextIdleAt !== undefined && now < this.nextIdleAt) return this.nextIdleAt;
    let next: bigint | undefined;
    const limit = BigInt(this.policy.maxIdleNs);
    for (const sequence of [...this.sequences.values()]) {
      if (sequence.running || sequence.queue.length > 0) continue;
      const due = sequence.lastActivityAt + limit;
      if (now >= due) {
        this.release(
          sequence,
          new OperonError(
            "INVALID_ARG",
            `sequence ${showSequenceId(sequence.flags.id)} of ${this.hooks.describe} was released after it was idle for longer than max_sequence_idle_microseconds (${this.policy.maxIdleNs / 1000} µs); start it again (sequence_start)`,
          ),
        );
      } else if (next === undefined || due < next) next = due;
    }
    // None idle now: any that goes idle from now on is due at now + limit at the earliest (activity only moves on).
    this.nextIdleAt = next ?? now + limit;
    return this.sequences.size > 0 ? this.nextIdleAt : undefined;
  }

  private cancel(job: Job): void {
    const at = job.sequence.queue.indexOf(job);
    if (at < 0) return; // running: it completes, the frontend drops the response
    job.sequence.queue.splice(at, 1);
    job.sequence.lastActivityAt = this.clock.now();
    if (job.flags.end) job.sequence.endQueued = false;
    this.setQueued(this.queued - 1);
    this.settle(job, { ok: false, error: cancelledError() });
    this.schedule();
  }

  private settle(job: Job, outcome: { ok: true; result: ScheduledResult } | { ok: false; error: unknown }): void {
    if (job.done) return;
    job.done = true;
    if (job.onAbort !== undefined) job.request.signal?.removeEventListener("abort", job.onAbort);
    if (outcome.ok) job.settle.resolve(outcome.result);
    else job.settle.reject(outcome.error);
  }

  private setQueued(count: number): void {
    this.queued = count;
    this.hooks.onQueueLength?.(count);
  }

  private setRunning(count: number): void {
    this.running = count;
    this.hooks.onRunning?.(count);
  }
}

function contextOf(job: Job): { context?: RequestContext } {
  return job.request.context !== undefined ? { context: job.request.context } : {};
}

function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "request was cancelled by the client before it ran");
}
