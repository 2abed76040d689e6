import { afterEach, describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { Parameters, Tensor } from "@operon/protocol/tensor";
import { GatewayMetrics } from "../observability/metrics.js";
import type { RunModel } from "./dag-executor.js";
import { OperatorRunner } from "./operator-runner.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";

const input: Tensor = { name: "IN", datatype: "FP32", shape: [1], data: Buffer.from(Float32Array.of(2).buffer) };

const SPEC: OperatorSpec = {
  name: "op",
  inputs: [{ name: "IN", datatype: "FP32", dims: [1] }],
  outputs: [{ name: "OUT", datatype: "FP32", dims: [1] }],
  steps: [
    { id: "route", kind: "route", input: "IN", cases: [{ when: { greaterThan: 0 }, next: ["m"] }] },
    { id: "m", kind: "model", model: "echo", inputs: { x: "IN" }, outputs: { y: "OUT" } },
  ],
};

/** Echoes x as y after delayMs; honours the signal. */
function echo(delayMs: number): RunModel {
  return (_model, _version, inputs, _outputs, signal) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => resolve({ modelName: "echo", modelVersion: "1", outputs: [{ ...inputs[0]!, name: "y" }] }),
        delayMs,
      );
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new OperonError("CANCELLED", "cancelled"));
      });
    });
}

const request = (signal?: AbortSignal, parameters: Parameters = {}) => ({
  inputs: [input],
  outputNames: undefined,
  batchSize: 1,
  level: 0,
  timeoutNs: 0,
  parameters,
  ...(signal !== undefined ? { signal } : {}),
});

