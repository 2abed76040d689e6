import { describe, expect, it } from "vitest";
import { edgeKey, problemEdges, problemNodeIds } from "./problem-subjects.js";

describe("problemNodeIds", () => {
  it("finds the steps and operator tensors the gateway's messages name", () => {
    const ids = problemNodeIds([
      "step 'second': model 'nope' is not served (load it first)",
      "tensor 'A' from operator input 'A' to step 'first' (input 'INPUT0' of model 'add_sub'): datatype INT32 does not match FP32",
      "operator output 'Y' is not produced by any step",
      "route 'pick' names unknown step 'gone'",
    ]);
    expect([...ids].sort()).toEqual(["in:A", "out:Y", "step:first", "step:gone", "step:pick", "step:second"]);
  });
});

describe("problemEdges", () => {
  it("puts each datatype or shape mismatch on the edge it was found on", () => {
    const edges = problemEdges([
      "tensor 'A' from operator input 'A' to step 'first' (input 'INPUT0' of model 'add_sub'): datatype INT32 does not match FP32",
      "tensor 'sum' from step 'first' (output 'OUTPUT0' of model 'add_sub') to step 'second' (input 'INPUT0' of model 'add_sub'): shape [-1,16] does not match [-1,8]",
      "tensor 'sum' from step 'first' (output 'OUTPUT0' of model 'add_sub') to operator output 'Y': datatype FP32 does not match INT64",
      "tensor 'probs' from step 'cls' (output 'P' of model 'm') to operator output 'Y' (exit 'sure'): shape [-1,2] does not match [-1,3]",
      "step 'second': model 'nope' is not served (load it first)",
    ]);
    expect([...edges.keys()]).toEqual([
      edgeKey("in:A", "step:first"),
      edgeKey("step:first", "step:second"),
      edgeKey("step:first", "out:Y"),
      edgeKey("step:sure", "out:Y"),
    ]);
    expect(edges.get(edgeKey("in:A", "step:first"))).toEqual([
      expect.objectContaining({ tensor: "A", what: "datatype", given: "INT32", expected: "FP32" }),
    ]);
    expect(edges.get(edgeKey("step:first", "step:second"))).toEqual([
      expect.objectContaining({ tensor: "sum", what: "shape", given: "[-1,16]", expected: "[-1,8]" }),
    ]);
  });

  it("ignores messages that are not edge mismatches", () => {
    expect(problemEdges(["operator output 'Y' is not produced by any step", "tensor 'x' is odd"]).size).toBe(0);
  });
});
