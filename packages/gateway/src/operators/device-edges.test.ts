import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { InferResponse } from "@operon/protocol/inference";
import type { Tensor } from "@operon/protocol/tensor";
import { analyzeOperator } from "@operon/operator-spec/operator-structure";
import type { OperatorSpec, StepSpec } from "@operon/operator-spec/operator-spec-schema";
import { DagExecutor, type RunModel } from "./dag-executor.js";
import { type DeviceOf, planDeviceEdges } from "./device-edges.js";

function model(id: string, input: string, output: string, extra: Partial<StepSpec> = {}): StepSpec {
  return {
    id,
    kind: "model",
    model: id,
    inputs: { INPUT0: input },
    outputs: { OUTPUT0: output },
    ...extra,
  } as StepSpec;
}

function spec(steps: StepSpec[], outputs = ["OUT"]): OperatorSpec {
  return {
    name: "op",
    inputs: [{ name: "IN", datatype: "FP32", shape: [4] }],
    outputs: outputs.map((name) => ({ name, datatype: "FP32", shape: [4] })),
    steps,
  } as OperatorSpec;
}

const gpus =
  (placement: Record<string, number | undefined>): DeviceOf =>
  (name) =>
    placement[name];

function edgesOf(operator: OperatorSpec, deviceOf: DeviceOf | undefined): string[] {
  return planDeviceEdges(operator, analyzeOperator(operator), deviceOf).map(
    (edge) => `${edge.producer.id}.${edge.output}->${edge.tensor}->${edge.consumer.id}`,
  );
}

describe("planDeviceEdges", () => {
  const chain = spec([model("a", "IN", "mid"), model("b", "mid", "OUT")]);

  it("keeps the tensor between two steps on the same GPU on the device", () => {
    expect(edgesOf(chain, gpus({ a: 0, b: 0 }))).toEqual(["a.OUTPUT0->mid->b"]);
  });

  it("plans nothing for steps on different GPUs, a CPU step, or without a placement", () => {
    expect(edgesOf(chain, gpus({ a: 0, b: 1 }))).toEqual([]);
    expect(edgesOf(chain, gpus({ a: 0, b: undefined }))).toEqual([]);
    expect(edgesOf(chain, gpus({}))).toEqual([]);
    expect(edgesOf(chain, undefined)).toEqual([]);
  });

  it("plans nothing across a CPU step in between", () => {
    const between = spec([model("a", "IN", "t1"), model("cpu", "t1", "t2"), model("b", "t2", "OUT")]);
    expect(edgesOf(between, gpus({ a: 0, b: 0 }))).toEqual([]);
  });

  it("never keeps an operator output, a tensor two steps read, or one a route reads on the device", () => {
    const asOutput = spec([model("a", "IN", "mid"), model("b", "mid", "OUT")], ["OUT", "mid"]);
    expect(edgesOf(asOutput, gpus({ a: 0, b: 0 }))).toEqual([]);
    const twoReaders = spec(
      [model("a", "IN", "mid"), model("b", "mid", "OUT"), model("c", "mid", "OUT2")],
      ["OUT", "OUT2"],
    );
    expect(edgesOf(twoReaders, gpus({ a: 0, b: 0, c: 0 }))).toEqual([]);
    const routed = spec([
      model("a", "IN", "mid"),
      {
        id: "r",
        kind: "route",
        input: "mid",
        cases: [{ when: { equals: 1 }, next: ["b"] }],
        default: ["b"],
      } as StepSpec,
      model("b", "mid", "OUT"),
    ]);
    expect(edgesOf(routed, gpus({ a: 0, b: 0 }))).toEqual([]);
  });

  it("leaves out steps with a fallback model (it may run elsewhere)", () => {
    const fallback = spec([model("a", "IN", "mid"), model("b", "mid", "OUT", { fallback: { model: "cpu" } } as never)]);
    expect(edgesOf(fallback, gpus({ a: 0, b: 0 }))).toEqual([]);
  });
});

function f32(name: string, values: number[]): Tensor {
  return { name, datatype: "FP32", shape: [values.length], data: Buffer.from(Float32Array.from(values).buffer) };
}

interface Call {
  model: string;
  inputs: Tensor[];
  deviceOutputs: string[] | undefined;
}

