import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { ServedModelSignature } from "../engine/request-validation.js";
import {
  analyzeOperator,
  assertValidOperator,
  operatorModelConfig,
  parseOperatorSpec,
  validateOperator,
  type ModelSignatureLookup,
  type OperatorSpec,
  type StepSpec,
} from "./operator-spec.js";

const fp32 = (name: string, dims: number[] = [16], optional = false) => ({ name, datatype: "FP32" as const, dims, optional });

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

const pre = (id: string, input: string, output: string): StepSpec => ({ id, kind: "model", model: "pre", inputs: { x: input }, outputs: { y: output } });

function codes(s: OperatorSpec): string[] {
  return validateOperator(s, lookup).map((problem) => problem.code);
}

function messages(s: OperatorSpec): string {
  return validateOperator(s, lookup)
    .map((problem) => problem.message)
    .join("\n");
}

describe("parseOperatorSpec", () => {
  const valid = {
    name: "op",
    inputs: [{ name: "IN", datatype: "FP32", dims: [16] }],
    outputs: [{ name: "OUT", datatype: "FP32", dims: [16] }],
    steps: [
      { id: "a", kind: "model", model: "pre", inputs: { x: "IN" }, outputs: { y: "OUT" } },
      { id: "r", kind: "route", input: "$param.mode", cases: [{ when: { equals: "fast" }, next: ["a"] }], default: [] },
      { id: "e", kind: "exit", input: "OUT", when: { greaterThan: 0.5 }, outputs: { OUT: "OUT" } },
    ],
  };

  it("returns a typed spec for a well-formed document", () => {
    const parsed = parseOperatorSpec(valid);
    expect(parsed.name).toBe("op");
    expect(parsed.steps.map((step) => step.kind)).toEqual(["model", "route", "exit"]);
  });

  it.each([
    ["not an object", 42, /must be a JSON object/],
    ["no steps", { ...valid, steps: [] }, /steps: must be a non-empty array/],
    ["no inputs", { ...valid, inputs: undefined }, /inputs: must be a non-empty array/],
    ["bad name", { ...valid, name: "a/b" }, /name: must be a non-empty string usable as a model name/],
    ["bad datatype", { ...valid, inputs: [{ name: "IN", datatype: "FLOAT", dims: [16] }] }, /'IN': datatype must be one of/],
    ["bad dims", { ...valid, inputs: [{ name: "IN", datatype: "FP32", dims: [-2] }] }, /dims must be an array of integers >= -1/],
    ["duplicate tensor", { ...valid, inputs: [valid.inputs[0], valid.inputs[0]] }, /tensor name 'IN' is used more than once/],
    ["duplicate step id", { ...valid, steps: [valid.steps[0], valid.steps[0]] }, /step id 'a' is used more than once/],
    ["unknown kind", { ...valid, steps: [{ id: "a", kind: "python" }] }, /step 'a': kind must be "model", "route" or "exit"/],
    ["step without model", { ...valid, steps: [{ id: "a", kind: "model", inputs: {}, outputs: { y: "OUT" } }] }, /step 'a': model must be a non-empty string/],
    ["step without outputs", { ...valid, steps: [{ id: "a", kind: "model", model: "pre", inputs: {}, outputs: {} }] }, /step 'a': outputs must map at least one/],
    [
      "two comparisons",
      { ...valid, steps: [{ id: "e", kind: "exit", input: "IN", when: { equals: 1, lessThan: 2 }, outputs: {} }] },
      /step 'e': when: must have exactly one of equals, lessThan, greaterThan; got equals, lessThan/,
    ],
    [
      "non-numeric lessThan",
      { ...valid, steps: [{ id: "r", kind: "route", input: "IN", cases: [{ when: { lessThan: "3" }, next: [] }] }] },
      /step 'r': cases\[0\].when: lessThan must be a finite number/,
    ],
    ["route with nothing", { ...valid, steps: [{ id: "r", kind: "route", input: "IN", cases: [] }] }, /step 'r': a route needs at least one case or a default/],
    ["bad next", { ...valid, steps: [{ id: "r", kind: "route", input: "IN", cases: [{ when: { equals: 1 }, next: "a" }] }] }, /step 'r': cases\[0\].next: must be an array of step ids/],
  ])("rejects %s with INVALID_ARG naming the problem", (_what, document, pattern) => {
    let thrown: unknown;
    try {
      parseOperatorSpec(document);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OperonError);
    expect((thrown as OperonError).kind).toBe("INVALID_ARG");
    expect((thrown as OperonError).message).toMatch(pattern);
  });

  it("lists every structural problem at once", () => {
    expect(() => parseOperatorSpec({ name: "", inputs: [], outputs: [], steps: [] })).toThrow(/name: .*; inputs: .*; outputs: .*; steps: /);
  });
});

