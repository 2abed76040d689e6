import { elementByteSize } from "@operon/protocol/datatypes";
import { OperonError, asOperonError } from "@operon/protocol/errors";
import { bfloat16BitsToNumber, float16BitsToNumber } from "@operon/protocol/half-float";
import type { CancelSignal, InferResponse } from "@operon/protocol/inference";
import { decodeBytesElements, type Parameters, type Tensor } from "@operon/protocol/tensor";
import {
  PARAM_PREFIX,
  type Condition,
  type ExitStepSpec,
  type ModelStepSpec,
  type OperatorSpec,
  type RouteStepSpec,
  type StepSpec,
} from "@operon/operator-spec/operator-spec-schema";
import { type DeviceEdge, type DeviceOf, planDeviceEdges, stillOnOneGpu } from "./device-edges.js";
import { StepLimiter } from "./step-limiter.js";
import { StepResilience, type StepAnswer, type StepAttempt, type StepResilienceHooks } from "./step-resilience.js";
import { analyzeOperator, type OperatorGraph, type StepNode } from "@operon/operator-spec/operator-structure";

/**
 * Runs operator requests in the gateway process. Per request, a whiteboard
 * (tensor name -> Tensor) starts with the request's inputs; a step starts as
 * soon as everything it reads is on the board (so independent branches run
 * in parallel), model steps call `runModel` (the engine's own inference, so
 * the step model's scheduler and batching apply), and their outputs go on
 * the board by reference: tensors are renamed, never copied.
 *
 * Routes and exits decide synchronously when their tensor is ready (see
 * @operon/operator-spec for their semantics). The first step failure fails the
 * request with the step's error kind and a message naming the operator,
 * step and model; the client's AbortSignal, a failure or an early exit
 * cancels the steps still outstanding.
 *
 * Each model step has an in-flight cap shared by all requests of the
 * operator (Triton's per-step backpressure): a step past its cap waits for
 * a slot before calling its model (again for each retry).
 *
 * A model step's retries, circuit breaker and fallback (when its spec has
 * them) run in step-resilience.ts: the step fails only once they gave up.
 *
 * Tensors on a GPU (device-edges.ts): between two adjacent steps whose
 * models run on the same single GPU, the producer is asked to keep its
 * output there (runModel's deviceOutputs) and the board holds a reference
 * (Tensor.device, no bytes) that only the consumer reads. The producer's
 * worker holds the region until the consumer's request is done (or the
 * request settles without it): then the board releases it. Operator outputs
 * are never kept on a GPU, so the client's answer is in host memory.
 */
export type RunModel = (
  model: string,
  version: string | undefined,
  inputs: Tensor[],
  outputNames: string[],
  signal: AbortSignal,
  parameters?: Parameters,
  /** Set (maybe empty) only for a step that reads or writes a tensor on a GPU: outputs to keep there. */
  deviceOutputs?: string[],
) => Promise<InferResponse>;

export type StepStatus = "ok" | "failed" | "skipped" | "cancelled" | "not-started";

/** What happened to one step of one request. Times are in ms on the executor's clock. */
export interface StepRecord {
  step: string;
  kind: StepSpec["kind"];
  model?: string;
  status: StepStatus;
  /** When everything the step reads was ready. */
  readyAt?: number;
  /** When it started running (after waiting for its in-flight cap). */
  startedAt?: number;
  endedAt?: number;
  /** Calls of the step's own model (more than 1 when retried). */
  attempts?: number;
  /** Set when a fallback answered for the step's model. */
  answeredBy?: Exclude<StepAnswer, "model">;
  /**
   * The tensors a model step that ended ok put on the board, named as on
   * the board, in the order of the step's outputs mapping. Only kept when
   * the run asked for them (DagRunOptions.keepStepOutputs).
   */
  outputs?: Tensor[];
}

export interface DagRunOptions {
  /** Request parameters: read by "$param.<name>" routes and exits, passed on to every model step. */
  parameters?: Parameters;
  /** Operator outputs to answer (default: all, in spec order). */
  outputNames?: string[];
  signal?: CancelSignal;
  /**
   * Keep each model step's outputs on its StepRecord (a debugging view).
   * Off by default: the board's intermediate tensors are then released as
   * soon as the request settles, and the normal path does no extra work.
   */
  keepStepOutputs?: boolean;
}

