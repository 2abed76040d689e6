import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { parseOperatorSpec } from "./parse-operator-spec.js";

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
    [
      "bad datatype",
      { ...valid, inputs: [{ name: "IN", datatype: "FLOAT", dims: [16] }] },
      /'IN': datatype must be one of/,
    ],
    [
      "bad dims",
      { ...valid, inputs: [{ name: "IN", datatype: "FP32", dims: [-2] }] },
      /dims must be an array of integers >= -1/,
    ],
    [
      "duplicate tensor",
      { ...valid, inputs: [valid.inputs[0], valid.inputs[0]] },
      /tensor name 'IN' is used more than once/,
    ],
    ["duplicate step id", { ...valid, steps: [valid.steps[0], valid.steps[0]] }, /step id 'a' is used more than once/],
    [
      "unknown kind",
      { ...valid, steps: [{ id: "a", kind: "python" }] },
      /step 'a': kind must be "model", "route" or "exit"/,
    ],
    [
      "step without model",
      { ...valid, steps: [{ id: "a", kind: "model", inputs: {}, outputs: { y: "OUT" } }] },
      /step 'a': model must be a non-empty string/,
    ],
    [
      "step without outputs",
      { ...valid, steps: [{ id: "a", kind: "model", model: "pre", inputs: {}, outputs: {} }] },
      /step 'a': outputs must map at least one/,
    ],
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
    [
      "route with nothing",
      { ...valid, steps: [{ id: "r", kind: "route", input: "IN", cases: [] }] },
      /step 'r': a route needs at least one case or a default/,
    ],
    [
      "bad next",
      { ...valid, steps: [{ id: "r", kind: "route", input: "IN", cases: [{ when: { equals: 1 }, next: "a" }] }] },
      /step 'r': cases\[0\].next: must be an array of step ids/,
    ],
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
    expect(() => parseOperatorSpec({ name: "", inputs: [], outputs: [], steps: [] })).toThrow(
      /name: .*; inputs: .*; outputs: .*; steps: /,
    );
  });
});
