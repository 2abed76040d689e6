import { describe, expect, it } from "vitest";
import type { OperatorSpec, StepSpec } from "@operon/operator-spec/operator-spec-schema";
import type { ServedModelSignature } from "../signature/model-signature.js";
import {
  assertValidOperator,
  operatorModelConfig,
  validateOperator,
  type ModelSignatureLookup,
} from "./operator-validation.js";

const fp32 = (name: string, dims: number[] = [16], optional = false) => ({
  name,
  datatype: "FP32" as const,
  dims,
  optional,
});

const MODELS: Record<string, ServedModelSignature> = {
  pre: { name: "pre", maxBatchSize: 8, inputs: [fp32("x")], outputs: [fp32("y")] },
  add_sub: {
    name: "add_sub",
    maxBatchSize: 8,
    inputs: [fp32("INPUT0"), fp32("INPUT1")],
    outputs: [fp32("OUTPUT0"), fp32("OUTPUT1")],
  },
  small_batch: { name: "small_batch", maxBatchSize: 2, inputs: [fp32("x")], outputs: [fp32("y")] },
  wide: { name: "wide", maxBatchSize: 8, inputs: [fp32("x", [32])], outputs: [fp32("y", [32])] },
  ints: {
    name: "ints",
    maxBatchSize: 8,
    inputs: [{ name: "x", datatype: "INT64", dims: [16], optional: false }],
    outputs: [{ name: "y", datatype: "INT64", dims: [16], optional: false }],
  },
  opt: { name: "opt", maxBatchSize: 8, inputs: [fp32("x"), fp32("extra", [16], true)], outputs: [fp32("y")] },
};

const lookup: ModelSignatureLookup = (model) => MODELS[model];

function spec(steps: StepSpec[], extra: Partial<OperatorSpec> = {}): OperatorSpec {
  return { name: "op", maxBatchSize: 8, inputs: [fp32("IN")], outputs: [fp32("OUT")], steps, ...extra };
}

const pre = (id: string, input: string, output: string): StepSpec => ({
  id,
  kind: "model",
  model: "pre",
  inputs: { x: input },
  outputs: { y: output },
});

function codes(s: OperatorSpec): string[] {
  return validateOperator(s, lookup).map((problem) => problem.code);
}

function messages(s: OperatorSpec): string {
  return validateOperator(s, lookup)
    .map((problem) => problem.message)
    .join("\n");
}

describe("validateOperator", () => {
  it("accepts a valid pipeline", () => {
    const s = spec([
      pre("pre", "IN", "t"),
      {
        id: "add",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "t", INPUT1: "IN" },
        outputs: { OUTPUT0: "OUT" },
      },
    ]);
    expect(validateOperator(s, lookup)).toEqual([]);
  });

  it("unknown models", () => {
    const s = spec([{ id: "m", kind: "model", model: "nope", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(codes(s)).toEqual(["unknown-model"]);
    expect(messages(s)).toContain("step 'm': model 'nope' is not served");
  });

  it("unknown model inputs and outputs, unmapped required inputs", () => {
    const s = spec([
      { id: "m", kind: "model", model: "add_sub", inputs: { INPUT0: "IN", BOGUS: "IN" }, outputs: { OUTPUT9: "OUT" } },
    ]);
    expect(codes(s)).toEqual(["unknown-model-tensor", "unmapped-model-input", "unknown-model-tensor"]);
    const text = messages(s);
    expect(text).toContain("step 'm': model 'add_sub' has no input 'BOGUS' (its inputs: 'INPUT0', 'INPUT1')");
    expect(text).toContain("step 'm': required input 'INPUT1' of model 'add_sub' is not mapped to a tensor");
    expect(text).toContain("step 'm': model 'add_sub' has no output 'OUTPUT9' (its outputs: 'OUTPUT0', 'OUTPUT1')");
  });

  it("optional model inputs may stay unmapped", () => {
    expect(codes(spec([{ id: "m", kind: "model", model: "opt", inputs: { x: "IN" }, outputs: { y: "OUT" } }]))).toEqual(
      [],
    );
  });

  it("datatype mismatches between connected steps", () => {
    const s = spec([
      pre("a", "IN", "t"),
      { id: "b", kind: "model", model: "ints", inputs: { x: "t" }, outputs: { y: "u" } },
      pre("c", "IN", "OUT"),
    ]);
    expect(codes(s)).toEqual(["type-mismatch"]);
    expect(messages(s)).toContain(
      "tensor 't' from step 'a' (output 'y' of model 'pre') to step 'b' (input 'x' of model 'ints'): datatype FP32 does not match INT64",
    );
  });

  it("shape mismatches between connected steps and operator outputs", () => {
    const s = spec([
      pre("a", "IN", "t"),
      { id: "b", kind: "model", model: "wide", inputs: { x: "t" }, outputs: { y: "OUT" } },
    ]);
    const text = messages(s);
    expect(codes(s)).toEqual(["shape-mismatch", "shape-mismatch"]);
    expect(text).toContain(
      "tensor 't' from step 'a' (output 'y' of model 'pre') to step 'b' (input 'x' of model 'wide'): shape [-1,16] does not match [-1,32]",
    );
    expect(text).toContain(
      "tensor 'OUT' from step 'b' (output 'y' of model 'wide') to operator output 'OUT': shape [-1,32] does not match [-1,16]",
    );
    // A non-batching operator with explicit batch dims matches batching models.
    expect(
      codes(
        spec([pre("a", "IN", "OUT")], {
          maxBatchSize: 0,
          inputs: [fp32("IN", [-1, 16])],
          outputs: [fp32("OUT", [2, 16])],
        }),
      ),
    ).toEqual([]);
  });

  it("an operator batch size above a step model's", () => {
    const s = spec([{ id: "s", kind: "model", model: "small_batch", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(codes(s)).toEqual(["batch-size"]);
    expect(messages(s)).toContain("step 's': the operator allows batch size 8, but model 'small_batch' only 2");
  });

  it("assertValidOperator: UNAVAILABLE when only models are missing, else INVALID_ARG with every problem", () => {
    const missing = spec([{ id: "m", kind: "model", model: "later", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(() => assertValidOperator(missing, lookup, "ensemble 'e'")).toThrow(
      expect.objectContaining({
        kind: "UNAVAILABLE",
        message: expect.stringContaining("ensemble 'e' cannot be served yet: step 'm': model 'later' is not served"),
      }),
    );
    const broken = spec([pre("a", "IN", "t")]);
    expect(() => assertValidOperator(broken, lookup)).toThrow(
      expect.objectContaining({
        kind: "INVALID_ARG",
        message: "operator 'op' is invalid: operator output 'OUT' is not produced by any step",
      }),
    );
  });
});

describe("operatorModelConfig", () => {
  it("serves the spec's tensors as a model config and carries the spec as a parameter", () => {
    const s = spec([pre("a", "IN", "OUT")], { description: "demo" });
    const config = operatorModelConfig(s);
    expect(config).toMatchObject({
      name: "op",
      platform: "operator",
      max_batch_size: 8,
      input: [{ name: "IN", data_type: "TYPE_FP32", dims: [16], optional: false }],
      output: [{ name: "OUT", data_type: "TYPE_FP32", dims: [16] }],
      parameters: { description: { string_value: "demo" } },
    });
    expect(JSON.parse(config.parameters!["operator_spec"]!.string_value)).toEqual(s);
  });
});