export interface DagRunResult {
  /** The requested operator outputs, in the order asked. */
  outputs: Tensor[];
  /** One record per step, in spec order. */
  steps: StepRecord[];
  /** The exit step that answered, when one did. */
  exitedBy?: string;
  /** Total time model steps waited for their in-flight caps, ms. */
  capWaitMs: number;
  /** Total time model steps ran (sum over steps, not wall time), ms. */
  modelMs: number;
}

export interface DagExecutorOptions {
  runModel: RunModel;
  /** Clock in ms (default performance.now). */
  now?: () => number;
  /** Called when a step that ran ends (status ok, failed or cancelled), including after the request settled. */
  onStepEnd?: (record: StepRecord) => void;
  /** Hooks for a model step's retries, fallbacks and breaker state changes (metrics). */
  resilienceHooks?: (stepId: string) => StepResilienceHooks;
  /** Where step models' tensors may stay on a GPU; unset = never (every tensor in host memory). */
  deviceOf?: DeviceOf;
}

export class DagExecutor {
  readonly graph: OperatorGraph;
  /** Edges along which a tensor may stay on a GPU; empty for an operator of CPU steps. */
  readonly deviceEdges: DeviceEdge[];
  private readonly limiters = new Map<string, StepLimiter>();
  private readonly resilience = new Map<string, StepResilience>();
  private active = 0;

  constructor(
    readonly spec: OperatorSpec,
    readonly options: DagExecutorOptions,
  ) {
    this.graph = analyzeOperator(spec);
    this.deviceEdges = planDeviceEdges(spec, this.graph, options.deviceOf);
    for (const step of spec.steps) {
      if (step.kind !== "model") continue;
      this.limiters.set(step.id, new StepLimiter(step.maxInflight ?? spec.maxInflightPerStep ?? 0));
      const hooks = options.resilienceHooks?.(step.id);
      this.resilience.set(
        step.id,
        new StepResilience(step, {
          operator: spec.name,
          batching: (spec.maxBatchSize ?? 0) > 0,
          ...(hooks !== undefined ? { hooks } : {}),
        }),
      );
    }
  }

  /** A model step's retry, breaker and fallback policy. */
  stepResilience(stepId: string): StepResilience | undefined {
    return this.resilience.get(stepId);
  }

  /** Stops the breakers' timers (the operator is going away). */
  stop(): void {
    for (const resilience of this.resilience.values()) resilience.breaker?.stop();
  }

  /** Requests running now. */
  get inFlightCount(): number {
    return this.active;
  }

  /** The in-flight cap of a model step (for inspection and tests). */
  limiter(stepId: string): StepLimiter {
    let limiter = this.limiters.get(stepId);
    if (limiter === undefined) {
      limiter = new StepLimiter(0);
      this.limiters.set(stepId, limiter);
    }
    return limiter;
  }

  now(): number {
    return this.options.now?.() ?? performance.now();
  }

  /** Runs one request; rejects with an OperonError. */
  run(inputs: Tensor[], options: DagRunOptions = {}): Promise<DagRunResult> {
    this.active += 1;
    const run = new DagRun(this, inputs, options);
    return run.promise.finally(() => {
      this.active -= 1;
    });
  }
}

type StepState = "waiting" | "running" | "done" | "skipped";

