import { describe, expect, it } from "vitest";
import { normalizeConfig } from "@operon/model-config/normalize-config";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { ensembleStepModels, ensembleToOperator, isEnsembleConfig } from "./ensemble-operator.js";

const ENSEMBLE = `
name: "ensemble"
platform: "ensemble"
max_batch_size: 8
input [
  { name: "IN0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "IN1", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "SUM", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "DIFF", data_type: TYPE_FP32, dims: [ 16 ] }
]
ensemble_scheduling {
  max_inflight_responses: 4
  step [
    {
      model_name: "preprocess"
      model_version: -1
      input_map { key: "INPUT0" value: "IN0" }
      output_map { key: "OUTPUT0" value: "scaled" }
    },
    {
      model_name: "add_sub"
      model_version: 2
      input_map [ { key: "INPUT0" value: "scaled" }, { key: "INPUT1" value: "IN1" } ]
      output_map [ { key: "OUTPUT0" value: "SUM" }, { key: "OUTPUT1" value: "DIFF" } ]
    },
    {
      model_name: "preprocess"
      input_map { key: "INPUT0" value: "IN1" }
      output_map { key: "OUTPUT0" value: "unused" }
    }
  ]
}`;

describe("ensembleToOperator", () => {
  const config = normalizeConfig(parsePbtxt(ENSEMBLE, "config.pbtxt"), { modelName: "ensemble" });

  it("maps the config's tensors and steps onto an OperatorSpec", () => {
    const spec = ensembleToOperator("ensemble", config);
    expect(spec.name).toBe("ensemble");
    expect(spec.maxBatchSize).toBe(8);
    expect(spec.inputs).toEqual([
      { name: "IN0", datatype: "FP32", dims: [16] },
      { name: "IN1", datatype: "FP32", dims: [16] },
    ]);
    expect(spec.outputs.map((output) => output.name)).toEqual(["SUM", "DIFF"]);
    expect(spec.steps).toEqual([
      {
        id: "preprocess",
        kind: "model",
        model: "preprocess",
        inputs: { INPUT0: "IN0" },
        outputs: { OUTPUT0: "scaled" },
      },
      {
        id: "add_sub",
        kind: "model",
        model: "add_sub",
        version: "2",
        inputs: { INPUT0: "scaled", INPUT1: "IN1" },
        outputs: { OUTPUT0: "SUM", OUTPUT1: "DIFF" },
      },
      {
        id: "preprocess#2",
        kind: "model",
        model: "preprocess",
        inputs: { INPUT0: "IN1" },
        outputs: { OUTPUT0: "unused" },
      },
    ]);
  });

  it("turns max_inflight_responses (the proto's name) into the per-step in-flight cap", () => {
    expect(ensembleToOperator("ensemble", config).maxInflightPerStep).toBe(4);
    const older = {
      ...config,
      ensemble_scheduling: { step: config.ensemble_scheduling!.step!, max_inflight_requests: 3 },
    };
    expect(ensembleToOperator("ensemble", older).maxInflightPerStep).toBe(3);
    const none = { ...config, ensemble_scheduling: { step: config.ensemble_scheduling!.step! } };
    expect(ensembleToOperator("ensemble", none).maxInflightPerStep).toBe(0);
  });

  it("recognizes ensembles and lists the models they call", () => {
    expect(isEnsembleConfig(config)).toBe(true);
    expect(isEnsembleConfig({ platform: "onnxruntime_onnx" })).toBe(false);
    expect(ensembleStepModels(config)).toEqual(["preprocess", "add_sub"]);
  });

  it("rejects configs that are not ensembles or have a bad tensor type", () => {
    expect(() => ensembleToOperator("m", { platform: "onnxruntime_onnx" })).toThrow(/is not an ensemble/);
    const bad = { ...config, input: [{ name: "IN0", data_type: "TYPE_NOPE", dims: [16] }] };
    expect(() => ensembleToOperator("ensemble", bad)).toThrow(
      "ensemble 'ensemble': input 'IN0' has no valid data_type (got 'TYPE_NOPE')",
    );
  });
});
