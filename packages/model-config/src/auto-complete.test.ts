import { describe, it, expect } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { ModelIoMetadata } from "./auto-complete.js";
import { autoCompleteConfig, validateAgainstModel } from "./auto-complete.js";
import type { ModelConfigJson } from "./model-config-types.js";
import { normalizeConfig, validateConfig } from "./normalize-config.js";
import { parsePbtxt } from "./pbtxt-parser.js";

const BATCHING_MODEL: ModelIoMetadata = {
  inputs: [
    { name: "image", datatype: "FP32", shape: [-1, 3, 224, 224] },
    { name: "text", datatype: "BYTES", shape: [-1, 1] },
  ],
  outputs: [{ name: "probs", datatype: "FP32", shape: [-1, 1000] }],
};

const FIXED_MODEL: ModelIoMetadata = {
  inputs: [{ name: "x", datatype: "INT64", shape: [1, 4] }],
  outputs: [{ name: "y", datatype: "FP32", shape: [-1] }],
};

function mismatch(config: ModelConfigJson, io: ModelIoMetadata): string {
  try {
    validateAgainstModel(config, io);
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected a mismatch");
}

describe("autoCompleteConfig", () => {
  it("batching model without a config: max_batch_size 4, dynamic_batching, dims without the batch dim", () => {
    const completed = autoCompleteConfig({}, BATCHING_MODEL);
    expect(completed).toEqual({
      max_batch_size: 4,
      dynamic_batching: {},
      input: [
        { name: "image", data_type: "TYPE_FP32", dims: [3, 224, 224] },
        { name: "text", data_type: "TYPE_STRING", dims: [1] },
      ],
      output: [{ name: "probs", data_type: "TYPE_FP32", dims: [1000] }],
    });
    expect(() => validateAgainstModel(completed, BATCHING_MODEL)).not.toThrow();
  });

  it("honours defaultMaxBatchSize and an existing scheduler", () => {
    expect(autoCompleteConfig({}, BATCHING_MODEL, { defaultMaxBatchSize: 16 }).max_batch_size).toBe(16);
    const sequence = autoCompleteConfig({ sequence_batching: {} }, BATCHING_MODEL);
    expect(sequence.max_batch_size).toBe(4);
    expect(sequence.dynamic_batching).toBeUndefined();
    const off = autoCompleteConfig({}, BATCHING_MODEL, { defaultMaxBatchSize: 0 });
    expect(off.max_batch_size).toBe(0);
    expect(off.dynamic_batching).toBeUndefined();
    expect(off.input![0]!.dims).toEqual([-1, 3, 224, 224]); // batching off: full model shape
  });

  it("non-batching model: max_batch_size 0 and full shapes", () => {
    expect(autoCompleteConfig({}, FIXED_MODEL)).toEqual({
      max_batch_size: 0,
      input: [{ name: "x", data_type: "TYPE_INT64", dims: [1, 4] }],
      output: [{ name: "y", data_type: "TYPE_FP32", dims: [-1] }],
    });
  });

  it("keeps an explicit max_batch_size (read from the raw parsed config)", () => {
    const raw = parsePbtxt("max_batch_size: 0", "c");
    const completed = autoCompleteConfig(raw, BATCHING_MODEL);
    expect(completed.max_batch_size).toBe(0);
    expect(completed.dynamic_batching).toBeUndefined();
    expect(completed.input![0]!.dims).toEqual([-1, 3, 224, 224]);
    const eight = autoCompleteConfig(parsePbtxt("max_batch_size: 8", "c"), BATCHING_MODEL);
    expect(eight.max_batch_size).toBe(8);
    expect(eight.dynamic_batching).toBeUndefined();
  });

  it("maxBatchSizeSet overrides the detection (e.g. for an already-normalized config)", () => {
    const normalized = normalizeConfig({}, { modelName: "m" }); // max_batch_size 0 filled by default
    expect(autoCompleteConfig(normalized, BATCHING_MODEL, { maxBatchSizeSet: false }).max_batch_size).toBe(4);
    expect(autoCompleteConfig({ max_batch_size: 2 }, BATCHING_MODEL, { maxBatchSizeSet: false }).max_batch_size).toBe(
      4,
    );
  });

  it("partial config: fills data_type / dims of listed tensors, appends the rest in model order", () => {
    const raw = parsePbtxt('input { name: "text" dims: [ -1 ] }\noutput { name: "probs" data_type: TYPE_FP32 }', "c");
    const completed = autoCompleteConfig(raw, BATCHING_MODEL);
    expect(completed.input).toEqual([
      { name: "text", data_type: "TYPE_STRING", dims: [-1] },
      { name: "image", data_type: "TYPE_FP32", dims: [3, 224, 224] },
    ]);
    expect(completed.output).toEqual([{ name: "probs", data_type: "TYPE_FP32", dims: [1000] }]);
    expect(raw.input![0]!.data_type).toBeUndefined(); // not mutated
  });

  it("leaves data_type unset when the model's type has no KServe equivalent", () => {
    const completed = autoCompleteConfig({}, { inputs: [{ name: "c", datatype: undefined, shape: [2] }], outputs: [] });
    expect(completed.input).toEqual([{ name: "c", dims: [2] }]);
  });

  it("a model with one fixed first dim does not batch", () => {
    const io: ModelIoMetadata = {
      inputs: [{ name: "a", datatype: "FP32", shape: [-1, 2] }],
      outputs: [{ name: "b", datatype: "FP32", shape: [2] }],
    };
    expect(autoCompleteConfig({}, io).max_batch_size).toBe(0);
    expect(autoCompleteConfig({}, { inputs: [], outputs: [] }).max_batch_size).toBe(0);
  });

  it("the full pipeline yields a valid, matching config", () => {
    const completed = autoCompleteConfig(parsePbtxt('backend: "onnxruntime"', "c"), BATCHING_MODEL);
    const normalized = normalizeConfig(completed, { modelName: "clf" });
    expect(() => validateConfig(normalized, "clf")).not.toThrow();
    expect(() => validateAgainstModel(normalized, BATCHING_MODEL)).not.toThrow();
    expect(normalized.dynamic_batching).toMatchObject({ preferred_batch_size: [], max_queue_delay_microseconds: 0 });
  });
});

describe("validateAgainstModel", () => {
  const config = (extra: ModelConfigJson): ModelConfigJson => ({ name: "m", max_batch_size: 0, ...extra });

  it("accepts compatible shapes: equal dims, any dim where the model has -1, reshape in place of dims", () => {
    expect(() =>
      validateAgainstModel(
        config({
          input: [{ name: "x", data_type: "TYPE_INT64", dims: [4], reshape: { shape: [1, 4] } }],
          output: [{ name: "y", data_type: "TYPE_FP32", dims: [7] }],
        }),
        FIXED_MODEL,
      ),
    ).not.toThrow();
  });

  it("rejects tensors the model does not have, listing the model's names", () => {
    expect(mismatch(config({ input: [{ name: "z", data_type: "TYPE_INT64", dims: [1, 4] }] }), FIXED_MODEL)).toBe(
      "model 'm': unexpected input 'z' in the configuration; the model's inputs are: x",
    );
    expect(mismatch(config({ output: [{ name: "q", data_type: "TYPE_FP32" }] }), { inputs: [], outputs: [] })).toBe(
      "model 'm': unexpected output 'q' in the configuration; the model's outputs are: (none)",
    );
  });

  it("rejects datatype mismatches, naming both types (BYTES is TYPE_STRING)", () => {
    expect(mismatch(config({ input: [{ name: "x", data_type: "TYPE_INT32", dims: [1, 4] }] }), FIXED_MODEL)).toBe(
      "model 'm': input 'x': the configuration says TYPE_INT32 but the model tensor is TYPE_INT64",
    );
    expect(
      mismatch(
        config({ max_batch_size: 4, input: [{ name: "text", data_type: "TYPE_FP32", dims: [1] }] }),
        BATCHING_MODEL,
      ),
    ).toBe("model 'm': input 'text': the configuration says TYPE_FP32 but the model tensor is TYPE_STRING");
    expect(
      mismatch(config({ input: [{ name: "c", data_type: "TYPE_FP32", dims: [2] }] }), {
        inputs: [{ name: "c", datatype: undefined, shape: [2] }],
        outputs: [],
      }),
    ).toBe("model 'm': input 'c': the configuration says TYPE_FP32 but the model tensor is an unsupported type");
  });

  it("rejects shape mismatches: rank, fixed dims, -1 against a fixed model dim, batch dim", () => {
    expect(mismatch(config({ input: [{ name: "x", data_type: "TYPE_INT64", dims: [4] }] }), FIXED_MODEL)).toBe(
      "model 'm': input 'x': the configuration's shape [4] from dims does not match the model tensor's shape [1,4]",
    );
    expect(mismatch(config({ input: [{ name: "x", data_type: "TYPE_INT64", dims: [1, 5] }] }), FIXED_MODEL)).toBe(
      "model 'm': input 'x': the configuration's shape [1,5] from dims does not match the model tensor's shape [1,4]",
    );
    expect(mismatch(config({ input: [{ name: "x", data_type: "TYPE_INT64", dims: [1, -1] }] }), FIXED_MODEL)).toBe(
      "model 'm': input 'x': the configuration's shape [1,-1] from dims does not match the model tensor's shape [1,4]",
    );
    expect(
      mismatch(config({ max_batch_size: 2, input: [{ name: "x", data_type: "TYPE_INT64", dims: [4] }] }), FIXED_MODEL),
    ).toBe(
      "model 'm': input 'x': the configuration's shape [-1,4] (with the batch dimension, as max_batch_size > 0) from dims " +
        "does not match the model tensor's shape [1,4]",
    );
    expect(
      mismatch(
        config({ output: [{ name: "y", data_type: "TYPE_FP32", dims: [2], reshape: { shape: [1, 2] } }] }),
        FIXED_MODEL,
      ),
    ).toBe(
      "model 'm': output 'y': the configuration's shape [1,2] from reshape does not match the model tensor's shape [-1]",
    );
  });

  it("uses the given source as the message prefix", () => {
    expect(() => validateAgainstModel(config({ input: [{ name: "nope" }] }), FIXED_MODEL, "repo/m")).toThrow(
      /^repo\/m: unexpected input 'nope'/,
    );
  });
});

describe("auto-complete of a sequence model", () => {
  it("leaves the control and state tensors out of input and output (the server feeds and keeps them)", () => {
    const io = {
      inputs: [
        { name: "input", datatype: "FP32" as const, shape: [-1, 512] },
        { name: "state", datatype: "FP32" as const, shape: [2, -1, 128] },
        { name: "START", datatype: "INT32" as const, shape: [1] },
      ],
      outputs: [
        { name: "output", datatype: "FP32" as const, shape: [-1, 1] },
        { name: "stateN", datatype: "FP32" as const, shape: [2, -1, 128] },
      ],
    };
    const completed = autoCompleteConfig(
      {
        max_batch_size: 0,
        sequence_batching: {
          control_input: [{ name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] }],
          state: [{ input_name: "state", output_name: "stateN", data_type: "TYPE_FP32", dims: [2, 1, 128] }],
        },
      },
      io,
    );
    expect(completed.input!.map((tensor) => tensor.name)).toEqual(["input"]);
    expect(completed.output!.map((tensor) => tensor.name)).toEqual(["output"]);
  });
});
