import { describe, it, expect } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { configFromJson } from "./config-json.js";
import { parsePbtxt } from "./pbtxt-parser.js";

function errorOf(input: unknown): string {
  try {
    configFromJson(input, "load");
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected validation to fail");
}

describe("configFromJson: accepted inputs", () => {
  it("accepts Triton's snake_case JSON (as text or as a value) and returns the same shape as the pbtxt parser", () => {
    const json = {
      name: "m",
      backend: "onnxruntime",
      max_batch_size: 4,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3, -1], reshape: { shape: [3, -1] } }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], label_filename: "labels.txt" }],
      instance_group: [{ kind: "KIND_CPU", count: 2 }],
      dynamic_batching: {
        preferred_batch_size: [2, 4],
        max_queue_delay_microseconds: 50,
        priority_levels: 2,
        default_priority_level: 1,
        priority_queue_policy: { "2": { timeout_action: "DELAY" } },
      },
      parameters: { threads: { string_value: "1" } },
      version_policy: { specific: { versions: [2] } },
    };
    const pbtxt = `
name: "m" backend: "onnxruntime" max_batch_size: 4
input { name: "x" data_type: TYPE_FP32 dims: [3, -1] reshape { shape: [3, -1] } }
output { name: "y" data_type: TYPE_INT64 dims: [1] label_filename: "labels.txt" }
instance_group { kind: KIND_CPU count: 2 }
dynamic_batching { preferred_batch_size: [2, 4] max_queue_delay_microseconds: 50 priority_levels: 2
  default_priority_level: 1 priority_queue_policy { key: 2 value { timeout_action: DELAY } } }
parameters { key: "threads" value { string_value: "1" } }
version_policy { specific { versions: 2 } }`;
    expect(configFromJson(JSON.stringify(json), "load")).toEqual(json);
    expect(configFromJson(json, "load")).toEqual(json);
    expect(configFromJson(json, "load")).toEqual(parsePbtxt(pbtxt, "config.pbtxt"));
  });

  it("accepts proto3 JSON camelCase names, int64 strings and enum numbers, returning snake_case", () => {
    expect(
      configFromJson(
        {
          maxBatchSize: "8",
          input: [{ name: "x", dataType: 11, dims: ["-1", "3"], isShapeTensor: false }],
          dynamicBatching: {
            maxQueueDelayMicroseconds: "18446744073709551615",
            defaultQueuePolicy: { timeoutAction: 1 },
          },
          sequenceBatching: null,
          modelTransactionPolicy: { decoupled: true },
        },
        "load",
      ),
    ).toEqual({
      max_batch_size: 8,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [-1, 3], is_shape_tensor: false }],
      dynamic_batching: {
        max_queue_delay_microseconds: 18446744073709551615,
        default_queue_policy: { timeout_action: "DELAY" },
      },
      model_transaction_policy: { decoupled: true },
    });
  });

  it("accepts floats as numbers or the proto3 JSON special strings", () => {
    const config = configFromJson(
      {
        sequence_batching: {
          direct: { minimum_slot_utilization: "0.5" },
          control_input: [{ control: [{ fp32_false_true: [0, "Infinity", "NaN"] }] }],
        },
      },
      "load",
    );
    const sequence = config.sequence_batching!;
    expect(sequence.direct).toEqual({ minimum_slot_utilization: 0.5 });
    const values = sequence.control_input![0]!.control![0]!.fp32_false_true!;
    expect(values[1]).toBe(Infinity);
    expect(values[2]).toBeNaN();
  });

  it("keeps a __proto__ map key as an own key", () => {
    const config = configFromJson('{"metric_tags": {"__proto__": "x"}}', "load");
    expect(Object.keys(config.metric_tags as object)).toEqual(["__proto__"]);
  });
});

