import { OperonError } from "@operon/protocol/errors";
import type { CancelSignal } from "@operon/protocol/inference";
import type { Parameters } from "@operon/protocol/tensor";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { ExecutionTiming } from "../observability/model-stats.js";
import type { ScheduledResult } from "../scheduling/request-scheduler.js";
import type { SchedulerPolicy } from "../scheduling/scheduler-policy.js";
import type { RunnerRequest, VersionRunner } from "../scheduling/version-runner.js";
import { DagExecutor, type RunModel, type StepRecord } from "./dag-executor.js";
import type { DeviceOf } from "./device-edges.js";
import type { StepResilienceHooks } from "./step-resilience.js";
import type { BreakerState } from "./circuit-breaker.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { stepOutputsJson } from "./step-outputs-json.js";

/**
 * An operator's VersionRunner: what the engine calls for a version whose
 * "instances" are a DAG rather than worker processes. Each request runs on
 * the DagExecutor; the result is reported in the shape the engine records
 * in statistics: queue = time the steps waited for their in-flight caps,
 * compute_infer = the time the model steps ran (summed over steps). The
 * composing models count their own executions in their own statistics.
 *
 * Per-step Prometheus series (operon_operator_step_duration_us,
 * operon_operator_step_executions_total) start at 0 when the runner is
 * built; the model manager forgets them when the operator goes away.
 */
export interface OperatorRunnerOptions {
  runModel: RunModel;
  metrics?: GatewayMetrics;
  /** Where step models' tensors may stay on a GPU (dag-executor.ts); unset = never. */
  deviceOf?: DeviceOf;
}

export class OperatorRunner implements VersionRunner {
  readonly policy: SchedulerPolicy;
  readonly executor: DagExecutor;
  onExecution: (batchSize: number, timing: ExecutionTiming) => void = () => undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private readonly running = new Set<Promise<unknown>>();
  /** Completed calls (success or failure) of each model by this operator's steps: retries and fallbacks count. */
  private readonly callsByModel = new Map<string, number>();
  /** Aborted when stop's drain time is up: requests still running fail UNAVAILABLE. */
  private readonly stopController = new AbortController();

  constructor(
    readonly spec: OperatorSpec,
    options: OperatorRunnerOptions,
  ) {
    // An operator has no queue of its own: its steps queue in their models' schedulers.
    this.policy = {
      maxBatchSize: spec.maxBatchSize ?? 0,
      batching: false,
      joinInputs: true,
      preferredBatchSizes: [],
      maxQueueDelayNs: 0,
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      queuePolicies: [{ timeoutAction: "REJECT", defaultTimeoutNs: 0, allowTimeoutOverride: false, maxQueueSize: 0 }],
    };
    const metrics = options.metrics;
    const labels = (step: string): { operator: string; step: string } => ({ operator: spec.name, step });
    if (metrics !== undefined) {
      for (const step of spec.steps) {
        metrics.operatorStepDurationUs.inc(labels(step.id), 0);
        metrics.operatorStepExecutions.inc(labels(step.id), 0);
      }
    }
    const onStepEnd = (record: StepRecord): void => {
      if (metrics === undefined || record.startedAt === undefined) return;
      metrics.operatorStepExecutions.inc(labels(record.step));
      metrics.operatorStepDurationUs.inc(
        labels(record.step),
        Math.max(0, ((record.endedAt ?? record.startedAt) - record.startedAt) * 1000),
      );
    };
    const BREAKER_VALUES = { closed: 0, open: 1, "half-open": 2 } as const;
    const resilienceHooks = (step: string): StepResilienceHooks => {
      if (metrics === undefined) return {};
      const model = spec.steps.find((candidate) => candidate.id === step);
      if (model?.kind === "model") {
        if (model.retry !== undefined) metrics.operatorStepRetries.inc(labels(step), 0);
        if (model.fallback !== undefined)
          metrics.operatorStepFallbacks.inc(
            { ...labels(step), kind: "model" in model.fallback ? "model" : "default" },
            0,
          );
        if (model.circuitBreaker !== undefined) metrics.operatorStepBreakerState.set(labels(step), 0);
      }
      return {
        onRetry: () => metrics.operatorStepRetries.inc(labels(step)),
        onFallback: (kind) => metrics.operatorStepFallbacks.inc({ ...labels(step), kind }),
        onBreakerState: (state) => metrics.operatorStepBreakerState.set(labels(step), BREAKER_VALUES[state]),
      };
    };
    const runModel: RunModel = async (model, ...rest) => {
      try {
        return await options.runModel(model, ...rest);
      } finally {
        this.callsByModel.set(model, (this.callsByModel.get(model) ?? 0) + 1);
      }
    };
    this.executor = new DagExecutor(spec, {
      runModel,
      onStepEnd,
      resilienceHooks,
      ...(options.deviceOf !== undefined ? { deviceOf: options.deviceOf } : {}),
    });
  }

  /** An operator never dies by itself: a broken step model fails its requests, not the operator. */
  get isDead(): boolean {
    return false;
  }

  get pendingCount(): number {
    return this.executor.inFlightCount;
  }

  /** The state of each step's circuit breaker now, in step order (steps with a `circuitBreaker` only). */
  get breakers(): Array<{ step: string; state: BreakerState }> {
    const list: Array<{ step: string; state: BreakerState }> = [];
    for (const step of this.spec.steps) {
      const breaker = this.executor.stepResilience(step.id)?.breaker;
      if (breaker !== undefined) list.push({ step: step.id, state: breaker.state });
    }
    return list;
  }