describe("OperatorRunner", () => {
  let metrics: GatewayMetrics | undefined;
  afterEach(() => metrics?.stop());

  it("answers in the scheduler's result shape and counts each step in Prometheus", async () => {
    metrics = new GatewayMetrics();
    const runner = new OperatorRunner(SPEC, { runModel: echo(20), metrics });
    let text = await metrics.registry.metrics();
    expect(text).toContain('operon_operator_step_executions_total{operator="op",step="m"} 0');
    const result = await runner.execute(request());
    expect(result.outputs.map((t) => t.name)).toEqual(["OUT"]);
    expect(result.outputs[0]!.data).toBe(input.data);
    expect(result.executedBatchSize).toBe(1);
    expect(result.timing.computeInferNs).toBeGreaterThan(15e6);
    expect(result.queueNs).toBeGreaterThanOrEqual(0);
    text = await metrics.registry.metrics();
    expect(text).toContain('operon_operator_step_executions_total{operator="op",step="m"} 1');
    expect(text).toContain('operon_operator_step_executions_total{operator="op",step="route"} 1');
    const duration = /operon_operator_step_duration_us\{operator="op",step="m"\} ([0-9.e+]+)/.exec(text);
    expect(Number(duration?.[1])).toBeGreaterThan(15_000);
    expect(runner.isDead).toBe(false);
    expect(runner.policy.priorityLevels).toBe(0);
  });

  it("counts the completed calls of each model, each try of a retry and a fallback model's calls included", async () => {
    const spec: OperatorSpec = {
      ...SPEC,
      steps: [
        {
          id: "m",
          kind: "model",
          model: "flaky",
          inputs: { x: "IN" },
          outputs: { y: "OUT" },
          retry: { maxAttempts: 2, initialBackoffMs: 0 },
          fallback: { model: "echo" },
        },
      ],
    };
    const ok = echo(1);
    const runModel: RunModel = (model, ...rest) =>
      model === "flaky" ? Promise.reject(new OperonError("UNAVAILABLE", "flaky is down")) : ok(model, ...rest);
    const runner = new OperatorRunner(spec, { runModel });
    expect(runner.modelCalls).toEqual({});
    await runner.execute(request());
    await runner.execute(request());
    // Two tries of `flaky` per request (both failed), then its fallback `echo` once.
    expect(runner.modelCalls).toEqual({ flaky: 4, echo: 2 });
  });

  it("reports each step's circuit breaker state: open after its failures, none for a step without one", async () => {
    const spec: OperatorSpec = {
      ...SPEC,
      steps: [
        {
          id: "guarded",
          kind: "model",
          model: "flaky",
          inputs: { x: "IN" },
          outputs: { y: "mid" },
          circuitBreaker: { failureThreshold: 2, windowMs: 60_000, openMs: 60_000 },
        },
        { id: "plain", kind: "model", model: "echo", inputs: { x: "mid" }, outputs: { y: "OUT" } },
      ],
    };
    const runModel: RunModel = () => Promise.reject(new OperonError("INTERNAL", "flaky is broken"));
    const runner = new OperatorRunner(spec, { runModel });
    expect(runner.breakers).toEqual([{ step: "guarded", state: "closed" }]);
    for (let i = 0; i < 2; i += 1) await expect(runner.execute(request())).rejects.toThrow(/flaky is broken/);
    expect(runner.breakers).toEqual([{ step: "guarded", state: "open" }]);
    await runner.stop(100);
  });

  it("stop drains running requests, refuses new ones, and fails the ones past the drain time with UNAVAILABLE", async () => {
    const runner = new OperatorRunner(SPEC, { runModel: echo(200) });
    const running = runner.execute(request());
    expect(runner.pendingCount).toBe(1);
    const stopped = runner.stop(30);
    expect(() => runner.execute(request())).toThrow(expect.objectContaining({ kind: "UNAVAILABLE" }));
    await expect(running).rejects.toMatchObject({
      kind: "UNAVAILABLE",
      message: "operator 'op' was unloaded while the request ran",
    });
    await stopped;
    await runner.stop(); // idempotent
    expect(runner.pendingCount).toBe(0);
  });

  it("forwards the client's cancellation", async () => {
    const runner = new OperatorRunner(SPEC, { runModel: echo(200) });
    const controller = new AbortController();
    const running = runner.execute(request(controller.signal));
    controller.abort();
    await expect(running).rejects.toMatchObject({ kind: "CANCELLED" });
    expect(() => runner.execute(request(AbortSignal.abort()))).toThrow(expect.objectContaining({ kind: "CANCELLED" }));
  });

  it("answers with each step's timings and outputs only when asked, and refuses a flag that is not a boolean", async () => {
    const runner = new OperatorRunner(SPEC, { runModel: echo(1) });
    const plain = await runner.execute(request());
    expect(plain.parameters).toBeUndefined();

    const outputsOnly = await runner.execute(request(undefined, { operon_step_outputs: true }));
    expect(Object.keys(outputsOnly.parameters ?? {})).toEqual(["operon_step_outputs"]);
    // The route has no entry; the model step's output is named as on the operator's board.
    expect(JSON.parse(String(outputsOnly.parameters!["operon_step_outputs"]))).toEqual([
      { step: "m", outputs: [{ name: "OUT", datatype: "FP32", shape: [1], data: [2] }] },
    ]);

    const both = await runner.execute(request(undefined, { operon_step_outputs: true, operon_step_timings: true }));
    const timings = JSON.parse(String(both.parameters!["operon_step_timings"])) as Array<{
      step: string;
      status: string;
    }>;
    expect(timings.map((step) => [step.step, step.status])).toEqual([
      ["route", "ok"],
      ["m", "ok"],
    ]);
    expect(both.parameters!["operon_step_outputs"]).toBe(outputsOnly.parameters!["operon_step_outputs"]);

    expect(() => runner.execute(request(undefined, { operon_step_outputs: "yes" }))).toThrow(
      expect.objectContaining({
        kind: "INVALID_ARG",
        message: `request parameter 'operon_step_outputs' must be a boolean, got "yes"`,
      }),
    );
    expect(() => runner.execute(request(undefined, { operon_step_timings: 1 }))).toThrow(
      /'operon_step_timings' must be a boolean, got 1/,
    );
  });
});