/** The state of one request: its whiteboard and each step's progress. */
class DagRun {
  readonly promise: Promise<DagRunResult>;
  private resolve!: (result: DagRunResult) => void;
  private reject!: (error: OperonError) => void;
  private readonly board = new Map<string, Tensor>();
  /** Optional operator inputs the request left out: ready, but with no tensor. */
  private readonly absent = new Set<string>();
  /** Tensors no step will produce (every producer was skipped). */
  private readonly dead = new Set<string>();
  private readonly state = new Map<string, StepState>();
  private readonly chosen = new Map<string, Set<string>>();
  private readonly records = new Map<string, StepRecord>();
  private readonly controller = new AbortController();
  private settled = false;
  private running = 0;
  private capWaitMs = 0;
  private modelMs = 0;
  /** This request's tensors kept on a GPU (board names); undefined when none (the common case). */
  private onDevice: Set<string> | undefined;
  /** The request's signal fired: its reason when that is an OperonError (e.g. UNAVAILABLE at unload), else CANCELLED. */
  private readonly onClientAbort = (): void => {
    const reason: unknown = this.options.signal?.reason;
    this.fail(
      reason instanceof OperonError
        ? reason
        : new OperonError("CANCELLED", `operator '${this.spec.name}': the request was cancelled`),
    );
  };

  constructor(
    private readonly executor: DagExecutor,
    inputs: Tensor[],
    private readonly options: DagRunOptions,
  ) {
    this.promise = new Promise<DagRunResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    for (const input of inputs) this.board.set(input.name, input);
    if (executor.deviceEdges.length > 0 && options.keepStepOutputs !== true) this.planDevice();
    for (const input of this.spec.inputs) if (!this.board.has(input.name)) this.absent.add(input.name);
    for (const step of this.spec.steps) {
      this.state.set(step.id, "waiting");
      this.records.set(step.id, {
        step: step.id,
        kind: step.kind,
        ...(step.kind === "model" ? { model: step.model } : {}),
        status: "not-started",
      });
    }
    if (options.signal?.aborted) {
      this.onClientAbort();
      return;
    }
    options.signal?.addEventListener("abort", this.onClientAbort, { once: true });
    this.pump();
  }

  private get spec(): OperatorSpec {
    return this.executor.spec;
  }

  /** The operator's device edges whose two models still share one GPU now. */
  private planDevice(): void {
    const deviceOf = this.executor.options.deviceOf!;
    for (const edge of this.executor.deviceEdges)
      if (stillOnOneGpu(edge, deviceOf)) (this.onDevice ??= new Set()).add(edge.tensor);
  }

  /** A step's outputs to keep on the GPU; undefined when it neither reads nor writes a tensor there. */
  private deviceOutputsOf(step: ModelStepSpec): string[] | undefined {
    const onDevice = this.onDevice;
    if (onDevice === undefined) return undefined;
    const kept = Object.entries(step.outputs)
      .filter(([, tensor]) => onDevice.has(tensor))
      .map(([output]) => output);
    return kept.length > 0 || Object.values(step.inputs).some((tensor) => onDevice.has(tensor)) ? kept : undefined;
  }

  /** Gives GPU tensors back to the workers holding them: those a step read (its request is done), or all. */
  private releaseDevice(tensors: Iterable<string>): void {
    for (const name of tensors) {
      // Once each: a released tensor leaves the request's device set.
      if (!this.onDevice!.delete(name)) continue;
      this.board.get(name)?.device?.release?.();
    }
  }

  /** Skips and starts every step it can until nothing changes; finishes when all steps are done or skipped. */
  private pump(): void {
    let progressed = true;
    while (progressed && !this.settled) {
      progressed = false;
      for (const node of this.executor.graph.nodes.values()) {
        if (this.settled) return;
        if (this.state.get(node.step.id) !== "waiting") continue;
        const verdict = this.verdict(node);
        if (verdict === "wait") continue;
        progressed = true;
        if (verdict === "skip") this.skip(node);
        else this.start(node);
      }
    }
    if (this.settled || this.running > 0) return;
    const waiting = [...this.state.entries()].filter(([, state]) => state === "waiting").map(([id]) => id);
    if (waiting.length === 0) {
      this.finish();
      return;
    }
    // Only an unvalidated spec gets here (a cycle, or a tensor nothing produces).
    this.fail(
      new OperonError(
        "INTERNAL",
        `operator '${this.spec.name}' cannot make progress: step(s) ${waiting.map((id) => `'${id}'`).join(", ")} wait for tensors no step will produce`,
      ),
    );
  }