  /**
   * Calls of each model the steps completed since the runner was built: the model's own statistics count them
   * too, so the resource scheduler subtracts them to find the model's direct requests.
   */
  get modelCalls(): Record<string, number> {
    return Object.fromEntries(this.callsByModel);
  }

  execute(request: RunnerRequest): Promise<ScheduledResult> {
    if (this.stopped) throw new OperonError("UNAVAILABLE", `operator '${this.spec.name}' is unloading`);
    if (request.signal?.aborted)
      throw new OperonError("CANCELLED", `operator '${this.spec.name}': the request was cancelled`);
    const withTimings = debugFlag(request.parameters, STEP_TIMINGS_PARAMETER);
    const withOutputs = debugFlag(request.parameters, STEP_OUTPUTS_PARAMETER);
    // One signal for the DAG: the client's, or the end of the drain at stop.
    const controller = new AbortController();
    const forward = (source: CancelSignal) => (): void => controller.abort(source.reason);
    const onClient = request.signal !== undefined ? forward(request.signal) : undefined;
    const onStop = forward(this.stopController.signal);
    if (request.signal !== undefined && onClient !== undefined)
      request.signal.addEventListener("abort", onClient, { once: true });
    this.stopController.signal.addEventListener("abort", onStop, { once: true });
    const run = this.executor
      .run(request.inputs, {
        ...(request.parameters !== undefined ? { parameters: request.parameters } : {}),
        ...(request.outputNames !== undefined ? { outputNames: request.outputNames } : {}),
        signal: controller.signal,
        keepStepOutputs: withOutputs,
      })
      .then((result): ScheduledResult => {
        const parameters: Parameters = {};
        if (withTimings) parameters[STEP_TIMINGS_PARAMETER] = stepTimingsJson(result.steps);
        if (withOutputs) parameters[STEP_OUTPUTS_PARAMETER] = stepOutputsJson(this.spec.name, result.steps);
        return {
          outputs: result.outputs,
          timing: { computeInputNs: 0, computeInferNs: Math.round(result.modelMs * 1e6), computeOutputNs: 0 },
          queueNs: Math.round(result.capWaitMs * 1e6),
          executedBatchSize: request.batchSize,
          steps: result.steps,
          ...(withTimings || withOutputs ? { parameters } : {}),
        };
      })
      .finally(() => {
        if (request.signal !== undefined && onClient !== undefined)
          request.signal.removeEventListener("abort", onClient);
        this.stopController.signal.removeEventListener("abort", onStop);
        this.running.delete(run);
      });
    this.running.add(run);
    return run;
  }

  /** Refuses new requests, lets running ones finish for up to timeoutMs, then fails the rest with UNAVAILABLE. Idempotent. */
  stop(timeoutMs = 30_000): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      this.executor.stop();
      const drained = Promise.allSettled([...this.running]);
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([
        drained.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (late) {
        this.stopController.abort(
          new OperonError("UNAVAILABLE", `operator '${this.spec.name}' was unloaded while the request ran`),
        );
        await Promise.allSettled([...this.running]);
      }
    })();
    return this.stopping;
  }
}

/**
 * Request parameter (bool) asking an operator to answer with its steps'
 * timings, and the response parameter that carries them: a JSON array of
 * `{step, kind, model?, status, attempts?, answeredBy?, startMs?, durationMs?}`,
 * startMs relative to the first step's start; attempts when a step's model
 * was called more than once (retries), answeredBy when a fallback answered. The console's "try it" panel shows these.
 */
export const STEP_TIMINGS_PARAMETER = "operon_step_timings";

/**
 * Request parameter (bool) asking an operator to answer with the tensors
 * its model steps produced, and the response parameter that carries them:
 * a JSON array `[{step, outputs: [{name, datatype, shape, data,
 * truncated?}]}]`, model steps in spec order, `name` the tensor's name on
 * the operator's board, `data` the KServe v2 JSON form cut to the first 256
 * elements (`truncated: true` when cut). It is a debugging view for the
 * console's "try it" panel, not a second output channel: ask for the
 * operator's outputs (or call the step's model) to get whole tensors.
 * Without it the executor keeps nothing extra. See step-outputs-json.ts.
 */
export const STEP_OUTPUTS_PARAMETER = "operon_step_outputs";

/** Whether a debugging flag is on; a value other than a boolean is the client's mistake, not a silent "no". */
function debugFlag(parameters: Parameters | undefined, name: string): boolean {
  const value = parameters?.[name];
  if (value === undefined || typeof value === "boolean") return value === true;
  throw new OperonError(
    "INVALID_ARG",
    `request parameter '${name}' must be a boolean, got ${typeof value === "string" ? JSON.stringify(value) : String(value)}`,
  );
}

function stepTimingsJson(steps: readonly StepRecord[]): string {
  const starts = steps.map((step) => step.startedAt).filter((at): at is number => at !== undefined);
  const origin = starts.length > 0 ? Math.min(...starts) : 0;
  const round = (ms: number): number => Math.round(ms * 1000) / 1000;
  return JSON.stringify(
    steps.map((step) => ({
      step: step.step,
      kind: step.kind,
      ...(step.model !== undefined ? { model: step.model } : {}),
      status: step.status,
      ...(step.attempts !== undefined && step.attempts > 1 ? { attempts: step.attempts } : {}),
      ...(step.answeredBy !== undefined ? { answeredBy: step.answeredBy } : {}),
      ...(step.startedAt !== undefined ? { startMs: round(step.startedAt - origin) } : {}),
      ...(step.startedAt !== undefined && step.endedAt !== undefined
        ? { durationMs: round(step.endedAt - step.startedAt) }
        : {}),
    })),
  );
}
