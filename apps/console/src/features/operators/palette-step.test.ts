import { describe, expect, it } from "vitest";
import { appendModelStep, paletteGroup } from "./palette-step";

describe("appendModelStep", () => {
  it("appends a model step mapping each tensor to its own name, with an id not yet taken", () => {
    const spec = { inputs: [], steps: [{ id: "resize", kind: "model", model: "resize" }] };
    const next = appendModelStep(spec, { name: "resize", inputs: ["image"], outputs: ["pixels", "size"] });
    expect(next["steps"]).toEqual([
      { id: "resize", kind: "model", model: "resize" },
      {
        id: "resize_2",
        kind: "model",
        model: "resize",
        inputs: { image: "image" },
        outputs: { pixels: "pixels", size: "size" },
      },
    ]);
    expect(spec.steps).toHaveLength(1);
  });

  it("starts the steps list when the spec has none", () => {
    expect(appendModelStep({}, { name: "m", inputs: [], outputs: ["y"] })["steps"]).toEqual([
      { id: "m", kind: "model", model: "m", inputs: {}, outputs: { y: "y" } },
    ]);
  });
});

describe("paletteGroup", () => {
  it("tells built-in step models, custom steps and other models apart", () => {
    expect(paletteGroup({ backend: "operon_steps", platform: null })).toBe("step");
    expect(paletteGroup({ backend: "typescript", platform: "custom_step" })).toBe("custom");
    expect(paletteGroup({ backend: "onnxruntime", platform: "onnxruntime_onnx" })).toBe("model");
  });
});
