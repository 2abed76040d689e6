import { OperonError, asOperonError, type ErrorKind } from "@operon/protocol/errors";
import type { InferResponse } from "@operon/protocol/inference";
import { jsonDataToBuffer } from "@operon/protocol/json-tensor-codec";
import type { Tensor } from "@operon/protocol/tensor";
import type { ModelStepSpec } from "@operon/operator-spec/operator-spec-schema";
import {
  CIRCUIT_BREAKER_DEFAULTS,
  RETRY_DEFAULTS,
  type CircuitBreakerSpec,
  type DefaultOutput,
  type RetrySpec,
} from "@operon/operator-spec/step-resilience-schema";
import { CircuitBreaker, type BreakerState } from "./circuit-breaker.js";

/**
 * One model step's answer to failure (issue 25; the spec fields are in
 * @operon/operator-spec/step-resilience-schema): retries of retryable
 * errors with exponential backoff and full jitter, a circuit breaker shared
 * by every request of the operator, and a fallback (another model, or
 * default outputs). A step with none of them configured costs one branch
 * per call: `call` goes straight to the attempt.
 *
 * Contract of `attempt`: one call of a model (the step's own, or the
 * fallback model), including its in-flight cap; it rejects with the
 * model's error. The signal aborts backoff waits too.
 */
export type StepAttempt = (model: string, version: string | undefined) => Promise<InferResponse>;

/** What made the step answer: its model, the fallback model, or the default outputs. */
export type StepAnswer = "model" | "fallback-model" | "fallback-default";

export interface StepResilienceHooks {
  onRetry?(): void;
  onFallback?(kind: "model" | "default"): void;
  onBreakerState?(state: BreakerState): void;
}

/** Errors worth trying again: the model's instances are momentarily gone (a worker restart, a full queue, an unload). */
export function isRetryable(error: OperonError): boolean {
  return error.kind === "UNAVAILABLE";
}

/** Errors that say the step's model is unhealthy (a client's bad input or a cancellation does not). */
const SERVER_SIDE: ReadonlySet<ErrorKind> = new Set(["UNAVAILABLE", "INTERNAL", "UNKNOWN"]);
export function isServerSide(error: OperonError): boolean {
  return SERVER_SIDE.has(error.kind);
}

/**
 * Backoff before attempt `attempt` (2 = the first retry): full jitter, a
 * uniform draw in [0, min(max, initial × multiplier^(attempt-2))], so many
 * requests failing together do not come back together.
 */
export function backoffMs(attempt: number, retry: RetrySpec, random: () => number = Math.random): number {
  const initial = retry.initialBackoffMs ?? RETRY_DEFAULTS.initialBackoffMs;
  const max = retry.maxBackoffMs ?? RETRY_DEFAULTS.maxBackoffMs;
  const multiplier = retry.multiplier ?? RETRY_DEFAULTS.multiplier;
  const ceiling = Math.min(max, initial * multiplier ** Math.max(0, attempt - 2));
  return random() * ceiling;
}

export interface StepResilienceOptions {
  /** The operator's name, for messages. */
  operator: string;
  /** Whether the operator batches (default outputs then leave out the batch dimension). */
  batching: boolean;
  hooks?: StepResilienceHooks;
  now?: () => number;
  random?: () => number;
}

export class StepResilience {
  readonly breaker: CircuitBreaker | undefined;
  private readonly maxAttempts: number;
  private readonly plain: boolean;

  constructor(
    readonly step: ModelStepSpec,
    private readonly options: StepResilienceOptions,
  ) {
    this.maxAttempts = step.retry === undefined ? 1 : (step.retry.maxAttempts ?? RETRY_DEFAULTS.maxAttempts);
    this.breaker =
      step.circuitBreaker === undefined
        ? undefined
        : new CircuitBreaker(breakerSettings(step.circuitBreaker), {
            ...(options.now !== undefined ? { now: options.now } : {}),
            onState: (state) => options.hooks?.onBreakerState?.(state),
          });
    this.plain = step.retry === undefined && step.circuitBreaker === undefined && step.fallback === undefined;
  }

