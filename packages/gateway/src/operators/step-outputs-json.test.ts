import { describe, expect, it } from "vitest";
import { encodeBytesElements, type Tensor } from "@operon/protocol/tensor";
import type { StepRecord } from "./dag-executor.js";
import { leadingElements, STEP_OUTPUT_MAX_ELEMENTS, stepOutputsJson } from "./step-outputs-json.js";

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function f32(name: string, shape: number[], values: number[]): Tensor {
  return { name, datatype: "FP32", shape, data: Buffer.from(Float32Array.from(values).buffer) };
}

const ok = (step: string, outputs: Tensor[]): StepRecord => ({
  step,
  kind: "model",
  model: "m",
  status: "ok",
  outputs,
});

describe("stepOutputsJson", () => {
  it("lists model steps in order with their tensors as KServe v2 JSON; routes and exits get no entry, steps that did not end ok no tensors", () => {
    const steps: StepRecord[] = [
      { step: "route", kind: "route", status: "ok" },
      ok("pre", [f32("scaled", [1, 3], [0.5, 1, -2])]),
      { step: "exit", kind: "exit", status: "ok" },
      { step: "skipped", kind: "model", model: "m", status: "skipped" },
    ];
    expect(JSON.parse(stepOutputsJson("op", steps))).toEqual([
      { step: "pre", outputs: [{ name: "scaled", datatype: "FP32", shape: [1, 3], data: [0.5, 1, -2] }] },
      { step: "skipped", outputs: [] },
    ]);
  });

  it(`cuts long tensors to the first ${STEP_OUTPUT_MAX_ELEMENTS} elements, says so, and keeps the full shape`, () => {
    const long = f32("t", [2, 200], range(400));
    const exact = f32("u", [STEP_OUTPUT_MAX_ELEMENTS], range(STEP_OUTPUT_MAX_ELEMENTS));
    const [entry] = JSON.parse(stepOutputsJson("op", [ok("s", [long, exact])])) as Array<{
      outputs: Array<Record<string, unknown>>;
    }>;
    expect(entry!.outputs[0]).toEqual({
      name: "t",
      datatype: "FP32",
      shape: [2, 200],
      data: range(STEP_OUTPUT_MAX_ELEMENTS),
      truncated: true,
    });
    expect(entry!.outputs[1]).toEqual({
      name: "u",
      datatype: "FP32",
      shape: [STEP_OUTPUT_MAX_ELEMENTS],
      data: range(STEP_OUTPUT_MAX_ELEMENTS),
    });
  });

  it("writes BYTES as strings (cut by element, not byte) and 64-bit integers with all their digits", () => {
    const words = range(300).map((i) => `word ${i} é`);
    const bytes: Tensor = { name: "w", datatype: "BYTES", shape: [300], data: encodeBytesElements(words) };
    const big = Buffer.alloc(16);
    big.writeBigInt64LE(2n ** 62n + 1n, 0);
    big.writeBigInt64LE(-3n, 8);
    const int64: Tensor = { name: "i", datatype: "INT64", shape: [2], data: big };
    const text = stepOutputsJson("op", [ok("s", [bytes, int64])]);
    expect(text).toContain(`"data":[${2n ** 62n + 1n},-3]`);
    const [entry] = JSON.parse(text) as Array<{ outputs: Array<{ data: unknown[]; truncated?: boolean }> }>;
    expect(entry!.outputs[0]!.data).toEqual(words.slice(0, STEP_OUTPUT_MAX_ELEMENTS));
    expect(entry!.outputs[0]!.truncated).toBe(true);
  });

  it("fails INTERNAL naming the operator, step and tensor when the data does not fit the shape", () => {
    expect(() => stepOutputsJson("op", [ok("s", [f32("t", [4], [1, 2])])])).toThrow(
      expect.objectContaining({
        kind: "INTERNAL",
        message: "operator 'op' step 's': output 't' (shape [4]) cannot be shown: 8 bytes for 4 FP32 elements",
      }),
    );
    const shortBytes: Tensor = { name: "w", datatype: "BYTES", shape: [3], data: encodeBytesElements(["a", "b"]) };
    expect(() => leadingElements(shortBytes, 10, "here")).toThrow(
      /here: output 'w' \(shape \[3\]\) cannot be shown: its data ends before element 2 of 3/,
    );
  });

  it("views the tensor's bytes without copying", () => {
    const tensor = f32("t", [1000], range(1000));
    const { head, truncated } = leadingElements(tensor, 10, "here");
    expect(truncated).toBe(true);
    expect(head.shape).toEqual([10]);
    expect(head.data.buffer).toBe(tensor.data.buffer);
    expect(head.data.length).toBe(40);
  });
});
