import { describe, expect, it } from "vitest";
import { graphPorts, type ModelSignature } from "./graph-ports";

const ADD_SUB: ModelSignature = {
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
    { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
  ],
  outputs: [
    { name: "OUTPUT0", datatype: "FP32", shape: [-1, 16] },
    { name: "OUTPUT1", datatype: "FP32", shape: [-1, 16] },
  ],
};

const SPEC = {
  inputs: [{ name: "A", datatype: "INT32", dims: [16] }],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", EXTRA: "A" }, outputs: { OUTPUT0: "Y" } },
    { id: "lost", kind: "model", model: "not_served", inputs: { X: "A" }, outputs: { Z: "z" } },
    { id: "gate", kind: "exit", input: "A", when: { lessThan: 0 }, outputs: { Y: "A" } },
  ],
};

describe("graphPorts", () => {
  const ports = graphPorts(SPEC, new Map([["add_sub", ADD_SUB]]));

  it("gives operator tensors one port each, with the batch dimension first when the operator batches", () => {
    expect(ports.get("in:A")).toEqual({
      inputs: [],
      outputs: [{ name: "A", datatype: "INT32", shape: [-1, 16], tensor: "A" }],
    });
    expect(ports.get("out:Y")?.inputs).toEqual([{ name: "Y", datatype: "FP32", shape: [-1, 16], tensor: "Y" }]);
  });

  it("gives a served model's step its model's ports, what each is wired to, then the names only the spec maps", () => {
    expect(ports.get("step:first")?.inputs).toEqual([
      { name: "INPUT0", datatype: "FP32", shape: [-1, 16], tensor: "A" },
      { name: "INPUT1", datatype: "FP32", shape: [-1, 16], tensor: undefined },
      { name: "EXTRA", datatype: null, shape: null, tensor: "A" },
    ]);
    expect(ports.get("step:first")?.outputs.map((port) => [port.name, port.tensor])).toEqual([
      ["OUTPUT0", "Y"],
      ["OUTPUT1", undefined],
    ]);
  });

  it("falls back to the spec's names, of unknown type, when the model is not served", () => {
    expect(ports.get("step:lost")).toEqual({
      inputs: [{ name: "X", datatype: null, shape: null, tensor: "A" }],
      outputs: [{ name: "Z", datatype: null, shape: null, tensor: "z" }],
    });
  });

  it("gives a route or exit one input port", () => {
    expect(ports.get("step:gate")).toEqual({
      inputs: [{ name: "input", datatype: null, shape: null, tensor: "A" }],
      outputs: [],
    });
  });

  it("reads nothing from what is not a spec", () => {
    expect(graphPorts("nope", new Map()).size).toBe(0);
  });
});
