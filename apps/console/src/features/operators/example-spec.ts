import { compactJson } from "./compact-json";

/**
 * The spec the editor starts with: the README's two-step DAG over the example
 * add_sub model (Y = A + 2B), to edit into one's own.
 */
export const EXAMPLE_SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "sum" } },
    {
      id: "second",
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: "sum", INPUT1: "B" },
      outputs: { OUTPUT0: "Y" },
    },
  ],
};

export const EXAMPLE_SPEC_TEXT = compactJson(EXAMPLE_SPEC);