  private verdict(node: StepNode): "wait" | "skip" | "ready" {
    if (node.reads.some((tensor) => this.dead.has(tensor))) return "skip";
    if (node.gate !== undefined) {
      const gateState = this.state.get(node.gate);
      if (gateState === "skipped") return "skip";
      if (gateState !== "done") return "wait";
      if (!this.chosen.get(node.gate)?.has(node.step.id)) return "skip";
    }
    for (const exit of node.guards) {
      const exitState = this.state.get(exit);
      if (exitState === "waiting" || exitState === "running") return "wait";
    }
    return node.reads.every((tensor) => this.board.has(tensor) || this.absent.has(tensor)) ? "ready" : "wait";
  }

  private skip(node: StepNode): void {
    this.state.set(node.step.id, "skipped");
    this.records.get(node.step.id)!.status = "skipped";
    for (const tensor of node.writes) {
      const producers = this.executor.graph.producers.get(tensor) ?? [];
      if (producers.every((id) => this.state.get(id) === "skipped")) this.dead.add(tensor);
    }
  }

  private start(node: StepNode): void {
    const step = node.step;
    const record = this.records.get(step.id)!;
    record.readyAt = this.executor.now();
    if (step.kind === "model") {
      this.startModel(step, record);
      return;
    }
    record.startedAt = record.readyAt;
    try {
      if (step.kind === "route") this.decideRoute(step);
      else this.decideExit(step);
    } catch (error) {
      record.status = "failed";
      record.endedAt = this.executor.now();
      this.executor.options.onStepEnd?.(record);
      this.fail(this.stepError(step, error));
      return;
    }
    this.state.set(step.id, "done");
    if (record.status === "not-started") record.status = "ok";
    record.endedAt = this.executor.now();
    this.executor.options.onStepEnd?.(record);
  }