describe("configFromJson: rejected inputs name source and field path", () => {
  it("malformed JSON", () => {
    expect(errorOf('{"name": ')).toMatch(/^load: invalid JSON: /);
  });

  it("non-object config", () => {
    expect(errorOf("[1]")).toBe("load: <root>: expected an object (inference.ModelConfig), got an array");
    expect(errorOf(null)).toBe("load: <root>: expected an object (inference.ModelConfig), got null");
  });

  it("unknown fields, at any depth", () => {
    expect(errorOf({ max_batch: 1 })).toBe("load: max_batch: unknown field 'max_batch' in inference.ModelConfig");
    expect(errorOf({ input: [{ name: "a" }, { name: "b", dim: [1] }] })).toBe(
      "load: input[1].dim: unknown field 'dim' in inference.ModelInput",
    );
    expect(errorOf({ parameters: { p: { value: "x" } } })).toBe(
      "load: parameters[\"p\"].value: unknown field 'value' in inference.ModelParameter",
    );
  });

  it("wrong types", () => {
    expect(errorOf({ name: 3 })).toBe("load: name: expected a string, got number 3");
    expect(errorOf({ max_batch_size: 1.5 })).toBe("load: max_batch_size: expected an integer (int32), got number 1.5");
    expect(errorOf({ max_batch_size: "four" })).toBe(
      'load: max_batch_size: expected an integer (int32), got string "four"',
    );
    expect(errorOf({ input: { name: "a" } })).toBe(
      "load: input: expected an array of inference.ModelInput, got an object",
    );
    expect(errorOf({ input: [{ dims: [1, true] }] })).toBe(
      "load: input[0].dims[1]: expected an integer (int64), got boolean true",
    );
    expect(errorOf({ response_cache: { enable: "true" } })).toBe(
      'load: response_cache.enable: expected a boolean, got string "true"',
    );
    expect(errorOf({ response_cache: true })).toBe(
      "load: response_cache: expected an object (inference.ModelResponseCache), got boolean true",
    );
    expect(errorOf({ parameters: [] })).toBe(
      "load: parameters: expected an object (map<string, inference.ModelParameter>), got an array",
    );
    expect(errorOf({ sequence_batching: { direct: { minimum_slot_utilization: "half" } } })).toBe(
      'load: sequence_batching.direct.minimum_slot_utilization: expected a number, got string "half"',
    );
  });

  it("unknown enum values", () => {
    expect(errorOf({ input: [{ data_type: "FP32" }] })).toBe(
      'load: input[0].data_type: unknown value "FP32" for enum inference.DataType',
    );
    expect(errorOf({ instance_group: [{ kind: 9 }] })).toBe(
      "load: instance_group[0].kind: unknown value 9 for enum inference.ModelInstanceGroup.Kind",
    );
    expect(errorOf({ instance_group: [{ kind: {} }] })).toBe(
      "load: instance_group[0].kind: expected an enum value of inference.ModelInstanceGroup.Kind (name or number), got an object",
    );
  });

  it("integers out of range and bad map keys", () => {
    expect(errorOf({ max_batch_size: 2 ** 31 })).toBe(
      "load: max_batch_size: integer 2147483648 out of range for int32 [-2147483648, 2147483647]",
    );
    expect(errorOf({ model_warmup: [{ batch_size: -1 }] })).toBe(
      "load: model_warmup[0].batch_size: integer -1 out of range for uint32 [0, 4294967295]",
    );
    expect(errorOf({ dynamic_batching: { priority_queue_policy: { high: {} } } })).toBe(
      'load: dynamic_batching.priority_queue_policy["high"]: map key must be an integer (uint64), got "high"',
    );
  });

  it("a oneof given twice, and one field under both of its names", () => {
    expect(errorOf({ max_batch_size: 1, dynamic_batching: {}, sequence_batching: {} })).toBe(
      "load: sequence_batching: 'sequence_batching' conflicts with 'dynamic_batching': both are in oneof 'scheduling_choice'",
    );
    expect(errorOf({ max_batch_size: 1, maxBatchSize: 2 })).toBe(
      "load: maxBatchSize: field 'max_batch_size' is given twice (as 'max_batch_size' and 'maxBatchSize')",
    );
  });
});
