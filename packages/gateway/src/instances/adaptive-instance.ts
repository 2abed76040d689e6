import { EventEmitter } from "node:events";
import type { Tensor } from "@operon/protocol/tensor";
import {
  type BackendInstance,
  type BlsRequestHandler,
  type ExecuteRequestOptions,
  type InstanceIsolation,
  type StreamRequestOptions,
  type StreamResponse,
  type WorkerExecuteResult,
  type WorkerExitInfo,
  type WorkerLoadResult,
  type WorkerLoadSpec,
} from "./backend-instance.js";
import { INLINE_PROBE_BUDGET_NS, measureExecutions, probeInputs } from "./inline-fit.js";
import type { LoopHold, LoopHoldClock } from "./loop-hold-clock.js";

/** An instance on the event loop whose executions' clock can be switched (InlineInstance). */
export interface TimedInlineInstance extends BackendInstance {
  holdClock: LoopHoldClock;
  /** Executions at most this long (ns) need no answer to whether the OS interrupted them. */
  holdCheckOverNs: number;
}

/** Executions timed by the checked clock after a wall-clock suspicion, before it goes back to the wall clock. */
const CHECKED_EXECUTIONS = 1000;

export interface AdaptiveInstanceOptions {
  instanceName: string;
  /** Starts the instance on the gateway's event loop; `onDuration` hears every execution's time and its clock. */
  startInline(onDuration: (hold: LoopHold, clock: LoopHoldClock) => void): TimedInlineInstance;
  /** Starts the instance on a thread. */
  startThread(): BackendInstance;
  /** What a freshly loaded thread runs before it serves (the model's warmup samples); default nothing. */
  prepareThread?(thread: BackendInstance): Promise<void>;
  /** The model's max_batch_size (0: it does not batch): the probe's batch. */
  maxBatchSize: number;
  /** Where the instance runs, and why: logged when it is decided or changes. */
  onPlaced(isolation: "inline" | "thread", reason: string): void;
  /** A move to a thread that failed (the instance stays inline). */
  onMoveFailed(error: Error): void;
  /** Overrides of the demotion rule (tests). */
  slowExecution?: Partial<SlowExecutionRule>;
  probeBudgetNs?: number;
}

/**
 * An instance of a model the server may run on its event loop when the
 * model proves tiny (backend-isolation "auto", the default for ONNX Runtime
 * on the CPU; inline-fit.ts says what "tiny" takes). It loads inline, runs
 * the largest batch the model can be sent, and stays inline when that
 * costs under INLINE_PROBE_BUDGET_NS; otherwise it moves to a thread before
 * it serves. While it serves inline, executions that still run long
 * (SlowExecutions) move it to a thread: new batches go to the thread once
 * it is loaded and warm, the ones under way finish inline. Executions are
 * timed by the wall clock; one over SlowExecutionRule.slowNs only raises a
 * suspicion: the next CHECKED_EXECUTIONS are timed by the checked clock
 * (loop-hold-clock.ts), which tells the executions the OS interrupted (on a
 * loaded host it preempts the gateway in the middle of a 30 µs run, which
 * then reads as milliseconds), and only the uninterrupted ones count
 * towards a move.
 *
 * To the pool it is one instance: one execution at a time, its `isolation`
 * where it runs now, its exit the current one's (a crash of the thread
 * restarts it, inline first again).
 */
export class AdaptiveInstance extends EventEmitter implements BackendInstance {
  readonly pid = process.pid;
  readonly startedAt = Date.now();
  readonly instanceName: string;
  private current: BackendInstance;
  private spec: WorkerLoadSpec | undefined;
  private moving: Promise<void> | undefined;
  private blsHandler: BlsRequestHandler | undefined;
  private stopped = false;
  /** Set once the instance serves inline: the probe's own runs are no verdict on its place. */
  private servingInline = false;
  private readonly slow: SlowExecutions;
  private readonly inline: TimedInlineInstance;
  /** Executions left to time by the CPU-bounded clock after a suspicion; 0: the wall clock. */
  private checksLeft = 0;

  constructor(private readonly options: AdaptiveInstanceOptions) {
    super();
    this.instanceName = options.instanceName;
    this.slow = new SlowExecutions(options.slowExecution);
    this.inline = options.startInline((hold, clock) => this.noteDuration(hold, clock));
    // Only a slow execution's interruption matters (noteDuration): the checked clock need not ask for the others.
    this.inline.holdCheckOverNs = this.slow.slowNs;
    this.current = this.adopt(this.inline);
  }

  get isolation(): InstanceIsolation {
    return this.current.isolation;
  }

  get tid(): number | undefined {
    return this.current.tid;
  }

  get inFlight(): number {
    return this.current.inFlight;
  }

  get executeSeconds(): number | undefined {
    return this.current.executeSeconds;
  }

  get customMetricsText(): string | undefined {
    return this.current.customMetricsText;
  }

  get onBlsRequest(): BlsRequestHandler | undefined {
    return this.blsHandler;
  }

  set onBlsRequest(handler: BlsRequestHandler | undefined) {
    this.blsHandler = handler;
    this.current.onBlsRequest = handler;
  }