  private decideRoute(step: RouteStepSpec): void {
    const value = this.readValue(step.input);
    const match = step.cases.find((c) => conditionHolds(c.when, value));
    const next = match?.next ?? step.default;
    if (next === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `no case matches ${describeValue(step.input, value)} and the route has no default`,
      );
    }
    this.chosen.set(step.id, new Set(next));
  }

  private decideExit(step: ExitStepSpec): void {
    if (!conditionHolds(step.when, this.readValue(step.input))) return;
    const names = this.options.outputNames ?? this.spec.outputs.map((output) => output.name);
    const outputs: Tensor[] = [];
    for (const name of names) {
      const source = step.outputs[name];
      const tensor = source === undefined ? undefined : this.board.get(source);
      if (tensor === undefined) {
        throw new OperonError("INTERNAL", `the exit fired but has no tensor for operator output '${name}'`);
      }
      outputs.push(tensor.name === name ? tensor : { ...tensor, name });
    }
    this.state.set(step.id, "done");
    this.records.get(step.id)!.status = "ok";
    this.settle({ outputs, exitedBy: step.id });
  }

  private startModel(step: ModelStepSpec, record: StepRecord): void {
    this.state.set(step.id, "running");
    this.running += 1;
    const inputs: Tensor[] = [];
    for (const [modelInput, tensorName] of Object.entries(step.inputs)) {
      const tensor = this.board.get(tensorName);
      if (tensor !== undefined) inputs.push(tensor.name === modelInput ? tensor : { ...tensor, name: modelInput });
    }
    const outputNames = Object.keys(step.outputs);
    const deviceOutputs = this.deviceOutputsOf(step);
    const signal = this.controller.signal;
    const batchSize = (this.spec.maxBatchSize ?? 0) > 0 ? (inputs[0]?.shape[0] ?? 1) : 1;
    // One call of a model (the step's, or its fallback model), behind the step's in-flight cap.
    const attempt: StepAttempt = async (model, version) => {
      const release = await this.executor.limiter(step.id).acquire(signal);
      record.startedAt ??= this.executor.now();
      if (model === step.model) record.attempts = (record.attempts ?? 0) + 1;
      try {
        return await this.executor.options.runModel(
          model,
          version,
          inputs,
          outputNames,
          signal,
          this.options.parameters,
          ...(deviceOutputs !== undefined ? [deviceOutputs] : []),
        );
      } finally {
        release();
        record.endedAt = this.executor.now();
      }
    };
    const resilience = this.executor.stepResilience(step.id)!;
    const run = async (): Promise<InferResponse> => {
      const { response, answer } = await resilience.call(attempt, signal, batchSize);
      if (answer !== "model") record.answeredBy = answer;
      record.startedAt ??= this.executor.now();
      record.endedAt ??= record.startedAt;
      return response;
    };
    run().then(
      (response) => this.modelDone(step, record, response),
      (error: unknown) => this.modelFailed(step, record, error),
    );
  }

  private modelDone(step: ModelStepSpec, record: StepRecord, response: InferResponse): void {
    this.running -= 1;
    if (this.onDevice !== undefined) {
      // The step's request is done: what it read on a GPU goes back; outputs nobody will read go back too.
      this.releaseDevice(Object.values(step.inputs));
      if (this.settled) for (const output of response.outputs) output.device?.release?.();
    }
    this.capWaitMs += record.startedAt! - record.readyAt!;
    this.modelMs += record.endedAt! - record.startedAt!;
    if (this.settled) {
      record.status = "cancelled";
      this.executor.options.onStepEnd?.(record);
      return;
    }
    const produced: Array<[string, Tensor]> = [];
    for (const [modelOutput, tensorName] of Object.entries(step.outputs)) {
      const tensor = response.outputs.find((output) => output.name === modelOutput);
      if (tensor === undefined) {
        record.status = "failed";
        this.executor.options.onStepEnd?.(record);
        this.fail(
          this.stepError(step, new OperonError("INTERNAL", `the model answered without output '${modelOutput}'`)),
        );
        return;
      }
      produced.push([tensorName, tensor.name === tensorName ? tensor : { ...tensor, name: tensorName }]);
    }
    for (const [tensorName, tensor] of produced) this.board.set(tensorName, tensor);
    // References only: the record shares the board's tensors, nothing is copied.
    if (this.options.keepStepOutputs === true) record.outputs = produced.map(([, tensor]) => tensor);
    record.status = "ok";
    this.state.set(step.id, "done");
    this.executor.options.onStepEnd?.(record);
    this.pump();
  }

  private modelFailed(step: ModelStepSpec, record: StepRecord, error: unknown): void {
    this.running -= 1;
    if (this.onDevice !== undefined) this.releaseDevice(Object.values(step.inputs));
    const ran = record.startedAt !== undefined;
    if (ran) {
      this.capWaitMs += record.startedAt! - record.readyAt!;
      this.modelMs += (record.endedAt ?? record.startedAt!) - record.startedAt!;
    }
    record.status = this.settled ? "cancelled" : "failed";
    if (ran) this.executor.options.onStepEnd?.(record);
    if (!this.settled) this.fail(this.stepError(step, error));
  }

  private finish(): void {
    const names = this.options.outputNames ?? this.spec.outputs.map((output) => output.name);
    const outputs: Tensor[] = [];
    for (const name of names) {
      const tensor = this.board.get(name);
      if (tensor === undefined) {
        const producers = this.executor.graph.producers.get(name) ?? [];
        this.fail(
          new OperonError(
            "INTERNAL",
            `operator '${this.spec.name}' produced no value for output '${name}': ${
              producers.length > 0
                ? `its producer step(s) ${producers.map((id) => `'${id}'`).join(", ")} were skipped by the routes taken`
                : "no step produces it"
            }`,
          ),
        );
        return;
      }
      outputs.push(tensor);
    }
    this.settle({ outputs });
  }

  private settle(result: { outputs: Tensor[]; exitedBy?: string }): void {
    if (this.settled) return;
    this.settled = true;
    if (this.onDevice !== undefined) this.releaseUnread();
    this.options.signal?.removeEventListener("abort", this.onClientAbort);
    // An early exit leaves steps running: cancel them (their results are not needed).
    if (this.running > 0)
      this.controller.abort(new OperonError("CANCELLED", `operator '${this.spec.name}' answered early`));
    this.resolve({
      outputs: result.outputs,
      steps: this.spec.steps.map((step) => this.records.get(step.id)!),
      ...(result.exitedBy !== undefined ? { exitedBy: result.exitedBy } : {}),
      capWaitMs: this.capWaitMs,
      modelMs: this.modelMs,
    });
  }

  /** GPU tensors whose consumer will not run now (the request settled): back to their workers. Running consumers release their own. */
  private releaseUnread(): void {
    for (const name of this.onDevice!) {
      const consumer = this.executor.deviceEdges.find((edge) => edge.tensor === name)?.consumer;
      if (consumer === undefined || this.state.get(consumer.id) !== "running") this.releaseDevice([name]);
    }
  }

  private fail(error: OperonError): void {
    if (this.settled) return;
    this.settled = true;
    if (this.onDevice !== undefined) this.releaseUnread();
    this.options.signal?.removeEventListener("abort", this.onClientAbort);
    this.controller.abort(error);
    this.reject(error);
  }

  private stepError(step: StepSpec, error: unknown): OperonError {
    const cause = asOperonError(error);
    const model = step.kind === "model" ? ` (model '${step.model}')` : "";
    return new OperonError(
      cause.kind,
      `operator '${this.spec.name}' step '${step.id}'${model} failed: ${cause.message}`,
      { cause },
    );
  }

  /** The first element of a tensor, or a request parameter ("$param.<name>"). */
  private readValue(source: string): ScalarValue {
    if (source.startsWith(PARAM_PREFIX)) {
      const value = this.options.parameters?.[source.slice(PARAM_PREFIX.length)];
      return typeof value === "bigint" ? Number(value) : value;
    }
    const tensor = this.board.get(source);
    return tensor === undefined ? undefined : firstElement(tensor);
  }
}

