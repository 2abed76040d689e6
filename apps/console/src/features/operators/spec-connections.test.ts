import { describe, expect, it } from "vitest";
import { connectPorts, disconnectPort, portMismatch, type SpecEdit } from "./spec-connections";

/** Two add_sub steps with nothing wired yet: what an engineer starts from before dragging. */
const UNWIRED = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: {}, outputs: {} },
    { id: "second", kind: "model", model: "add_sub", inputs: {}, outputs: {} },
  ],
};

function specOf(edit: SpecEdit): Record<string, unknown> {
  if (!edit.ok) throw new Error(edit.message);
  return edit.spec;
}

function stepsOf(spec: Record<string, unknown>) {
  return spec["steps"] as Array<{ id: string; inputs: Record<string, string>; outputs: Record<string, string> }>;
}

describe("connectPorts", () => {
  it("wires the README's DAG (Y = A + 2B) port by port, leaving the original spec alone", () => {
    let spec: Record<string, unknown> = UNWIRED;
    spec = specOf(connectPorts(spec, { node: "in:A", port: "A" }, { node: "step:first", port: "INPUT0" }));
    spec = specOf(connectPorts(spec, { node: "in:B", port: "B" }, { node: "step:first", port: "INPUT1" }));
    spec = specOf(connectPorts(spec, { node: "step:first", port: "OUTPUT0" }, { node: "step:second", port: "INPUT0" }));
    spec = specOf(connectPorts(spec, { node: "in:B", port: "B" }, { node: "step:second", port: "INPUT1" }));
    spec = specOf(connectPorts(spec, { node: "step:second", port: "OUTPUT0" }, { node: "out:Y", port: "Y" }));
    expect(stepsOf(spec)).toEqual([
      {
        id: "first",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "A", INPUT1: "B" },
        outputs: { OUTPUT0: "first_OUTPUT0" },
      },
      {
        id: "second",
        kind: "model",
        model: "add_sub",
        inputs: { INPUT0: "first_OUTPUT0", INPUT1: "B" },
        outputs: { OUTPUT0: "Y" },
      },
    ]);
    expect(stepsOf(UNWIRED)[0]!.inputs).toEqual({});
  });

  it("replaces what an input port read before", () => {
    const once = specOf(connectPorts(UNWIRED, { node: "in:A", port: "A" }, { node: "step:first", port: "INPUT0" }));
    const again = specOf(connectPorts(once, { node: "in:B", port: "B" }, { node: "step:first", port: "INPUT0" }));
    expect(stepsOf(again)[0]!.inputs).toEqual({ INPUT0: "B" });
  });

  it("renames a step's published tensor to the operator output, for its readers too, and takes the output from its old producer", () => {
    const wired = {
      ...UNWIRED,
      steps: [
        {
          id: "first",
          kind: "model",
          model: "add_sub",
          inputs: { INPUT0: "A", INPUT1: "B" },
          outputs: { OUTPUT0: "sum", OUTPUT1: "Y" },
        },
        { id: "second", kind: "model", model: "add_sub", inputs: { INPUT0: "sum", INPUT1: "B" }, outputs: {} },
        { id: "gate", kind: "exit", input: "sum", when: { lessThan: 0 }, outputs: { Y: "sum" } },
      ],
    };
    const spec = specOf(connectPorts(wired, { node: "step:first", port: "OUTPUT0" }, { node: "out:Y", port: "Y" }));
    const [first, second, gate] = spec["steps"] as Array<Record<string, unknown>>;
    expect(first!["outputs"]).toEqual({ OUTPUT0: "Y" });
    expect(second!["inputs"]).toEqual({ INPUT0: "Y", INPUT1: "B" });
    expect(gate).toMatchObject({ input: "Y", outputs: { Y: "Y" } });
  });

  it("gives an unpublished output a fresh tensor name that does not collide", () => {
    const taken = { ...UNWIRED, inputs: [...UNWIRED.inputs, { name: "first_OUTPUT0", datatype: "FP32", dims: [16] }] };
    const spec = specOf(
      connectPorts(taken, { node: "step:first", port: "OUTPUT0" }, { node: "step:second", port: "INPUT0" }),
    );
    expect(stepsOf(spec)[1]!.inputs).toEqual({ INPUT0: "first_OUTPUT0_2" });
  });

  it("sets a route's or exit's input", () => {
    const spec = specOf(
      connectPorts(
        { ...UNWIRED, steps: [{ id: "pick", kind: "route", input: "A", cases: [], default: [] }] },
        { node: "in:B", port: "B" },
        { node: "step:pick", port: "input" },
      ),
    );
    expect((spec["steps"] as Array<Record<string, unknown>>)[0]!["input"]).toBe("B");
  });

  it("refuses what the spec cannot express, naming the problem", () => {
    const refusal = (edit: SpecEdit) => (edit.ok ? "accepted" : edit.message);
    expect(refusal(connectPorts(UNWIRED, { node: "in:A", port: "A" }, { node: "out:Y", port: "Y" }))).toBe(
      "operator input 'A' cannot answer operator output 'Y' directly: connect it through a step",
    );
    expect(
      refusal(connectPorts(UNWIRED, { node: "step:first", port: "OUTPUT0" }, { node: "step:first", port: "INPUT0" })),
    ).toBe("step 'first' cannot read its own output");
    expect(refusal(connectPorts(UNWIRED, { node: "in:C", port: "C" }, { node: "step:first", port: "INPUT0" }))).toBe(
      "the spec has no operator input 'C'",
    );
    expect(refusal(connectPorts(UNWIRED, { node: "in:A", port: "A" }, { node: "step:gone", port: "INPUT0" }))).toBe(
      "the spec has no step 'gone'",
    );
    expect(refusal(connectPorts(UNWIRED, { node: "out:Y", port: "Y" }, { node: "step:first", port: "INPUT0" }))).toBe(
      "a connection starts at an operator input or a step's output, not at operator output 'Y'",
    );
    expect(refusal(connectPorts(UNWIRED, { node: "in:A", port: "A" }, { node: "in:B", port: "B" }))).toBe(
      "a connection ends at a step's input or an operator output, not at operator input 'B'",
    );
  });
});

