import { EventEmitter } from "node:events";
import { pathToFileURL } from "node:url";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import { instanceLoadOf } from "@operon/protocol/instance-load";
import { logIdFields } from "@operon/protocol/logger";
import type { Tensor } from "@operon/protocol/tensor";
import type { InProcessBackend, InProcessBackendModule } from "@operon/protocol/thread-wire";
import type { IoInfo } from "@operon/protocol/worker-wire";
import { type LoopHold, type LoopHoldClock, startLoopHoldClock } from "./loop-hold-clock.js";
import {
  type BackendInstance,
  type BlsRequestHandler,
  type ExecuteRequestOptions,
  oneResponseStream,
  type StreamRequestOptions,
  type StreamResponse,
  type WorkerExecuteResult,
  type WorkerExitInfo,
  type WorkerLoadSpec,
} from "./backend-instance.js";

export interface InlineInstanceOptions {
  /** Path of @operon/worker's in-process-backend.js (beside thread-main.js). */
  entry: string;
  instanceName: string;
  onLog?: (level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>) => void;
  /** An execution longer than this (ms) held the event loop too long: warned once per instance. Default 2 ms. */
  slowExecuteMs?: number;
  /**
   * Hears how long each execution held the event loop (ns), and by which clock (loop-hold-clock.ts; see
   * `holdClock`): how an adaptive instance (adaptive-instance.ts) judges its place.
   */
  onDuration?: (hold: LoopHold, clock: LoopHoldClock) => void;
}

/** Above this an inline execution delays every other request the gateway serves by as much. */
const DEFAULT_SLOW_EXECUTE_MS = 2;

/**
 * A backend instance on the gateway's event loop itself (InstanceIsolation
 * "inline", config parameter `operon_isolation: "inline"`): for tiny models
 * whose execution costs less than the hop to a thread. A thread instance
 * pays two thread wake-ups and a message each way per batch (tens of µs on
 * a loaded host, more than a small ONNX model's whole run); inline, the
 * batch runs where it was formed, its tensors read in place.
 *
 * The cost: while a batch runs, nothing else on the event loop does (HTTP,
 * gRPC, health). So it is for models that run in microseconds; an execution
 * over slowExecuteMs is logged once as a warning naming the model's
 * instance and the measured time, so an operator sees a misplaced model.
 * Executions run one at a time, in order (ONNX Runtime's node binding runs
 * a session synchronously after a setImmediate). Only trusted native
 * backends may run here (in-process-backend.ts refuses the others).
 */
export class InlineInstance extends EventEmitter implements BackendInstance {
  readonly isolation = "inline" as const;
  readonly pid = process.pid;
  readonly startedAt = Date.now();
  readonly instanceName: string;
  onBlsRequest: BlsRequestHandler | undefined;
  private backend: InProcessBackend | undefined;
  private queued = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private warnedSlow = false;
  private executeNs = 0;
  /** The clock executions are timed by (loop-hold-clock.ts): "wall" unless an adaptive instance checks a suspicion. */
  holdClock: LoopHoldClock = "wall";
  /** The "checked" clock tells whether the OS interrupted only executions longer than this (ns; loop-hold-clock.ts). */
  holdCheckOverNs = 0;
  private readonly slowExecuteNs: number;
  /** The log ids of the execution running now: the backend's log lines carry them. */
  private currentLogIds: string[] | undefined;

  private constructor(private readonly options: InlineInstanceOptions) {
    super();
    this.instanceName = options.instanceName;
    this.slowExecuteNs = (options.slowExecuteMs ?? DEFAULT_SLOW_EXECUTE_MS) * 1e6;
  }

  static start(options: InlineInstanceOptions): InlineInstance {
    return new InlineInstance(options);
  }

  get inFlight(): number {
    return this.queued;
  }

  /** Seconds the executions so far held the event loop. */
  get executeSeconds(): number {
    return this.executeNs / 1e9;
  }

  async load(spec: WorkerLoadSpec): Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }> {
    if (this.stopped) throw this.unavailable();
    const module = (await import(pathToFileURL(this.options.entry).href)) as InProcessBackendModule;
    this.backend = await module.loadInProcessBackend(
      instanceLoadOf(spec, this.instanceName),
      (level, message, fields) => this.onLog(level, message, fields ?? {}),
    );
    return { inputs: this.backend.inputs, outputs: this.backend.outputs };
  }

  execute(inputs: Tensor[], outputNames?: string[], options?: ExecuteRequestOptions): Promise<WorkerExecuteResult> {
    if (this.stopped || this.backend === undefined) return Promise.reject(this.unavailable());
    const backend = this.backend;
    this.queued += 1;
    // Chained: one execution at a time, in the order asked, as on a thread.
    const run = this.tail.then(async () => {
      this.currentLogIds = options?.logIds;
      const clock = this.holdClock;
      const held = startLoopHoldClock(clock, this.holdCheckOverNs);
      try {
        return await backend.execute(inputs, outputNames);
      } catch (error) {
        throw asOperonError(error);
      } finally {
        this.currentLogIds = undefined;
        this.queued -= 1;
        this.noteDuration(held(), clock);
      }
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Inline backends are never decoupled: the one response, final. */
  executeStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamResponse) => void,
    options?: StreamRequestOptions,
  ): Promise<void> {
    return oneResponseStream(this.execute(inputs, outputNames, options), onResponse);
  }

  /** Lets queued executions finish, then finalizes the backend. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.tail;
    await this.end();
  }

  /** There is nothing to kill on the gateway's own thread: the backend is finalized once queued executions end. */
  kill(): void {
    void this.stop();
  }

  private async end(): Promise<void> {
    const backend = this.backend;
    this.backend = undefined;
    try {
      await backend?.finalize();
    } catch (error) {
      this.onLog("error", `finalizing the backend failed: ${(error as Error).message}`, {});
    }
    const info: WorkerExitInfo = { code: 0, signal: null, expected: true };
    this.emit("exit", info);
  }

  private noteDuration(hold: LoopHold, clock: LoopHoldClock): void {
    const ns = hold.ns;
    this.executeNs += ns;
    this.options.onDuration?.(hold, clock);
    if (ns <= this.slowExecuteNs || this.warnedSlow) return;
    this.warnedSlow = true;
    this.onLog(
      "warn",
      `an execution of inline instance '${this.instanceName}' held the gateway's event loop for ${(ns / 1e6).toFixed(1)} ms (over ${this.slowExecuteNs / 1e6} ms): every other request waited as long; give this model operon_isolation "thread"`,
      { executeMs: Math.round(ns / 1e3) / 1e3 },
    );
  }

  private onLog(level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void {
    try {
      const ids = this.currentLogIds;
      this.options.onLog?.(level, message, ids !== undefined ? { ...logIdFields(ids), ...fields } : fields);
    } catch {
      // A failing log sink must not fail the execution.
    }
  }

  private unavailable(): OperonError {
    return new OperonError("UNAVAILABLE", `backend instance '${this.instanceName}' (inline) is not running`);
  }
}
