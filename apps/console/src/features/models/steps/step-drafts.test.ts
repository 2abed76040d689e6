import { describe, expect, it } from "vitest";
import { type CatalogStep, freshId, pipelineOf, suggestedTensors, tensorsOf } from "./step-drafts";

const CATALOG: CatalogStep[] = [
  {
    name: "image.decode",
    category: "image",
    title: "",
    doc: "",
    inputs: [{ name: "image", datatypes: ["BYTES"], dims: [1] }],
    outputs: [{ name: "y", datatypes: ["UINT8"], dims: ["H", "W", 3] }],
  },
  {
    name: "tensor.topk",
    category: "tensor",
    title: "",
    doc: "",
    inputs: [{ name: "x", datatypes: ["FP32", "INT64"], dims: ["N"] }],
    outputs: [
      { name: "score", datatypes: ["FP32"], dims: [1] },
      { name: "index", datatypes: ["INT64"], dims: [1] },
    ],
  },
];

describe("step model drafts", () => {
  it("suggests the model's tensors from the first and last step (letters become -1)", () => {
    const steps = [
      { key: 1, id: "decode", step: "image.decode", params: "{}" },
      { key: 2, id: "topk", step: "tensor.topk", params: "{}" },
    ];
    expect(suggestedTensors(steps, CATALOG)).toEqual({
      inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
      outputs: [
        { name: "score", datatype: "FP32", dims: [1] },
        { name: "index", datatype: "INT64", dims: [1] },
      ],
    });
    expect(suggestedTensors([{ key: 1, id: "d", step: "image.decode", params: "" }], CATALOG).outputs).toEqual([
      { name: "y", datatype: "UINT8", dims: [-1, -1, 3] },
    ]);
  });

  it("turns the drafts into steps.json, naming the step whose parameters are not a JSON object", () => {
    expect(pipelineOf([{ key: 1, id: "a", step: "tensor.topk", params: '{"k": 2}' }])).toEqual({
      ok: true,
      pipeline: { steps: [{ id: "a", step: "tensor.topk", params: { k: 2 } }] },
    });
    const bad = pipelineOf([
      { key: 1, id: "a", step: "tensor.topk", params: "{k: 2}" },
      { key: 2, id: "b", step: "tensor.topk", params: "[1]" },
    ]);
    const problems = bad.ok ? [] : bad.problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^step 1 'a': parameters are not JSON \(/);
    expect(problems[1]).toBe("step 2 'b': parameters must be a JSON object");
    expect(pipelineOf([])).toEqual({ ok: false, problems: ["add at least one step"] });
    expect(tensorsOf("{}", "Inputs")).toEqual({
      ok: false,
      problem: "Inputs must be a JSON array of { name, datatype, dims }",
    });
    expect(freshId("image.resize", ["resize", "resize2"])).toBe("resize3");
  });
});