type ScalarValue = number | string | boolean | undefined;

/** Whether a condition holds for a value; an absent value satisfies none. */
export function conditionHolds(condition: Condition, value: ScalarValue): boolean {
  if (value === undefined) return false;
  if ("equals" in condition) {
    const expected = condition.equals;
    if (typeof value === "string" || typeof expected === "string") return String(value) === String(expected);
    return Number(value) === Number(expected);
  }
  const number = typeof value === "string" ? Number(value) : Number(value);
  if (Number.isNaN(number)) return false;
  return "lessThan" in condition ? number < condition.lessThan : number > condition.greaterThan;
}

function describeValue(source: string, value: ScalarValue): string {
  const what = source.startsWith(PARAM_PREFIX)
    ? `request parameter '${source.slice(PARAM_PREFIX.length)}'`
    : `tensor '${source}'`;
  return value === undefined ? `${what} (not set)` : `${what} = ${JSON.stringify(value)}`;
}

/** The first element of a tensor as a JS value; undefined for an empty tensor. */
export function firstElement(tensor: Tensor): ScalarValue {
  const data = tensor.data;
  if (tensor.datatype === "BYTES") {
    const first = decodeBytesElements(data, tensor.name)[0];
    return first === undefined ? undefined : first.toString("utf8");
  }
  const size = elementByteSize(tensor.datatype);
  if (size === undefined || data.length < size) return undefined;
  switch (tensor.datatype) {
    case "BOOL":
      return data[0] !== 0;
    case "UINT8":
      return data.readUInt8(0);
    case "INT8":
      return data.readInt8(0);
    case "UINT16":
      return data.readUInt16LE(0);
    case "INT16":
      return data.readInt16LE(0);
    case "UINT32":
      return data.readUInt32LE(0);
    case "INT32":
      return data.readInt32LE(0);
    case "UINT64":
      return Number(data.readBigUInt64LE(0));
    case "INT64":
      return Number(data.readBigInt64LE(0));
    case "FP32":
      return data.readFloatLE(0);
    case "FP64":
      return data.readDoubleLE(0);
    case "FP16":
      return float16BitsToNumber(data.readUInt16LE(0));
    case "BF16":
      return bfloat16BitsToNumber(data.readUInt16LE(0));
  }
}