  /** Loads inline, then runs the probe: the instance serves from where it proved it fits. */
  async load(spec: WorkerLoadSpec): Promise<WorkerLoadResult> {
    this.spec = spec;
    const loaded = await this.current.load(spec);
    const inputs = probeInputs(loaded.inputs, this.options.maxBatchSize);
    if (typeof inputs === "string") {
      await this.moveToThread(`the largest request it can be sent is unknown: ${inputs}`, true);
      return loaded;
    }
    const budgetNs = this.options.probeBudgetNs ?? INLINE_PROBE_BUDGET_NS;
    // A run as long as the one that moves a serving instance at once ends the probe: such a model does not fit,
    // and each run holds the event loop. (Not a few times the budget: on a loaded host the OS preempts one run
    // of a tiny model now and then, and the median is what judges it.)
    const abortNs = Math.max(budgetNs, this.slow.outrightNs);
    const { lowerQuartileNs, aborted } = await measureExecutions(this.current, inputs, { abortNs });
    const batch = this.options.maxBatchSize > 0 ? `a batch of ${this.options.maxBatchSize}` : "a request";
    const runs = aborted ? "ran once in" : "runs in";
    const measured = `${batch} ${runs} ${(lowerQuartileNs / 1e3).toFixed(0)} µs (budget ${(budgetNs / 1e3).toFixed(0)} µs)`;
    if (lowerQuartileNs > budgetNs) await this.moveToThread(measured, true);
    else {
      this.servingInline = true;
      this.options.onPlaced("inline", measured);
    }
    return loaded;
  }

  execute(inputs: Tensor[], outputNames?: string[], options?: ExecuteRequestOptions): Promise<WorkerExecuteResult> {
    return this.current.execute(inputs, outputNames, options);
  }

  executeStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamResponse) => void,
    options?: StreamRequestOptions,
  ): Promise<void> {
    return this.current.executeStream(inputs, outputNames, onResponse, options);
  }

  async stop(timeoutMs?: number): Promise<void> {
    this.stopped = true;
    await this.moving;
    await this.current.stop(timeoutMs);
  }

  kill(signal?: NodeJS.Signals): void {
    this.stopped = true;
    this.current.kill(signal);
  }

  private noteDuration(hold: LoopHold, clock: LoopHoldClock): void {
    if (!this.servingInline || this.moving !== undefined || this.stopped) return;
    if (clock === "wall") {
      if (hold.ns > this.slow.slowNs) {
        this.checksLeft = CHECKED_EXECUTIONS;
        this.inline.holdClock = "checked";
      }
      return;
    }
    // An interrupted execution says nothing of the model; without schedstat (preempted unknown), all count.
    const reason = hold.preempted === true ? undefined : this.slow.note(hold.ns);
    if (reason !== undefined) void this.moveToThread(reason, false);
    else if (--this.checksLeft <= 0) this.inline.holdClock = "wall";
  }

  /**
   * Starts the thread, loads and warms it, then sends it every later execution and stops the inline instance
   * (after the executions it holds). `failLoad`: during the load a failed move fails the load; while serving it
   * is reported and the instance stays inline.
   */
  private moveToThread(reason: string, failLoad: boolean): Promise<void> {
    const move = (async () => {
      const thread = this.options.startThread();
      try {
        await thread.load(this.spec!);
        await this.options.prepareThread?.(thread);
      } catch (error) {
        await thread.stop(1000).catch(() => undefined);
        if (failLoad) throw error;
        this.options.onMoveFailed(error as Error);
        return;
      }
      if (this.stopped) {
        await thread.stop(1000);
        return;
      }
      const inline = this.current;
      thread.onBlsRequest = this.blsHandler;
      this.current = this.adopt(thread);
      this.options.onPlaced("thread", reason);
      await inline.stop();
    })();
    this.moving = move.catch(() => undefined);
    return move;
  }

  /** Forwards the instance's exit while it is the current one (the inline one's, after a move, is no exit). */
  private adopt(instance: BackendInstance): BackendInstance {
    instance.once("exit", (info: WorkerExitInfo) => {
      if (instance === this.current) this.emit("exit", info);
    });
    return instance;
  }
}

export interface SlowExecutionRule {
  /** An execution over this (ns) is slow. Default 1 ms. */
  slowNs: number;
  /** This many slow executions among the last `window` move the instance. Default 3. */
  count: number;
  /** Default 1,000 executions. */
  window: number;
  /** One execution over this (ns) moves the instance at once. Default 10 ms. */
  outrightNs: number;
}

const DEFAULT_SLOW_EXECUTION: SlowExecutionRule = { slowNs: 1e6, count: 3, window: 1000, outrightNs: 10e6 };

/**
 * When an inline instance should move to a thread, from executions the OS did not interrupt: one that
 * held the event loop over 10 ms, or three over 1 ms among the last thousand (not the first one over 1 ms:
 * a page fault or a GC pause can lengthen one run of a tiny model).
 */
export class SlowExecutions {
  private readonly rule: SlowExecutionRule;
  /** One execution over this (ns) moves the instance at once. */
  get outrightNs(): number {
    return this.rule.outrightNs;
  }

  /** An execution over this (ns) is slow. */
  get slowNs(): number {
    return this.rule.slowNs;
  }

  private executions = 0;
  /** Execution numbers of the recent slow ones, oldest first. */
  private recent: number[] = [];

  constructor(rule: Partial<SlowExecutionRule> = {}) {
    this.rule = { ...DEFAULT_SLOW_EXECUTION, ...rule };
  }

  /** One execution's time; returns why the instance should move, or undefined. */
  note(ns: number): string | undefined {
    this.executions += 1;
    if (ns <= this.rule.slowNs) return undefined;
    const ms = (ns / 1e6).toFixed(1);
    if (ns > this.rule.outrightNs) return `an execution held the gateway's event loop for ${ms} ms`;
    this.recent.push(this.executions);
    while (this.recent.length > 0 && this.recent[0]! <= this.executions - this.rule.window) this.recent.shift();
    if (this.recent.length < this.rule.count) return undefined;
    return `${this.recent.length} of its last ${this.rule.window} executions held the gateway's event loop over ${this.rule.slowNs / 1e6} ms (the last ${ms} ms)`;
  }
}