describe("disconnectPort", () => {
  const wired = {
    ...UNWIRED,
    steps: [
      { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
      { id: "second", kind: "model", model: "add_sub", inputs: { INPUT0: "Y", INPUT1: "B" }, outputs: {} },
    ],
  };

  it("unmaps a step's input", () => {
    const spec = specOf(disconnectPort(wired, { node: "step:first", port: "INPUT1" }));
    expect(stepsOf(spec)[0]!.inputs).toEqual({ INPUT0: "A" });
  });

  it("takes an operator output from its producer, which keeps publishing it (under a fresh name its readers follow)", () => {
    const spec = specOf(disconnectPort(wired, { node: "out:Y", port: "Y" }));
    expect(stepsOf(spec)[0]!.outputs).toEqual({ OUTPUT0: "first_OUTPUT0" });
    expect(stepsOf(spec)[1]!.inputs).toEqual({ INPUT0: "first_OUTPUT0", INPUT1: "B" });
  });

  it("says when there is nothing to remove", () => {
    const refusal = (edit: SpecEdit) => (edit.ok ? "accepted" : edit.message);
    expect(refusal(disconnectPort(UNWIRED, { node: "step:first", port: "INPUT0" }))).toBe(
      "step 'first' port 'INPUT0' is not connected",
    );
    expect(refusal(disconnectPort(UNWIRED, { node: "out:Y", port: "Y" }))).toBe(
      "no step's output is connected to operator output 'Y'",
    );
  });
});

describe("portMismatch", () => {
  const port = (datatype: string | null, shape: number[] | null) => ({ name: "t", datatype, shape, tensor: undefined });

  it("applies the gateway's datatype and shape rule", () => {
    expect(portMismatch(port("INT32", [-1, 16]), port("FP32", [-1, 16]))).toEqual({
      what: "datatype",
      given: "INT32",
      expected: "FP32",
    });
    expect(portMismatch(port("FP32", [-1, 8]), port("FP32", [-1, 16]))).toMatchObject({ what: "shape" });
    expect(portMismatch(port("FP32", [-1, 16]), port("FP32", [-1, 16]))).toBeUndefined();
  });

  it("says nothing when either end's type is unknown (the gateway decides then)", () => {
    expect(portMismatch(port(null, null), port("FP32", [-1, 16]))).toBeUndefined();
  });
});
