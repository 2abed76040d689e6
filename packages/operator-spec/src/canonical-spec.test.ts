import { describe, expect, it } from "vitest";
import { canonicalSpec } from "./canonical-spec.js";

describe("canonicalSpec", () => {
  it("puts the keys of a spec, its tensors and steps in the usual order and keeps the rest", () => {
    const sorted = {
      extra: true,
      inputs: [{ dims: [16], name: "A", datatype: "FP32" }],
      maxBatchSize: 8,
      name: "op",
      outputs: [{ datatype: "FP32", dims: [16], name: "Y" }],
      steps: [{ inputs: { INPUT0: "A" }, kind: "model", id: "first", model: "add_sub", outputs: { OUTPUT0: "Y" } }],
    };
    const ordered = canonicalSpec(sorted);
    expect(Object.keys(ordered)).toEqual(["name", "maxBatchSize", "inputs", "outputs", "steps", "extra"]);
    expect(Object.keys((ordered["inputs"] as object[])[0]!)).toEqual(["name", "datatype", "dims"]);
    expect(Object.keys((ordered["steps"] as object[])[0]!)).toEqual(["id", "kind", "model", "inputs", "outputs"]);
    expect(ordered).toEqual(sorted);
  });
});