/** Models a and b: a keeps OUTPUT0 on GPU 0 when asked (no bytes, a release that counts), b reads it. */
function gpuRunner(options: { failB?: boolean } = {}): { runModel: RunModel; calls: Call[]; released: string[] } {
  const calls: Call[] = [];
  const released: string[] = [];
  let region = 0;
  const runModel: RunModel = async (name, _version, inputs, _outputNames, _signal, _parameters, deviceOutputs) => {
    calls.push({ model: name, inputs, deviceOutputs });
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (name === "b" && options.failB === true) throw new OperonError("UNAVAILABLE", "b's worker exited");
    const input = inputs[0]!;
    const id = `${name}-${region++}`;
    const output: Tensor =
      deviceOutputs?.includes("OUTPUT0") === true
        ? {
            name: "OUTPUT0",
            datatype: "FP32",
            shape: input.shape,
            data: Buffer.alloc(0),
            device: { gpu: 0, handle: Buffer.alloc(72), byteLength: 16, region: 1, release: () => released.push(id) },
          }
        : { ...f32("OUTPUT0", [1, 2, 3, 4]), shape: input.shape };
    return { modelName: name, modelVersion: "1", outputs: [output] } as InferResponse;
  };
  return { runModel, calls, released };
}

describe("DagExecutor with tensors on a GPU", () => {
  const chain = spec([model("a", "IN", "mid"), model("b", "mid", "OUT")]);

  it("asks the producer to keep the tensor, hands the consumer the reference, and releases it once the consumer is done", async () => {
    const runner = gpuRunner();
    const executor = new DagExecutor(chain, { runModel: runner.runModel, deviceOf: gpus({ a: 0, b: 0 }) });
    const result = await executor.run([f32("IN", [1, 2, 3, 4])]);
    expect(runner.calls.map((call) => [call.model, call.deviceOutputs])).toEqual([
      ["a", ["OUTPUT0"]],
      ["b", []],
    ]);
    expect(runner.calls[1]!.inputs[0]!.device?.gpu).toBe(0);
    expect(runner.released).toEqual(["a-0"]);
    // The client's answer is bytes in host memory.
    expect(result.outputs[0]!.device).toBeUndefined();
    expect(result.outputs[0]!.data.length).toBe(16);
  });

  it("releases the region when the consumer fails", async () => {
    const runner = gpuRunner({ failB: true });
    const executor = new DagExecutor(chain, { runModel: runner.runModel, deviceOf: gpus({ a: 0, b: 0 }) });
    await expect(executor.run([f32("IN", [1, 2, 3, 4])])).rejects.toThrow("b's worker exited");
    expect(runner.released).toEqual(["a-0"]);
  });

  it("asks nothing of CPU operators and of steps on different GPUs", async () => {
    for (const deviceOf of [undefined, gpus({ a: 0, b: 1 })]) {
      const runner = gpuRunner();
      const executor = new DagExecutor(chain, {
        runModel: runner.runModel,
        ...(deviceOf !== undefined ? { deviceOf } : {}),
      });
      expect(executor.deviceEdges).toEqual([]);
      await executor.run([f32("IN", [1, 2, 3, 4])]);
      expect(runner.calls.map((call) => call.deviceOutputs)).toEqual([undefined, undefined]);
    }
  });

  it("checks each request again: a step model reloaded on another GPU gets host memory", async () => {
    const placement: Record<string, number | undefined> = { a: 0, b: 0 };
    const runner = gpuRunner();
    const executor = new DagExecutor(chain, { runModel: runner.runModel, deviceOf: (name) => placement[name] });
    placement.b = 1;
    await executor.run([f32("IN", [1, 2, 3, 4])]);
    expect(runner.calls.map((call) => call.deviceOutputs)).toEqual([undefined, undefined]);
  });

  it("keeps nothing on the device when the run asks for the step outputs (a debugging view)", async () => {
    const runner = gpuRunner();
    const executor = new DagExecutor(chain, { runModel: runner.runModel, deviceOf: gpus({ a: 0, b: 0 }) });
    await executor.run([f32("IN", [1, 2, 3, 4])], { keepStepOutputs: true });
    expect(runner.calls.map((call) => call.deviceOutputs)).toEqual([undefined, undefined]);
  });
});
