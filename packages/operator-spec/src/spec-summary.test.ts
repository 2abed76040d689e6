import { describe, expect, it } from "vitest";
import { specModels, specSteps } from "./spec-summary.js";

describe("specSteps / specModels", () => {
  it("lists the steps and the models they call, each model once", () => {
    const spec = {
      steps: [
        { id: "a", kind: "model", model: "pre" },
        { id: "r", kind: "route", input: "x", cases: [] },
        { id: "b", kind: "model", model: "pre" },
        { id: "c", kind: "model", model: "post" },
        "not a step",
      ],
    };
    expect(specSteps(spec)).toHaveLength(4);
    expect(specModels(spec)).toEqual(["pre", "post"]);
  });

  it("reads nothing from what is not a spec", () => {
    expect(specSteps({ steps: "x" })).toEqual([]);
    expect(specModels(null)).toEqual([]);
  });
});
