import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it, expect } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { autoCompleteConfig } from "./auto-complete.js";
import { configFromJson } from "./config-json.js";
import type { ModelConfigJson } from "./model-config-types.js";
import { normalizeConfig } from "./normalize-config.js";
import { parsePbtxt } from "./pbtxt-parser.js";
import { writePbtxt } from "./pbtxt-writer.js";

const EXAMPLES = fileURLToPath(new URL("../../../examples/model_repository", import.meta.url));

function roundTrip(config: ModelConfigJson): ModelConfigJson {
  return parsePbtxt(writePbtxt(config), "written");
}

function errorOf(config: unknown): string {
  try {
    writePbtxt(config as ModelConfigJson, "cfg");
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected the write to fail");
}

describe("writePbtxt", () => {
  it("writes Triton-style text in field-number order", () => {
    const config: ModelConfigJson = {
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
      name: "adder",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [16] }],
      output: [
        { name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "OUTPUT1", data_type: "TYPE_FP32", dims: [-1, 2] },
      ],
      dynamic_batching: {},
    };
    expect(writePbtxt(config)).toBe(
      [
        'name: "adder"',
        'platform: "onnxruntime_onnx"',
        "max_batch_size: 4",
        "input [",
        "  {",
        '    name: "INPUT0"',
        "    data_type: TYPE_FP32",
        "    dims: [ 16 ]",
        "  }",
        "]",
        "output [",
        "  {",
        '    name: "OUTPUT0"',
        "    data_type: TYPE_FP32",
        "    dims: [ 16 ]",
        "  },",
        "  {",
        '    name: "OUTPUT1"',
        "    data_type: TYPE_FP32",
        "    dims: [ -1, 2 ]",
        "  }",
        "]",
        "instance_group [",
        "  {",
        "    count: 1",
        "    kind: KIND_CPU",
        "  }",
        "]",
        "dynamic_batching { }",
        "",
      ].join("\n"),
    );
    expect(writePbtxt({})).toBe("");
  });

  it("round-trips every config of the example model repository through the parser", () => {
    const files = readdirSync(EXAMPLES)
      .map((model) => join(EXAMPLES, model, "config.pbtxt"))
      .filter((path) => existsSync(path));
    expect(files.length).toBeGreaterThan(5);
    for (const path of files) {
      const parsed = parsePbtxt(readFileSync(path, "utf8"), path);
      expect(roundTrip(parsed), path).toEqual(parsed);
    }
  });

  it("round-trips maps, oneofs, enums, nested messages, floats and 64-bit integers", () => {
    const config = configFromJson(
      {
        name: "everything",
        backend: "onnxruntime",
        version_policy: { specific: { versions: [1, 3] } },
        max_batch_size: 8,
        input: [
          {
            name: "x",
            data_type: "TYPE_INT64",
            format: "FORMAT_NCHW",
            dims: [3, -1],
            reshape: { shape: [1, 3, -1] },
            optional: true,
          },
        ],
        dynamic_batching: {
          preferred_batch_size: [2, 8],
          max_queue_delay_microseconds: "18446744073709551615",
          priority_levels: 2,
          default_priority_level: 1,
          priority_queue_policy: { "1": { timeout_action: "DELAY", max_queue_size: 4 }, "2": {} },
        },
        // Parsed from JSON text: in an object literal, __proto__ would set the prototype, not a key.
        parameters: JSON.parse(
          '{ "intra_op_thread_count": { "string_value": "2" }, "__proto__": { "string_value": "odd key" } }',
        ),
        metric_tags: {},
        model_warmup: [
          { name: "w", batch_size: 1, inputs: { x: { data_type: "TYPE_INT64", dims: [3, 1], zero_data: true } } },
        ],
        optimization: { graph: { level: -1 }, input_pinned_memory: { enable: false } },
        cc_model_filenames: { "8.6": "model_sm86.plan" },
        instance_group: [],
      },
      "json",
    );
    expect(roundTrip(config)).toEqual(config);
    expect(Object.keys(roundTrip(config).parameters!)).toContain("__proto__");
    const sequence = configFromJson(
      {
        max_batch_size: 2,
        sequence_batching: {
          control_input: [{ name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", fp32_false_true: [0, 1.5] }] }],
          direct: { minimum_slot_utilization: 0.25 },
        },
      },
      "json",
    );
    expect(roundTrip(sequence)).toEqual(sequence);
  });

  it("round-trips strings with quotes, escapes, control characters and non-ASCII text", () => {
    const label = 'a "quoted" \\ path\nline\ttab\r\u0001\u007f é 日本 🙂';
    const config: ModelConfigJson = {
      name: label,
      output: [{ name: "y", label_filename: label }],
      parameters: { [label]: { string_value: label } },
    };
    expect(roundTrip(config)).toEqual(config);
    expect(writePbtxt({ name: "\u0001" })).toBe('name: "\\001"\n');
  });

  it("round-trips special floats", () => {
    for (const value of [NaN, Infinity, -Infinity, -0, 1e-7, 1e21, 0.1]) {
      const config: ModelConfigJson = { sequence_batching: { direct: { minimum_slot_utilization: value } } };
      expect(roundTrip(config)).toEqual(config);
    }
  });

  it("keeps set-but-empty lists and maps", () => {
    const config: ModelConfigJson = {
      input: [],
      output: [{ name: "y", dims: [] }],
      parameters: {},
      dynamic_batching: {},
    };
    expect(roundTrip(config)).toEqual(config);
  });

  it("writes what auto-completion and normalization produce, and reads back the same config", () => {
    const completed = autoCompleteConfig(
      { name: "m", platform: "onnxruntime_onnx" },
      {
        inputs: [{ name: "in", datatype: "FP32", shape: [-1, 4] }],
        outputs: [{ name: "out", datatype: "BYTES", shape: [-1, 2] }],
      },
    );
    const normalized = normalizeConfig(completed, { modelName: "m" });
    expect(roundTrip(completed)).toEqual(completed);
    expect(normalizeConfig(roundTrip(completed), { modelName: "m" })).toEqual(normalized);
    expect(roundTrip(normalized)).toEqual(normalized);
  });

  it("refuses values the schema does not allow, naming the field", () => {
    expect(errorOf({ nmae: "x" })).toBe("cfg: nmae: unknown field 'nmae' in inference.ModelConfig");
    expect(errorOf({ input: [{ name: "x", data_type: "TYPE_FLOAT" }] })).toBe(
      'cfg: input[0].data_type: unknown value "TYPE_FLOAT" for enum inference.DataType',
    );
    expect(errorOf({ max_batch_size: 1.5 })).toBe("cfg: max_batch_size: expected an integer (int32), got 1.5");
    expect(errorOf({ max_batch_size: 2 ** 31 })).toMatch(
      /^cfg: max_batch_size: integer 2147483648 out of range for int32/,
    );
    expect(errorOf({ input: [{ name: "x", dims: "3" }] })).toBe(
      "cfg: input[0].dims: expected an array (a repeated field)",
    );
    expect(errorOf({ dynamic_batching: { priority_queue_policy: { one: {} } } })).toMatch(
      /priority_queue_policy\["one"\]: map key must be an integer/,
    );
    expect(errorOf({ name: "\ud800" })).toMatch(/^cfg: name: string holds an unpaired UTF-16 surrogate/);
    expect(errorOf([])).toBe("cfg: <root>: expected an object (inference.ModelConfig)");
  });
});
