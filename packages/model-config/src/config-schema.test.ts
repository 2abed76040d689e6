import { describe, it, expect } from "vitest";
import { checkInteger, enumValueName, modelConfigRoot, modelConfigType, typeName } from "./config-schema.js";

describe("config-schema", () => {
  it("loads inference.ModelConfig with snake_case names and Triton's field numbers", () => {
    const type = modelConfigType();
    expect(typeName(type)).toBe("inference.ModelConfig");
    const numbers = Object.fromEntries(type.fieldsArray.map((field) => [field.name, field.id]));
    expect(numbers).toMatchObject({
      name: 1,
      platform: 2,
      version_policy: 3,
      max_batch_size: 4,
      input: 5,
      output: 6,
      instance_group: 7,
      default_model_filename: 8,
      cc_model_filenames: 9,
      metric_tags: 10,
      dynamic_batching: 11,
      optimization: 12,
      sequence_batching: 13,
      parameters: 14,
      ensemble_scheduling: 15,
      model_warmup: 16,
      backend: 17,
      model_operations: 18,
      model_transaction_policy: 19,
      batch_input: 20,
      batch_output: 21,
      model_repository_agents: 23,
      response_cache: 24,
      runtime: 25,
      model_metrics: 26,
    });
    expect(type.oneofsArray.map((oneof) => [oneof.name, oneof.fieldsArray.map((f) => f.name)])).toEqual([
      ["scheduling_choice", ["dynamic_batching", "sequence_batching", "ensemble_scheduling"]],
    ]);
  });

  it("is loaded once", () => {
    expect(modelConfigRoot()).toBe(modelConfigRoot());
  });

  it("resolves enums by name or number", () => {
    const dataType = modelConfigRoot().lookupEnum("inference.DataType");
    expect(enumValueName(dataType, "TYPE_BF16")).toBe("TYPE_BF16");
    expect(enumValueName(dataType, 13)).toBe("TYPE_STRING");
    expect(enumValueName(dataType, "FP32")).toBeUndefined();
    expect(enumValueName(dataType, "toString")).toBeUndefined();
    expect(enumValueName(dataType, 99)).toBeUndefined();
  });

  it("range-checks integers per proto type", () => {
    expect(checkInteger(-1n, "int32")).toBe(-1);
    expect(checkInteger(2n ** 31n, "int32")).toMatch(/out of range for int32/);
    expect(checkInteger(-1n, "uint64")).toMatch(/out of range for uint64/);
    expect(checkInteger(2n ** 32n - 1n, "uint32")).toBe(4294967295);
    expect(checkInteger(1n, "float")).toMatch(/not an integer type/);
  });
});
