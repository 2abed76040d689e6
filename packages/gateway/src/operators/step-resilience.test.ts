import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { InferResponse } from "@operon/protocol/inference";
import type { ModelStepSpec } from "@operon/operator-spec/operator-spec-schema";
import { StepResilience, backoffMs } from "./step-resilience.js";

const ok = (model: string): InferResponse => ({ modelName: model, modelVersion: "1", outputs: [] });
const step = (extra: Partial<ModelStepSpec>): ModelStepSpec => ({
  id: "s",
  kind: "model",
  model: "m",
  inputs: { x: "IN" },
  outputs: { y: "OUT" },
  ...extra,
});

/** A model that fails with the given kinds in order, then answers. */
function flaky(kinds: Array<OperonError["kind"]>) {
  const calls: string[] = [];
  const attempt = async (model: string): Promise<InferResponse> => {
    calls.push(model);
    const kind = model === "m" ? kinds.shift() : undefined;
    if (kind !== undefined) throw new OperonError(kind, `${model} failed (${kind})`);
    return ok(model);
  };
  return { calls, attempt };
}

describe("StepResilience", () => {
  const signal = new AbortController().signal;

  it("retries UNAVAILABLE up to maxAttempts, transparently", async () => {
    const retries: number[] = [];
    const resilience = new StepResilience(step({ retry: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 } }), {
      operator: "op",
      batching: false,
      hooks: { onRetry: () => retries.push(1) },
    });
    const model = flaky(["UNAVAILABLE", "UNAVAILABLE"]);
    await expect(resilience.call(model.attempt, signal, 1)).resolves.toMatchObject({ answer: "model" });
    expect(model.calls).toEqual(["m", "m", "m"]);
    expect(retries).toHaveLength(2);
    const tooMany = flaky(["UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"]);
    await expect(resilience.call(tooMany.attempt, signal, 1)).rejects.toThrow(/m failed \(UNAVAILABLE\)/);
  });

  it("never retries a non-retryable error (a bad input, a model bug)", async () => {
    const resilience = new StepResilience(step({ retry: { maxAttempts: 5, initialBackoffMs: 0 } }), {
      operator: "op",
      batching: false,
    });
    for (const kind of ["INVALID_ARG", "INTERNAL"] as const) {
      const model = flaky([kind]);
      await expect(resilience.call(model.attempt, signal, 1)).rejects.toThrow(kind);
      expect(model.calls).toEqual(["m"]);
    }
  });

  it("backs off exponentially with full jitter, capped", () => {
    const retry = { initialBackoffMs: 100, maxBackoffMs: 350, multiplier: 2 };
    expect([2, 3, 4, 5].map((attempt) => backoffMs(attempt, retry, () => 1))).toEqual([100, 200, 350, 350]);
    expect(backoffMs(3, retry, () => 0.5)).toBe(100);
  });

  it("an open breaker fails fast, then the fallback model answers; default outputs repeat per inference", async () => {
    const resilience = new StepResilience(
      step({
        circuitBreaker: { failureThreshold: 2, windowMs: 10_000, openMs: 60_000 },
        fallback: { model: "backup" },
      }),
      { operator: "op", batching: false },
    );
    const model = flaky(["INTERNAL", "INTERNAL"]);
    expect((await resilience.call(model.attempt, signal, 1)).answer).toBe("fallback-model");
    expect((await resilience.call(model.attempt, signal, 1)).answer).toBe("fallback-model");
    expect(resilience.breaker!.state).toBe("open");
    // Open: the step's model is not called at all.
    expect((await resilience.call(model.attempt, signal, 1)).answer).toBe("fallback-model");
    expect(model.calls).toEqual(["m", "backup", "m", "backup", "backup"]);
    resilience.breaker!.stop();

    const defaults = new StepResilience(
      step({ fallback: { outputs: { y: { datatype: "FP32", shape: [2], data: [1, 2] } } } }),
      { operator: "op", batching: true },
    );
    const answer = await defaults.call(flaky(["UNAVAILABLE"]).attempt, signal, 3);
    expect(answer.answer).toBe("fallback-default");
    const [tensor] = answer.response.outputs;
    expect(tensor!.shape).toEqual([3, 2]);
    expect(Array.from(new Float32Array(tensor!.data.buffer, tensor!.data.byteOffset, 6))).toEqual([1, 2, 1, 2, 1, 2]);
  });

  it("a client's error neither opens the breaker nor uses the fallback", async () => {
    const resilience = new StepResilience(
      step({ circuitBreaker: { failureThreshold: 1 }, fallback: { model: "backup" } }),
      { operator: "op", batching: false },
    );
    const model = flaky(["INVALID_ARG"]);
    await expect(resilience.call(model.attempt, signal, 1)).rejects.toThrow("INVALID_ARG");
    expect(resilience.breaker!.state).toBe("closed");
  });

  it("stops backing off when the request is cancelled", async () => {
    const resilience = new StepResilience(
      step({ retry: { maxAttempts: 3, initialBackoffMs: 60_000, maxBackoffMs: 60_000 } }),
      {
        operator: "op",
        batching: false,
        random: () => 1,
      },
    );
    const controller = new AbortController();
    const model = flaky(["UNAVAILABLE"]);
    const pending = resilience.call(model.attempt, controller.signal, 1);
    setTimeout(() => controller.abort(new OperonError("CANCELLED", "client went away")), 5);
    await expect(pending).rejects.toThrow("client went away");
    expect(model.calls).toEqual(["m"]);
  });
});
