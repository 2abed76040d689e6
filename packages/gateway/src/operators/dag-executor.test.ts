import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { InferResponse } from "@operon/protocol/inference";
import type { Tensor } from "@operon/protocol/tensor";
import { DagExecutor, conditionHolds, firstElement, type RunModel } from "./dag-executor.js";
import { StepLimiter } from "./step-limiter.js";
import type { OperatorSpec, StepSpec } from "@operon/operator-spec/operator-spec-schema";

function f32(name: string, values: number[]): Tensor {
  const array = Float32Array.from(values);
  return { name, datatype: "FP32", shape: [values.length], data: Buffer.from(array.buffer) };
}

function valuesOf(tensor: Tensor | undefined): number[] {
  if (tensor === undefined) throw new Error("missing tensor");
  return [...new Float32Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.length / 4)];
}

interface FakeModel {
  latencyMs?: number;
  /** Output name -> values, from the inputs by name. */
  run?: (inputs: Map<string, number[]>) => Record<string, number[]>;
  fail?: OperonError;
}

interface Call {
  model: string;
  inputs: Tensor[];
  outputNames: string[];
  signal: AbortSignal;
  parameters: unknown;
  aborted: boolean;
}

/** A runModel that answers after a delay, computes with plain arrays, and honours the signal like the engine does. */
function fakeRunner(models: Record<string, FakeModel>): {
  runModel: RunModel;
  calls: Call[];
  active: Map<string, number>;
  peak: Map<string, number>;
} {
  const calls: Call[] = [];
  const active = new Map<string, number>();
  const peak = new Map<string, number>();
  const runModel: RunModel = (model, _version, inputs, outputNames, signal, parameters) => {
    const fake = models[model];
    if (fake === undefined) return Promise.reject(new OperonError("NOT_FOUND", `unknown model '${model}'`));
    const call: Call = { model, inputs, outputNames, signal, parameters, aborted: false };
    calls.push(call);
    active.set(model, (active.get(model) ?? 0) + 1);
    peak.set(model, Math.max(peak.get(model) ?? 0, active.get(model)!));
    return new Promise<InferResponse>((resolve, reject) => {
      const done = (): void => {
        active.set(model, active.get(model)! - 1);
        signal.removeEventListener("abort", onAbort);
      };
      const timer = setTimeout(() => {
        done();
        if (fake.fail !== undefined) return reject(fake.fail);
        const byName = new Map(inputs.map((tensor) => [tensor.name, valuesOf(tensor)]));
        const produced = fake.run?.(byName) ?? {};
        resolve({
          modelName: model,
          modelVersion: "1",
          outputs: Object.entries(produced).map(([name, values]) => f32(name, values)),
        });
      }, fake.latencyMs ?? 5);
      const onAbort = (): void => {
        clearTimeout(timer);
        done();
        call.aborted = true;
        reject(new OperonError("CANCELLED", "request cancelled"));
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  };
  return { runModel, calls, active, peak };
}

const map = (values: number[], fn: (v: number) => number): number[] => values.map(fn);

const MODELS: Record<string, FakeModel> = {
  scale2: { run: (i) => ({ y: map(i.get("x")!, (v) => v * 2) }) },
  negate: { run: (i) => ({ y: map(i.get("x")!, (v) => -v) }) },
  add: { run: (i) => ({ sum: i.get("a")!.map((v, k) => v + i.get("b")![k]!) }) },
  score: { run: (i) => ({ s: [i.get("x")![0]! > 0 ? 0.9 : 0.1] }) },
  slowA: { latencyMs: 100, run: (i) => ({ y: map(i.get("x")!, (v) => v + 1) }) },
  slowB: { latencyMs: 100, run: (i) => ({ y: map(i.get("x")!, (v) => v + 2) }) },
  slow: { latencyMs: 60, run: (i) => ({ y: i.get("x")! }) },
  broken: { latencyMs: 10, fail: new OperonError("INVALID_ARG", "unexpected shape for input 'x'") },
};

const model = (
  id: string,
  name: string,
  inputs: Record<string, string>,
  outputs: Record<string, string>,
  extra: Partial<StepSpec> = {},
): StepSpec => ({ id, kind: "model", model: name, inputs, outputs, ...extra }) as StepSpec;

function operator(steps: StepSpec[], outputs = ["OUT"], extra: Partial<OperatorSpec> = {}): OperatorSpec {
  return {
    name: "op",
    inputs: [{ name: "IN", datatype: "FP32", dims: [-1] }],
    outputs: outputs.map((name) => ({ name, datatype: "FP32", dims: [-1] })),
    steps,
    ...extra,
  };
}

describe("DagExecutor", () => {
  it("runs a pipeline on a whiteboard, passing tensors by reference", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([
        model("pre", "scale2", { x: "IN" }, { y: "t" }),
        model("sum", "add", { a: "t", b: "IN" }, { sum: "OUT" }),
      ]),
      { runModel: fake.runModel },
    );
    const input = f32("IN", [1, 2, 3]);
    const result = await executor.run([input], { parameters: { priority: 1 } });
    expect(result.outputs.map((t) => t.name)).toEqual(["OUT"]);
    expect(valuesOf(result.outputs[0])).toEqual([3, 6, 9]);
    // No copies: the step received the request's buffer itself, renamed to the model's input name.
    expect(fake.calls[0]!.inputs[0]!.data).toBe(input.data);
    expect(fake.calls[0]!.inputs[0]!.name).toBe("x");
    expect(fake.calls[1]!.inputs.find((t) => t.name === "b")!.data).toBe(input.data);
    expect(fake.calls.map((call) => call.outputNames)).toEqual([["y"], ["sum"]]);
    expect(fake.calls[0]!.parameters).toEqual({ priority: 1 });
    expect(result.steps.map((step) => step.status)).toEqual(["ok", "ok"]);
    expect(executor.inFlightCount).toBe(0);
  });

  it("runs independent branches in parallel (branch B starts before branch A ends)", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([
        model("A", "slowA", { x: "IN" }, { y: "a" }),
        model("B", "slowB", { x: "IN" }, { y: "b" }),
        model("join", "add", { a: "a", b: "b" }, { sum: "OUT" }),
      ]),
      { runModel: fake.runModel },
    );
    const result = await executor.run([f32("IN", [0, 1])]);
    expect(valuesOf(result.outputs[0])).toEqual([3, 5]);
    const [a, b, join] = result.steps;
    expect(b!.startedAt!).toBeLessThan(a!.endedAt!);
    expect(a!.startedAt!).toBeLessThan(b!.endedAt!);
    expect(join!.startedAt!).toBeGreaterThanOrEqual(Math.max(a!.endedAt!, b!.endedAt!));
    expect(fake.peak.get("slowA")! + fake.peak.get("slowB")!).toBe(2);
  });

  describe("routes", () => {
    const routed = (): OperatorSpec =>
      operator(
        [
          {
            id: "route",
            kind: "route",
            input: "IN",
            cases: [{ when: { lessThan: 0 }, next: ["neg"] }],
            default: ["dbl"],
          },
          model("neg", "negate", { x: "IN" }, { y: "OUT" }),
          model("dbl", "scale2", { x: "IN" }, { y: "OUT" }),
          model("after", "scale2", { x: "OUT" }, { y: "OUT2" }),
        ],
        ["OUT", "OUT2"],
      );

    it("activates only the chosen branch and skips the other", async () => {
      const fake = fakeRunner(MODELS);
      const executor = new DagExecutor(routed(), { runModel: fake.runModel });
      const negative = await executor.run([f32("IN", [-2, 4])]);
      expect(valuesOf(negative.outputs[0])).toEqual([2, -4]);
      expect(valuesOf(negative.outputs[1])).toEqual([4, -8]);
      expect(negative.steps.map((s) => [s.step, s.status])).toEqual([
        ["route", "ok"],
        ["neg", "ok"],
        ["dbl", "skipped"],
        ["after", "ok"],
      ]);
      expect(fake.calls.map((call) => call.model)).toEqual(["negate", "scale2"]);

      const positive = await executor.run([f32("IN", [3])]);
      expect(valuesOf(positive.outputs[0])).toEqual([6]);
      expect(positive.steps.map((s) => s.status)).toEqual(["ok", "skipped", "ok", "ok"]);
    });

    it("routes on a request parameter", async () => {
      const fake = fakeRunner(MODELS);
      const spec = operator([
        {
          id: "route",
          kind: "route",
          input: "$param.mode",
          cases: [
            { when: { equals: "neg" }, next: ["neg"] },
            { when: { equals: "dbl" }, next: ["dbl"] },
          ],
        },
        model("neg", "negate", { x: "IN" }, { y: "OUT" }),
        model("dbl", "scale2", { x: "IN" }, { y: "OUT" }),
      ]);
      const executor = new DagExecutor(spec, { runModel: fake.runModel });
      expect(valuesOf((await executor.run([f32("IN", [5])], { parameters: { mode: "dbl" } })).outputs[0])).toEqual([
        10,
      ]);
      expect(valuesOf((await executor.run([f32("IN", [5])], { parameters: { mode: "neg" } })).outputs[0])).toEqual([
        -5,
      ]);
      await expect(executor.run([f32("IN", [5])], { parameters: { mode: "other" } })).rejects.toMatchObject({
        kind: "INVALID_ARG",
        message:
          "operator 'op' step 'route' failed: no case matches request parameter 'mode' = \"other\" and the route has no default",
      });
      await expect(executor.run([f32("IN", [5])])).rejects.toThrow("request parameter 'mode' (not set)");
    });

    it("skips steps that read tensors only skipped steps produce", async () => {
      const fake = fakeRunner(MODELS);
      const spec = operator([
        {
          id: "route",
          kind: "route",
          input: "IN",
          cases: [{ when: { greaterThan: 0 }, next: ["pos"] }],
          default: ["neg"],
        },
        model("pos", "scale2", { x: "IN" }, { y: "p" }),
        model("posAfter", "scale2", { x: "p" }, { y: "OUT" }),
        model("neg", "negate", { x: "IN" }, { y: "OUT" }),
      ]);
      const result = await new DagExecutor(spec, { runModel: fake.runModel }).run([f32("IN", [-1])]);
      expect(valuesOf(result.outputs[0])).toEqual([1]);
      expect(result.steps.map((s) => s.status)).toEqual(["ok", "skipped", "skipped", "ok"]);
    });

    it("fails when a requested output was only produced by a skipped branch", async () => {
      const fake = fakeRunner(MODELS);
      const spec = operator([
        { id: "route", kind: "route", input: "IN", cases: [{ when: { greaterThan: 0 }, next: ["pos"] }], default: [] },
        model("pos", "scale2", { x: "IN" }, { y: "OUT" }),
      ]);
      await expect(new DagExecutor(spec, { runModel: fake.runModel }).run([f32("IN", [-1])])).rejects.toMatchObject({
        kind: "INTERNAL",
        message:
          "operator 'op' produced no value for output 'OUT': its producer step(s) 'pos' were skipped by the routes taken",
      });
    });
  });

  describe("early exit", () => {
    const spec = (): OperatorSpec =>
      operator([
        model("cheap", "score", { x: "IN" }, { s: "score" }),
        model("fast", "scale2", { x: "IN" }, { y: "fast_out" }),
        { id: "confident", kind: "exit", input: "score", when: { greaterThan: 0.5 }, outputs: { OUT: "fast_out" } },
        model("heavy", "slow", { x: "IN" }, { y: "OUT" }),
      ]);

    it("answers as soon as the condition holds and never starts the steps listed after the exit", async () => {
      const fake = fakeRunner(MODELS);
      const result = await new DagExecutor(spec(), { runModel: fake.runModel }).run([f32("IN", [4])]);
      expect(result.exitedBy).toBe("confident");
      expect(valuesOf(result.outputs[0])).toEqual([8]);
      expect(result.outputs[0]!.name).toBe("OUT");
      expect(fake.calls.map((call) => call.model).sort()).toEqual(["scale2", "score"]);
      expect(result.steps.find((s) => s.step === "heavy")!.status).toBe("not-started");
    });

    it("goes on with the rest when the condition does not hold", async () => {
      const fake = fakeRunner(MODELS);
      const result = await new DagExecutor(spec(), { runModel: fake.runModel }).run([f32("IN", [-4])]);
      expect(result.exitedBy).toBeUndefined();
      expect(valuesOf(result.outputs[0])).toEqual([-4]);
      const heavy = result.steps.find((s) => s.step === "heavy")!;
      const exit = result.steps.find((s) => s.step === "confident")!;
      expect(heavy.status).toBe("ok");
      expect(heavy.startedAt!).toBeGreaterThanOrEqual(exit.endedAt!);
    });

    it("cancels steps still running when it fires", async () => {
      const fake = fakeRunner(MODELS);
      const executor = new DagExecutor(
        operator([
          model("side", "slow", { x: "IN" }, { y: "side_out" }),
          model("fast", "scale2", { x: "IN" }, { y: "fast_out" }),
          { id: "always", kind: "exit", input: "fast_out", when: { greaterThan: -1000 }, outputs: { OUT: "fast_out" } },
          model("join", "add", { a: "side_out", b: "fast_out" }, { sum: "OUT" }),
        ]),
        { runModel: fake.runModel },
      );
      const result = await executor.run([f32("IN", [1])]);
      expect(result.exitedBy).toBe("always");
      const side = fake.calls.find((call) => call.model === "slow")!;
      expect(side.signal.aborted).toBe(true);
      expect(side.aborted).toBe(true);
    });
  });

  it("fails the request when a step fails, naming operator, step and model, keeping the error kind", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([
        model("other", "slow", { x: "IN" }, { y: "o" }),
        model("bad", "broken", { x: "IN" }, { y: "b" }),
        model("join", "add", { a: "o", b: "b" }, { sum: "OUT" }),
      ]),
      { runModel: fake.runModel },
    );
    const failure = await executor.run([f32("IN", [1])]).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OperonError);
    expect(failure).toMatchObject({
      kind: "INVALID_ARG",
      message: "operator 'op' step 'bad' (model 'broken') failed: unexpected shape for input 'x'",
    });
    expect((failure as OperonError).cause).toBeInstanceOf(OperonError);
    // The sibling still running is cancelled; the join never starts.
    expect(fake.calls.find((call) => call.model === "slow")!.aborted).toBe(true);
    expect(fake.calls.some((call) => call.model === "add")).toBe(false);
  });

  it("cancels outstanding steps when the client's signal aborts", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([model("first", "slow", { x: "IN" }, { y: "t" }), model("second", "scale2", { x: "t" }, { y: "OUT" })]),
      { runModel: fake.runModel },
    );
    const controller = new AbortController();
    const running = executor.run([f32("IN", [1])], { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("client went away")), 15);
    await expect(running).rejects.toMatchObject({
      kind: "CANCELLED",
      message: "operator 'op': the request was cancelled",
    });
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]!.aborted).toBe(true);
    expect(executor.inFlightCount).toBe(0);
    // An already-aborted signal fails at once without calling any model.
    await expect(executor.run([f32("IN", [1])], { signal: AbortSignal.abort() })).rejects.toMatchObject({
      kind: "CANCELLED",
    });
    expect(fake.calls).toHaveLength(1);
  });

  it("caps a step's in-flight requests across requests (backpressure)", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator(
        [model("capped", "slow", { x: "IN" }, { y: "t" }), model("free", "scale2", { x: "t" }, { y: "OUT" })],
        ["OUT"],
        { maxInflightPerStep: 1 },
      ),
      { runModel: fake.runModel },
    );
    const runs = [1, 2, 3].map((v) => executor.run([f32("IN", [v])]));
    await Promise.resolve();
    expect(executor.limiter("capped").inFlight).toBe(1);
    expect(executor.limiter("capped").waiting).toBe(2);
    const results = await Promise.all(runs);
    expect(results.map((r) => valuesOf(r.outputs[0]))).toEqual([[2], [4], [6]]);
    expect(fake.peak.get("slow")).toBe(1);
    // The later requests waited for the cap, and that wait is reported.
    expect(results[2]!.capWaitMs).toBeGreaterThan(50);
    expect(results[0]!.capWaitMs).toBeLessThan(results[2]!.capWaitMs);
  });

  it("a step's own maxInflight overrides the operator default (0 = unlimited)", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([model("capped", "slow", { x: "IN" }, { y: "OUT" }, { maxInflight: 0 } as Partial<StepSpec>)], ["OUT"], {
        maxInflightPerStep: 1,
      }),
      { runModel: fake.runModel },
    );
    await Promise.all([1, 2, 3].map((v) => executor.run([f32("IN", [v])])));
    expect(fake.peak.get("slow")).toBe(3);
  });

  it("reports every step that ran to onStepEnd with its timings", async () => {
    const fake = fakeRunner(MODELS);
    const ended: Array<{ step: string; status: string; ms: number }> = [];
    const executor = new DagExecutor(
      operator([
        {
          id: "route",
          kind: "route",
          input: "IN",
          cases: [{ when: { lessThan: 0 }, next: ["neg"] }],
          default: ["dbl"],
        },
        model("neg", "negate", { x: "IN" }, { y: "OUT" }),
        model("dbl", "slow", { x: "IN" }, { y: "OUT" }),
      ]),
      {
        runModel: fake.runModel,
        onStepEnd: (record) =>
          ended.push({ step: record.step, status: record.status, ms: record.endedAt! - record.startedAt! }),
      },
    );
    await executor.run([f32("IN", [1])]);
    expect(ended.map((e) => [e.step, e.status])).toEqual([
      ["route", "ok"],
      ["dbl", "ok"],
    ]);
    expect(ended[1]!.ms).toBeGreaterThan(40);
  });

  it("keeps each model step's outputs under their board names only when asked, by reference", async () => {
    const fake = fakeRunner(MODELS);
    const executor = new DagExecutor(
      operator([
        model("pre", "scale2", { x: "IN" }, { y: "t" }),
        { id: "route", kind: "route", input: "t", cases: [{ when: { lessThan: 0 }, next: ["neg"] }], default: ["sum"] },
        model("neg", "negate", { x: "t" }, { y: "OUT" }),
        model("sum", "add", { a: "t", b: "IN" }, { sum: "OUT" }),
      ]),
      { runModel: fake.runModel },
    );
    const kept = await executor.run([f32("IN", [1, 2])], { keepStepOutputs: true });
    const byStep = new Map(kept.steps.map((record) => [record.step, record.outputs]));
    expect(byStep.get("pre")!.map((tensor) => [tensor.name, valuesOf(tensor)])).toEqual([["t", [2, 4]]]);
    expect(byStep.get("sum")!.map((tensor) => [tensor.name, valuesOf(tensor)])).toEqual([["OUT", [3, 6]]]);
    // The same tensor the operator answers with: no copy was made.
    expect(byStep.get("sum")![0]!.data).toBe(kept.outputs[0]!.data);
    expect(byStep.get("route")).toBeUndefined();
    expect(byStep.get("neg")).toBeUndefined(); // skipped

    const plain = await executor.run([f32("IN", [1, 2])]);
    expect(plain.steps.map((record) => record.outputs)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("leaves out optional operator inputs the request did not send, and answers the requested outputs in order", async () => {
    const fake = fakeRunner({ echo: { run: (i) => ({ y: i.get("x")!, z: [i.has("opt") ? 1 : 0] }) } });
    const spec: OperatorSpec = {
      name: "op",
      inputs: [
        { name: "IN", datatype: "FP32", dims: [-1] },
        { name: "OPT", datatype: "FP32", dims: [-1], optional: true },
      ],
      outputs: [
        { name: "Y", datatype: "FP32", dims: [-1] },
        { name: "Z", datatype: "FP32", dims: [-1] },
      ],
      steps: [model("echo", "echo", { x: "IN", opt: "OPT" }, { y: "Y", z: "Z" })],
    };
    const result = await new DagExecutor(spec, { runModel: fake.runModel }).run([f32("IN", [7])], {
      outputNames: ["Z", "Y"],
    });
    expect(result.outputs.map((t) => t.name)).toEqual(["Z", "Y"]);
    expect(valuesOf(result.outputs[0])).toEqual([0]);
    expect(fake.calls[0]!.inputs.map((t) => t.name)).toEqual(["x"]);
  });

  it("fails with the step named when the model answers without a mapped output", async () => {
    const fake = fakeRunner({ mute: { run: () => ({}) } });
    await expect(
      new DagExecutor(operator([model("m", "mute", { x: "IN" }, { y: "OUT" })]), { runModel: fake.runModel }).run([
        f32("IN", [1]),
      ]),
    ).rejects.toMatchObject({
      kind: "INTERNAL",
      message: "operator 'op' step 'm' (model 'mute') failed: the model answered without output 'y'",
    });
  });

  it("reports a spec that cannot make progress instead of hanging", async () => {
    const fake = fakeRunner(MODELS);
    const cyclic = operator([
      model("a", "scale2", { x: "u" }, { y: "t" }),
      model("b", "scale2", { x: "t" }, { y: "u" }),
      model("c", "scale2", { x: "IN" }, { y: "OUT" }),
    ]);
    await expect(new DagExecutor(cyclic, { runModel: fake.runModel }).run([f32("IN", [1])])).rejects.toThrow(
      "operator 'op' cannot make progress: step(s) 'a', 'b' wait for tensors no step will produce",
    );
  });
});

describe("StepLimiter", () => {
  it("grants in order, and an aborted waiter leaves the queue", async () => {
    const limiter = new StepLimiter(1);
    const release1 = await limiter.acquire();
    const controller = new AbortController();
    const second = limiter.acquire(controller.signal);
    const third = limiter.acquire();
    expect(limiter.waiting).toBe(2);
    controller.abort();
    await expect(second).rejects.toMatchObject({ kind: "CANCELLED" });
    expect(limiter.waiting).toBe(1);
    release1();
    release1(); // idempotent
    const release3 = await third;
    expect(limiter.inFlight).toBe(1);
    release3();
    expect(limiter.inFlight).toBe(0);
  });
});

describe("conditions and scalar reads", () => {
  it("compares numbers, strings and booleans", () => {
    expect(conditionHolds({ equals: 3 }, 3)).toBe(true);
    expect(conditionHolds({ equals: "cat" }, "cat")).toBe(true);
    expect(conditionHolds({ equals: "3" }, 3)).toBe(true);
    expect(conditionHolds({ equals: true }, true)).toBe(true);
    expect(conditionHolds({ equals: 1 }, true)).toBe(true);
    expect(conditionHolds({ lessThan: 0.5 }, 0.25)).toBe(true);
    expect(conditionHolds({ greaterThan: 0.5 }, "0.75")).toBe(true);
    expect(conditionHolds({ greaterThan: 0.5 }, "abc")).toBe(false);
    expect(conditionHolds({ equals: 0 }, undefined)).toBe(false);
  });

  it("reads the first element of every datatype", () => {
    const int64 = Buffer.alloc(16);
    int64.writeBigInt64LE(-7n, 0);
    expect(firstElement({ name: "t", datatype: "INT64", shape: [2], data: int64 })).toBe(-7);
    expect(firstElement({ name: "t", datatype: "BOOL", shape: [1], data: Buffer.from([1]) })).toBe(true);
    expect(firstElement({ name: "t", datatype: "INT8", shape: [1], data: Buffer.from([0xff]) })).toBe(-1);
    expect(firstElement({ name: "t", datatype: "FP16", shape: [1], data: Buffer.from([0x00, 0x3c]) })).toBe(1);
    expect(firstElement({ name: "t", datatype: "BF16", shape: [1], data: Buffer.from([0xc0, 0x3f]) })).toBe(1.5);
    const bytes = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from("cat")]);
    expect(firstElement({ name: "t", datatype: "BYTES", shape: [1], data: bytes })).toBe("cat");
    expect(firstElement({ name: "t", datatype: "FP32", shape: [0], data: Buffer.alloc(0) })).toBeUndefined();
  });
});
