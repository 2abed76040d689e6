import { describe, expect, it } from "vitest";
import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import type { AppError } from "../../app-error.js";
import { prepareConfig, suggestConfig } from "./uploaded-model-config.js";

const BATCHING: ModelIoMetadata = {
  inputs: [{ name: "x", datatype: "FP32", shape: [-1, 3, -1] }],
  outputs: [{ name: "y", datatype: "INT64", shape: [-1] }],
};
const FIXED: ModelIoMetadata = {
  inputs: [{ name: "x", datatype: "FP32", shape: [1, 4] }],
  outputs: [{ name: "y", datatype: "FP32", shape: [1, 2] }],
};

function fieldErrorsOf(fn: () => unknown): Array<{ path: string; message: string }> {
  try {
    fn();
  } catch (error) {
    expect((error as AppError).code).toBe("VALIDATION_FAILED");
    return (error as AppError).fieldErrors;
  }
  throw new Error("expected a validation failure");
}

describe("suggestConfig", () => {
  it("batches when every tensor's first dimension is dynamic", () => {
    expect(suggestConfig("m", BATCHING)).toEqual({
      name: "m",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3, -1] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [] }],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
      dynamic_batching: {},
    });
  });

  it("does not batch a model with a fixed first dimension", () => {
    expect(suggestConfig("m", FIXED)).toEqual({
      name: "m",
      platform: "onnxruntime_onnx",
      max_batch_size: 0,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [1, 4] }],
      output: [{ name: "y", data_type: "TYPE_FP32", dims: [1, 2] }],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
    });
  });
});

describe("prepareConfig", () => {
  it("refuses an inline instance (the gateway's event loop) and takes auto, thread or process", () => {
    const asking = (value: string) => ({ parameters: { operon_isolation: { string_value: value } } });
    const errors = fieldErrorsOf(() => prepareConfig("m", asking("inline"), new Map([[1, BATCHING]])));
    expect(errors).toEqual([{ path: "parameters.operon_isolation", message: expect.stringMatching(/event loop/) }]);
    // "auto" puts a model on the event loop only after the gateway bounded and measured its cost (inline-fit.ts).
    for (const value of ["auto", "thread", "process"])
      expect(prepareConfig("m", asking(value), new Map([[1, BATCHING]])).config.parameters).toEqual(
        asking(value).parameters,
      );
  });

  it("completes a partial config and writes it as config.pbtxt", () => {
    const prepared = prepareConfig("m", { instance_group: [{ count: 2 }] }, new Map([[1, BATCHING]]));
    expect(prepared.config).toMatchObject({
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      dynamic_batching: {},
      instance_group: [{ count: 2 }],
    });
    expect(parsePbtxt(prepared.text, "config.pbtxt")).toEqual(prepared.config);
    expect(prepared.normalized.instance_group?.[0]).toMatchObject({ kind: "KIND_CPU", count: 2, name: "m_0" });
    expect(prepared.servedVersions).toEqual([1]);
  });

  it("blames max_batch_size for a model that cannot batch", () => {
    const errors = fieldErrorsOf(() =>
      prepareConfig("m", { max_batch_size: 8, input: [{ name: "x", dims: [4] }] }, new Map([[1, FIXED]])),
    );
    expect(errors.map((error) => error.path)).toEqual(["max_batch_size"]);
    expect(errors[0]!.message).toBe(
      "is 8 but the model cannot batch: its input 'x' has a fixed first dimension (1), output 'y' has a fixed first dimension (1); set max_batch_size to 0",
    );
  });

  it("checks reshape.shape when a tensor is reshaped", () => {
    const ok = prepareConfig(
      "m",
      { input: [{ name: "x", dims: [4], reshape: { shape: [1, 4] } }] },
      new Map([[1, FIXED]]),
    );
    expect(ok.config.input?.[0]).toMatchObject({ dims: [4], reshape: { shape: [1, 4] } });
    const errors = fieldErrorsOf(() =>
      prepareConfig("m", { input: [{ name: "x", dims: [4], reshape: { shape: [4] } }] }, new Map([[1, FIXED]])),
    );
    expect(errors.map((error) => error.path)).toEqual(["input[0].reshape.shape"]);
  });

  it("checks every version the version policy serves, naming the version", () => {
    const renamed: ModelIoMetadata = {
      inputs: [{ name: "z", datatype: "FP32", shape: [-1, 3, -1] }],
      outputs: BATCHING.outputs,
    };
    const versions = new Map([
      [1, renamed],
      [2, BATCHING],
    ]);
    expect(prepareConfig("m", undefined, versions, 2).servedVersions).toEqual([2]);
    const errors = fieldErrorsOf(() => prepareConfig("m", { version_policy: { all: {} } }, versions, 2));
    expect(errors.map((error) => `${error.path} ${error.message}`)).toEqual([
      "input[0].name version 1: the model has no input 'x'; its inputs are 'z'",
      "input version 1: the model's input 'z' is missing from the config",
    ]);
    expect(
      fieldErrorsOf(() => prepareConfig("m", { version_policy: { specific: { versions: [1] } } }, versions, 2))[0],
    ).toMatchObject({
      path: "version_policy",
      message: "would not serve the uploaded version 2 (it serves 1)",
    });
  });

  it("refuses other backends and model file names", () => {
    const errors = fieldErrorsOf(() =>
      prepareConfig("m", { backend: "python", default_model_filename: "model.py" }, new Map([[1, BATCHING]])),
    );
    expect(errors.map((error) => error.path)).toEqual(["backend", "default_model_filename"]);
  });
});