describe("validateOperator", () => {
  it("accepts a valid pipeline", () => {
    const s = spec([
      pre("pre", "IN", "t"),
      { id: "add", kind: "model", model: "add_sub", inputs: { INPUT0: "t", INPUT1: "IN" }, outputs: { OUTPUT0: "OUT" } },
    ]);
    expect(validateOperator(s, lookup)).toEqual([]);
  });

  it("unknown models", () => {
    const s = spec([{ id: "m", kind: "model", model: "nope", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(codes(s)).toEqual(["unknown-model"]);
    expect(messages(s)).toContain("step 'm': model 'nope' is not served");
  });

  it("unknown model inputs and outputs, unmapped required inputs", () => {
    const s = spec([{ id: "m", kind: "model", model: "add_sub", inputs: { INPUT0: "IN", BOGUS: "IN" }, outputs: { OUTPUT9: "OUT" } }]);
    expect(codes(s)).toEqual(["unknown-model-tensor", "unmapped-model-input", "unknown-model-tensor"]);
    const text = messages(s);
    expect(text).toContain("step 'm': model 'add_sub' has no input 'BOGUS' (its inputs: 'INPUT0', 'INPUT1')");
    expect(text).toContain("step 'm': required input 'INPUT1' of model 'add_sub' is not mapped to a tensor");
    expect(text).toContain("step 'm': model 'add_sub' has no output 'OUTPUT9' (its outputs: 'OUTPUT0', 'OUTPUT1')");
  });

  it("optional model inputs may stay unmapped", () => {
    expect(codes(spec([{ id: "m", kind: "model", model: "opt", inputs: { x: "IN" }, outputs: { y: "OUT" } }]))).toEqual([]);
  });

  it("unknown tensors", () => {
    const s = spec([pre("a", "nowhere", "OUT")]);
    expect(codes(s)).toEqual(["unknown-tensor"]);
    expect(messages(s)).toContain("step 'a' reads tensor 'nowhere' (for input 'x'), which is neither an operator input nor produced by any step");
    const route = spec([pre("a", "IN", "OUT"), { id: "r", kind: "route", input: "ghost", cases: [], default: ["a"] }]);
    expect(messages(route)).toContain("route step 'r' reads tensor 'ghost'");
  });

  it("tensors produced twice", () => {
    const s = spec([pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]);
    expect(codes(s)).toEqual(["duplicate-producer"]);
    expect(messages(s)).toContain("tensor 'OUT' is produced by both step 'a' and step 'b'");
    expect(messages(spec([pre("a", "IN", "IN"), pre("b", "IN", "OUT")]))).toContain("tensor 'IN' is an operator input and is also produced by step 'a'");
  });

  it("allows one tensor from the exclusive branches of a route, not from one branch", () => {
    const route = (cases: string[][]): StepSpec => ({
      id: "r",
      kind: "route",
      input: "$param.mode",
      cases: cases.map((next, i) => ({ when: { equals: i }, next })),
    });
    expect(codes(spec([route([["a"], ["b"]]), pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]))).toEqual([]);
    expect(codes(spec([route([["a", "b"]]), pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]))).toEqual(["duplicate-producer"]);
  });

  it("datatype mismatches between connected steps", () => {
    const s = spec([pre("a", "IN", "t"), { id: "b", kind: "model", model: "ints", inputs: { x: "t" }, outputs: { y: "u" } }, pre("c", "IN", "OUT")]);
    expect(codes(s)).toEqual(["type-mismatch"]);
    expect(messages(s)).toContain(
      "tensor 't' from step 'a' (output 'y' of model 'pre') to step 'b' (input 'x' of model 'ints'): datatype FP32 does not match INT64",
    );
  });

  it("shape mismatches between connected steps and operator outputs", () => {
    const s = spec([pre("a", "IN", "t"), { id: "b", kind: "model", model: "wide", inputs: { x: "t" }, outputs: { y: "OUT" } }]);
    const text = messages(s);
    expect(codes(s)).toEqual(["shape-mismatch", "shape-mismatch"]);
    expect(text).toContain("tensor 't' from step 'a' (output 'y' of model 'pre') to step 'b' (input 'x' of model 'wide'): shape [-1,16] does not match [-1,32]");
    expect(text).toContain("tensor 'OUT' from step 'b' (output 'y' of model 'wide') to operator output 'OUT': shape [-1,32] does not match [-1,16]");
    // A non-batching operator with explicit batch dims matches batching models.
    expect(codes(spec([pre("a", "IN", "OUT")], { maxBatchSize: 0, inputs: [fp32("IN", [-1, 16])], outputs: [fp32("OUT", [2, 16])] }))).toEqual([]);
  });

  it("an operator batch size above a step model's", () => {
    const s = spec([{ id: "s", kind: "model", model: "small_batch", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(codes(s)).toEqual(["batch-size"]);
    expect(messages(s)).toContain("step 's': the operator allows batch size 8, but model 'small_batch' only 2");
  });

  it("unreachable outputs", () => {
    const s = spec([pre("a", "IN", "t")]);
    expect(codes(s)).toEqual(["unreachable-output"]);
    expect(messages(s)).toContain("operator output 'OUT' is not produced by any step");
  });

  it("routes naming unknown steps, themselves, or steps of another route", () => {
    const s = spec([
      pre("a", "IN", "OUT"),
      { id: "r1", kind: "route", input: "IN", cases: [{ when: { lessThan: 0 }, next: ["a", "ghost", "r1"] }] },
      { id: "r2", kind: "route", input: "IN", cases: [], default: ["a"] },
    ]);
    const text = messages(s);
    expect(text).toContain("route 'r1' names unknown step 'ghost'");
    expect(text).toContain("route 'r1' names itself as a branch");
    expect(text).toContain("step 'a' is a branch of both route 'r1' and route 'r2'");
  });

  it("exits must answer exactly the operator outputs", () => {
    const s = spec([pre("a", "IN", "OUT"), { id: "e", kind: "exit", input: "IN", when: { equals: 0 }, outputs: { OTHER: "IN" } }]);
    const text = messages(s);
    expect(codes(s)).toEqual(["bad-exit", "bad-exit"]);
    expect(text).toContain("exit 'e' answers 'OTHER', which is not an operator output");
    expect(text).toContain("exit 'e' does not answer operator output 'OUT'");
  });

  it("names a data cycle step by step", () => {
    const s = spec([pre("a", "u", "t"), pre("b", "t", "u"), pre("c", "IN", "OUT")]);
    expect(codes(s)).toEqual(["cycle"]);
    expect(messages(s)).toBe("cycle: 'a' -(tensor 't')-> 'b' -(tensor 'u')-> 'a'");
  });

  it("counts an exit's wait as an edge: an exit reading a step listed after it is a cycle", () => {
    const s = spec([{ id: "e", kind: "exit", input: "OUT", when: { equals: 0 }, outputs: { OUT: "OUT" } }, pre("a", "IN", "OUT")]);
    expect(messages(s)).toBe("cycle: 'e' -(listed after the exit)-> 'a' -(tensor 'OUT')-> 'e'");
  });

  it("assertValidOperator: UNAVAILABLE when only models are missing, else INVALID_ARG with every problem", () => {
    const missing = spec([{ id: "m", kind: "model", model: "later", inputs: { x: "IN" }, outputs: { y: "OUT" } }]);
    expect(() => assertValidOperator(missing, lookup, "ensemble 'e'")).toThrow(
      expect.objectContaining({ kind: "UNAVAILABLE", message: expect.stringContaining("ensemble 'e' cannot be served yet: step 'm': model 'later' is not served") }),
    );
    const broken = spec([pre("a", "IN", "t")]);
    expect(() => assertValidOperator(broken, lookup)).toThrow(
      expect.objectContaining({ kind: "INVALID_ARG", message: "operator 'op' is invalid: operator output 'OUT' is not produced by any step" }),
    );
  });
});

describe("analyzeOperator", () => {
  it("resolves reads, writes, route gates and exit guards", () => {
    const graph = analyzeOperator(
      spec([
        pre("a", "IN", "t"),
        { id: "e", kind: "exit", input: "t", when: { equals: 1 }, outputs: { OUT: "t" } },
        { id: "r", kind: "route", input: "$param.p", cases: [{ when: { equals: 1 }, next: ["b"] }], default: ["c"] },
        pre("b", "t", "OUT"),
        pre("c", "t", "OUT"),
      ]),
    );
    expect(graph.nodes.get("e")!.reads).toEqual(["t"]);
    expect(graph.nodes.get("r")!.reads).toEqual([]);
    expect(graph.nodes.get("b")!.gate).toBe("r");
    expect(graph.nodes.get("a")!.guards).toEqual([]);
    expect(graph.nodes.get("c")!.guards).toEqual(["e"]);
    expect(graph.producers.get("OUT")).toEqual(["b", "c"]);
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