  /** Runs the step: its model with retries behind the breaker, else its fallback. Rejects with the model's error. */
  async call(
    attempt: StepAttempt,
    signal: AbortSignal,
    batchSize: number,
  ): Promise<{ response: InferResponse; answer: StepAnswer }> {
    if (this.plain) return { response: await attempt(this.step.model, this.step.version), answer: "model" };
    let failure: OperonError | undefined;
    try {
      return { response: await this.callModel(attempt, signal), answer: "model" };
    } catch (error) {
      failure = asOperonError(error);
      if (signal.aborted || this.step.fallback === undefined) throw failure;
      if (!isServerSide(failure)) throw failure;
    }
    const fallback = this.step.fallback;
    if ("model" in fallback) {
      this.options.hooks?.onFallback?.("model");
      try {
        return { response: await attempt(fallback.model, fallback.version), answer: "fallback-model" };
      } catch (error) {
        const cause = asOperonError(error);
        throw new OperonError(
          cause.kind,
          `${failure.message}; its fallback model '${fallback.model}' failed too: ${cause.message}`,
          { cause },
        );
      }
    }
    this.options.hooks?.onFallback?.("default");
    return { response: this.defaultResponse(fallback.outputs, batchSize), answer: "fallback-default" };
  }

  /** The step's own model: through the breaker, retried while retryable. */
  private async callModel(attempt: StepAttempt, signal: AbortSignal): Promise<InferResponse> {
    for (let attemptNo = 1; ; attemptNo += 1) {
      const ticket = this.breaker?.admit();
      if (ticket === "rejected") {
        throw new OperonError(
          "UNAVAILABLE",
          `the circuit breaker of step '${this.step.id}' is open after repeated failures of model '${this.step.model}'`,
        );
      }
      try {
        const response = await attempt(this.step.model, this.step.version);
        this.breaker?.succeeded(ticket!);
        return response;
      } catch (error) {
        const failure = asOperonError(error);
        if (signal.aborted) {
          this.breaker?.abandoned(ticket!);
          throw failure;
        }
        if (isServerSide(failure)) this.breaker?.failed(ticket!);
        else this.breaker?.succeeded(ticket!); // the model answered: a client's mistake says nothing of its health
        if (attemptNo >= this.maxAttempts || !isRetryable(failure)) throw failure;
        this.options.hooks?.onRetry?.();
        await sleep(backoffMs(attemptNo + 1, this.step.retry!, this.options.random), signal, failure);
      }
    }
  }

  private defaultResponse(outputs: Record<string, DefaultOutput>, batchSize: number): InferResponse {
    const tensors: Tensor[] = Object.entries(outputs).map(([name, output]) => {
      const repeat = this.options.batching ? Math.max(1, batchSize) : 1;
      const shape = this.options.batching ? [repeat, ...output.shape] : [...output.shape];
      const data = repeat === 1 ? output.data : Array.from({ length: repeat }, () => output.data).flat();
      return { name, datatype: output.datatype, shape, data: jsonDataToBuffer(name, output.datatype, shape, data) };
    });
    return { modelName: this.step.model, modelVersion: "", outputs: tensors };
  }
}

function breakerSettings(spec: CircuitBreakerSpec) {
  return {
    failureThreshold: spec.failureThreshold ?? CIRCUIT_BREAKER_DEFAULTS.failureThreshold,
    windowMs: spec.windowMs ?? CIRCUIT_BREAKER_DEFAULTS.windowMs,
    openMs: spec.openMs ?? CIRCUIT_BREAKER_DEFAULTS.openMs,
    halfOpenProbes: spec.halfOpenProbes ?? CIRCUIT_BREAKER_DEFAULTS.halfOpenProbes,
  };
}

/** Waits ms, or rejects with the signal's reason (else `failure`) when it aborts first. */
function sleep(ms: number, signal: AbortSignal, failure: OperonError): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason instanceof OperonError ? signal.reason : failure);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason instanceof OperonError ? signal.reason : failure);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
