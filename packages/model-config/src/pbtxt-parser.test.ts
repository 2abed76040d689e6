import { describe, it, expect } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { parsePbtxt } from "./pbtxt-parser.js";

const SOURCE = "models/m/config.pbtxt";

function parse(text: string): Record<string, unknown> {
  return parsePbtxt(text, SOURCE) as Record<string, unknown>;
}

/** The error message of a parse that must fail (asserting kind INVALID_ARG). */
function errorOf(text: string): string {
  try {
    parsePbtxt(text, SOURCE);
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected the parse to fail");
}

describe("parsePbtxt: realistic configs", () => {
  it("parses a full ONNX config with batching, priorities, warmup and maps", () => {
    const text = `
# A realistic image classifier config
name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
instance_group [
  { name: "cpu_pool" count: 2 kind: KIND_CPU },
  { count: 1 kind: KIND_GPU gpus: [ 0, 1 ] }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  preserve_ordering: true
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 1000 max_queue_size: 16 }
  priority_queue_policy {
    key: 1
    value: { timeout_action: DELAY allow_timeout_override: true }
  }
  priority_queue_policy { key: 2 value { max_queue_size: 4 } }
}
parameters { key: "intra_op_thread_count" value { string_value: "2" } }
parameters: { key: "execution_mode" value: { string_value: "0" } }
model_warmup [
  {
    name: "zeros"
    batch_size: 2
    count: 3
    inputs { key: "data_0" value { data_type: TYPE_FP32 dims: [3, 224, 224] zero_data: true } }
  }
]
response_cache { enable: true }
model_transaction_policy { decoupled: false }
optimization { graph { level: 1 } input_pinned_memory { enable: false } eager_batching: true }
`;
    expect(parse(text)).toEqual({
      name: "densenet_onnx",
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      version_policy: { specific: { versions: [1, 3] } },
      input: [
        {
          name: "data_0",
          data_type: "TYPE_FP32",
          format: "FORMAT_NCHW",
          dims: [3, 224, 224],
          reshape: { shape: [1, 3, 224, 224] },
        },
      ],
      output: [
        {
          name: "fc6_1",
          data_type: "TYPE_FP32",
          dims: [1000],
          reshape: { shape: [1, 1000, 1, 1] },
          label_filename: "densenet_labels.txt",
        },
      ],
      instance_group: [
        { name: "cpu_pool", count: 2, kind: "KIND_CPU" },
        { count: 1, kind: "KIND_GPU", gpus: [0, 1] },
      ],
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        preserve_ordering: true,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: { timeout_action: "REJECT", default_timeout_microseconds: 1000, max_queue_size: 16 },
        priority_queue_policy: {
          "1": { timeout_action: "DELAY", allow_timeout_override: true },
          "2": { max_queue_size: 4 },
        },
      },
      parameters: {
        intra_op_thread_count: { string_value: "2" },
        execution_mode: { string_value: "0" },
      },
      model_warmup: [
        {
          name: "zeros",
          batch_size: 2,
          count: 3,
          inputs: { data_0: { data_type: "TYPE_FP32", dims: [3, 224, 224], zero_data: true } },
        },
      ],
      response_cache: { enable: true },
      model_transaction_policy: { decoupled: false },
      optimization: { graph: { level: 1 }, input_pinned_memory: { enable: false }, eager_batching: true },
    });
  });

  it("parses an ensemble with input_map / output_map", () => {
    const text = `
name: "pipeline"
platform: "ensemble"
max_batch_size: 4
input [ { name: "RAW" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "SCORES" data_type: TYPE_FP32 dims: [ 10 ] } ]
ensemble_scheduling {
  step [
    {
      model_name: "preprocess"
      model_version: -1
      input_map { key: "INPUT" value: "RAW" }
      output_map { key: "OUTPUT" value: "pixels" }
    },
    {
      model_name: "classifier"
      model_version: 2
      input_map { key: "data" value: "pixels" }
      input_map { key: "mask" value: "pixels" }
      output_map { key: "prob" value: "SCORES" }
    }
  ]
}
`;
    expect(parse(text)).toEqual({
      name: "pipeline",
      platform: "ensemble",
      max_batch_size: 4,
      input: [{ name: "RAW", data_type: "TYPE_STRING", dims: [1] }],
      output: [{ name: "SCORES", data_type: "TYPE_FP32", dims: [10] }],
      ensemble_scheduling: {
        step: [
          {
            model_name: "preprocess",
            model_version: -1,
            input_map: { INPUT: "RAW" },
            output_map: { OUTPUT: "pixels" },
          },
          {
            model_name: "classifier",
            model_version: 2,
            input_map: { data: "pixels", mask: "pixels" },
            output_map: { prob: "SCORES" },
          },
        ],
      },
    });
  });

  it("parses sequence batching with controls, state and a strategy", () => {
    const text = `
max_batch_size: 2
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [2] }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
  ]
  state { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ -1 ]
          initial_state { name: "init" data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } }
  iterative_sequence: false
}
`;
    expect(parse(text)).toEqual({
      max_batch_size: 2,
      sequence_batching: {
        max_sequence_idle_microseconds: 5000000,
        oldest: { max_candidate_sequences: 4, preferred_batch_size: [2] },
        control_input: [
          { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", fp32_false_true: [0, 1] }] },
          { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
        ],
        state: [
          {
            input_name: "h_in",
            output_name: "h_out",
            data_type: "TYPE_FP32",
            dims: [-1],
            initial_state: [{ name: "init", data_type: "TYPE_FP32", dims: [1], zero_data: true }],
          },
        ],
        iterative_sequence: false,
      },
    });
  });

  it("returns only the fields the text sets (empty text -> empty object)", () => {
    expect(parse("")).toEqual({});
    expect(parse("# only a comment\n")).toEqual({});
    expect(parse("max_batch_size: 0")).toEqual({ max_batch_size: 0 });
  });
});

describe("parsePbtxt: syntax variants", () => {
  it("accepts ':' before a message and both '{}' and '<>' blocks", () => {
    const expected = { response_cache: { enable: true } };
    expect(parse("response_cache { enable: true }")).toEqual(expected);
    expect(parse("response_cache: { enable: true }")).toEqual(expected);
    expect(parse("response_cache < enable: true >")).toEqual(expected);
    expect(parse("response_cache: < enable: true >")).toEqual(expected);
  });

  it("accepts repeated scalars as occurrences and as lists, mixed", () => {
    expect(parse("input { name: 'a' dims: 1 dims: 2 dims: [3, 4] dims: [] }")).toEqual({
      input: [{ name: "a", dims: [1, 2, 3, 4] }],
    });
  });

  it("accepts repeated messages as blocks and as lists", () => {
    const expected = { input: [{ name: "a" }, { name: "b" }, { name: "c" }] };
    expect(parse('input { name: "a" } input { name: "b" } input { name: "c" }')).toEqual(expected);
    expect(parse('input [ { name: "a" }, { name: "b" } ] input: [ < name: "c" > ]')).toEqual(expected);
    expect(parse("input []")).toEqual({ input: [] });
  });

  it("accepts map entries as blocks and as lists; a repeated key keeps the last value", () => {
    expect(
      parse('metric_tags { key: "a" value: "1" } metric_tags: [ { key: "b" value: "2" }, { key: "a" value: "3" } ]'),
    ).toEqual({
      metric_tags: { a: "3", b: "2" },
    });
  });

  it("fills a map entry's missing key or value with proto defaults", () => {
    expect(parse('parameters { key: "k" }')).toEqual({ parameters: { k: {} } });
    expect(parse('metric_tags { value: "v" }')).toEqual({ metric_tags: { "": "v" } });
  });

  it("keeps user map keys like __proto__ as plain own keys", () => {
    const config = parse('metric_tags { key: "__proto__" value: "x" }');
    const tags = config.metric_tags as Record<string, unknown>;
    expect(Object.keys(tags)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(tags)).toBe(Object.prototype);
  });

  it("accepts enums by name and by number", () => {
    expect(parse("input { data_type: TYPE_INT64 } input { data_type: 11 }")).toEqual({
      input: [{ data_type: "TYPE_INT64" }, { data_type: "TYPE_FP32" }],
    });
  });

  it("decodes single/double quoted strings, C escapes and adjacent literals", () => {
    expect(parse(`name: 'it\\'s' platform: "a\\"b"`)).toEqual({ name: "it's", platform: 'a"b' });
    expect(parse(String.raw`name: "\n\t\r\\\a\b\f\v\?"`)).toEqual({ name: "\n\t\r\\\x07\b\f\v?" });
    expect(parse(String.raw`name: "\x41\101\u00e9\U0001F600"`)).toEqual({ name: "AAé😀" });
    expect(parse(String.raw`name: "\303\251"`)).toEqual({ name: "é" });
    expect(parse(`name: "multi" 'part'\n  "name"`)).toEqual({ name: "multipartname" });
    expect(parse(`name: "héllo #not a comment"`)).toEqual({ name: "héllo #not a comment" });
  });

  it("skips # comments anywhere", () => {
    expect(parse("# head\nmax_batch_size: # why\n 4 # tail\n# end")).toEqual({ max_batch_size: 4 });
  });

  it("accepts optional ',' or ';' after fields", () => {
    expect(parse('name: "m", max_batch_size: 1; input { name: "a"; dims: 1, }')).toEqual({
      name: "m",
      max_batch_size: 1,
      input: [{ name: "a", dims: [1] }],
    });
  });

  it("reads integers: negative, hex, int64 and uint64", () => {
    expect(parse("input { dims: [-1, 0x10, 0, 7] }")).toEqual({ input: [{ dims: [-1, 16, 0, 7] }] });
    expect(parse("max_batch_size: -0x7fffffff")).toEqual({ max_batch_size: -2147483647 });
    expect(parse("max_batch_size: 2147483647")).toEqual({ max_batch_size: 2147483647 });
    expect(parse("dynamic_batching { max_queue_delay_microseconds: 18446744073709551615 }")).toEqual({
      dynamic_batching: { max_queue_delay_microseconds: 18446744073709551615 },
    });
    expect(parse("input { dims: -9223372036854775808 }")).toEqual({ input: [{ dims: [-9223372036854775808] }] });
  });

  it("reads floats: decimals, exponents, f suffix, integers, inf and nan", () => {
    const floats = (text: string): unknown =>
      (parse(`sequence_batching { control_input { control { fp32_false_true: [${text}] } } }`) as any).sequence_batching
        .control_input[0].control[0].fp32_false_true;
    expect(floats("1.5, -2, .5, 1e3, 2.5E-1, 3f, 1.0F, 0x10")).toEqual([1.5, -2, 0.5, 1000, 0.25, 3, 1, 16]);
    expect(floats("inf, -inf, Infinity, -INF, infF")).toEqual([Infinity, -Infinity, Infinity, -Infinity, Infinity]);
    const [nan, negNan] = floats("nan, -NaN") as number[];
    expect(nan).toBeNaN();
    expect(negNan).toBeNaN();
  });

  it("reads bools: true/false/True/False/t/f/1/0", () => {
    const bools = (text: string): unknown =>
      (parse(`sequence_batching { control_input { control { bool_false_true: [${text}] } } }`) as any).sequence_batching
        .control_input[0].control[0].bool_false_true;
    expect(bools("true, false, True, False, t, f, 1, 0")).toEqual([true, false, true, false, true, false, true, false]);
  });

  it("keeps a oneof member alone (version_policy latest / all)", () => {
    expect(parse("version_policy { all {} }")).toEqual({ version_policy: { all: {} } });
    expect(parse("version_policy { latest { num_versions: 2 } }")).toEqual({
      version_policy: { latest: { num_versions: 2 } },
    });
  });

  it("handles CRLF line endings and tabs", () => {
    expect(parse('name: "m"\r\n\tmax_batch_size: 2\r\n')).toEqual({ name: "m", max_batch_size: 2 });
  });
});

describe("parsePbtxt: errors carry source:line:col", () => {
  it("reads ModelEnsembling's field 2 under both of its names", () => {
    for (const written of ["max_inflight_requests", "max_inflight_responses"]) {
      const config = parsePbtxt(
        `platform: "ensemble"\nensemble_scheduling { ${written}: 4 step [ { model_name: "m" } ] }`,
        "cfg",
      );
      expect(config.ensemble_scheduling).toMatchObject({ max_inflight_responses: 4 });
    }
  });

  it("unknown field, naming field and message type", () => {
    expect(errorOf('name: "m"\nmax_batch: 4')).toBe(
      `${SOURCE}:2:1: unknown field 'max_batch' in inference.ModelConfig`,
    );
    expect(errorOf("input {\n  name: 'a'\n  dim: [1]\n}")).toBe(
      `${SOURCE}:3:3: unknown field 'dim' in inference.ModelInput`,
    );
    expect(errorOf('parameters { key: "a" val { } }')).toBe(
      `${SOURCE}:1:23: unknown field 'val' in inference.ModelConfig.ParametersEntry`,
    );
  });

  it("unknown enum value (by name and by number)", () => {
    expect(errorOf("input { data_type: TYPE_FLOAT }")).toBe(
      `${SOURCE}:1:20: unknown value 'TYPE_FLOAT' for enum inference.DataType (field 'data_type')`,
    );
    expect(errorOf("instance_group { kind: 7 }")).toBe(
      `${SOURCE}:1:24: unknown value 7 for enum inference.ModelInstanceGroup.Kind (field 'kind')`,
    );
  });

  it("wrong value kinds", () => {
    expect(errorOf('max_batch_size: "4"')).toBe(
      `${SOURCE}:1:17: field 'max_batch_size' of inference.ModelConfig expects int32, got string "4"`,
    );
    expect(errorOf("max_batch_size { }")).toBe(
      `${SOURCE}:1:16: field 'max_batch_size' of inference.ModelConfig expects int32, got '{'`,
    );
    expect(errorOf("name: model")).toBe(
      `${SOURCE}:1:7: field 'name' of inference.ModelConfig expects string, got 'model'`,
    );
    expect(errorOf("response_cache: true")).toBe(
      `${SOURCE}:1:17: field 'response_cache' of inference.ModelConfig expects a message (inference.ModelResponseCache), got 'true'`,
    );
    expect(errorOf('parameters: "x"')).toBe(
      `${SOURCE}:1:13: field 'parameters' of inference.ModelConfig is a map; expected an entry '{ key: ... value: ... }', got string "x"`,
    );
    expect(errorOf("response_cache { enable: yes }")).toBe(
      `${SOURCE}:1:26: field 'enable' of inference.ModelResponseCache expects bool, got 'yes'`,
    );
    expect(errorOf("input { data_type: 'TYPE_FP32' }")).toBe(
      `${SOURCE}:1:20: field 'data_type' of inference.ModelInput expects inference.DataType, got string 'TYPE_FP32'`,
    );
    expect(errorOf("max_batch_size: 1.5")).toBe(
      `${SOURCE}:1:17: field 'max_batch_size' of inference.ModelConfig expects an integer (int32), got number 1.5`,
    );
    expect(errorOf("max_batch_size: [1]")).toBe(
      `${SOURCE}:1:17: field 'max_batch_size' of inference.ModelConfig is not repeated; a list '[...]' is not allowed`,
    );
    expect(errorOf("max_batch_size 4")).toBe(`${SOURCE}:1:16: expected ':' after field 'max_batch_size', got number 4`);
    expect(errorOf("max_batch_size: -x")).toBe(`${SOURCE}:1:18: expected a number after '-', got 'x'`);
  });

  it("integers out of range for their type", () => {
    expect(errorOf("max_batch_size: 2147483648")).toBe(
      `${SOURCE}:1:17: integer 2147483648 out of range for int32 [-2147483648, 2147483647] (field 'max_batch_size')`,
    );
    expect(errorOf("\n  instance_group { rate_limiter { priority: -1 } }")).toBe(
      `${SOURCE}:2:45: integer -1 out of range for uint32 [0, 4294967295] (field 'priority')`,
    );
    expect(errorOf("input { dims: 9223372036854775808 }")).toBe(
      `${SOURCE}:1:15: integer 9223372036854775808 out of range for int64 [-9223372036854775808, 9223372036854775807] (field 'dims')`,
    );
    expect(errorOf("dynamic_batching { priority_queue_policy { key: -1 } }")).toBe(
      `${SOURCE}:1:49: integer -1 out of range for uint64 [0, 18446744073709551615] (field 'key')`,
    );
    expect(errorOf("max_batch_size: 010")).toBe(`${SOURCE}:1:17: octal integer '010' is not supported`);
  });

  it("duplicate non-repeated field", () => {
    expect(errorOf('name: "a"\nname: "b"')).toBe(`${SOURCE}:2:1: duplicate field 'name' in inference.ModelConfig`);
    expect(errorOf("input { name: 'a' name: 'b' }")).toBe(
      `${SOURCE}:1:19: duplicate field 'name' in inference.ModelInput`,
    );
    expect(errorOf('parameters { key: "a" key: "b" }')).toBe(
      `${SOURCE}:1:23: duplicate field 'key' in inference.ModelConfig.ParametersEntry`,
    );
  });

  it("two members of one oneof", () => {
    expect(errorOf("max_batch_size: 1\ndynamic_batching {}\nsequence_batching {}")).toBe(
      `${SOURCE}:3:1: field 'sequence_batching' conflicts with 'dynamic_batching': both are in oneof 'scheduling_choice' of inference.ModelConfig`,
    );
    expect(errorOf("model_warmup { inputs { key: 'x' value { zero_data: true random_data: true } } }")).toBe(
      `${SOURCE}:1:58: field 'random_data' conflicts with 'zero_data': both are in oneof 'input_data_type' of inference.ModelWarmup.Input`,
    );
  });

  it("unexpected tokens", () => {
    expect(errorOf("}")).toBe(`${SOURCE}:1:1: expected a field name, got '}'`);
    expect(errorOf('name: "m" 42')).toBe(`${SOURCE}:1:11: expected a field name, got number 42`);
    expect(errorOf("input { name: 'a' >")).toBe(`${SOURCE}:1:19: expected a field name or '}', got '>'`);
    expect(errorOf("input [ { name: 'a' } { name: 'b' } ]")).toBe(
      `${SOURCE}:1:23: expected ',' or ']' in the list of 'input', got '{'`,
    );
    expect(errorOf("input { dims: [1, 2 }")).toBe(`${SOURCE}:1:21: expected ',' or ']' in the list of 'dims', got '}'`);
    expect(errorOf("name: @")).toBe(`${SOURCE}:1:7: unexpected character '@'`);
    expect(errorOf("max_batch_size: 12ab")).toBe(`${SOURCE}:1:17: invalid number '12ab'`);
    expect(errorOf("[ext.field]: 1")).toBe(`${SOURCE}:1:1: expected a field name, got '['`);
  });

  it("unterminated strings and bad escapes", () => {
    expect(errorOf('name: "abc\nplatform: "x"')).toBe(`${SOURCE}:1:7: unterminated string`);
    expect(errorOf("\n\n  name: 'abc")).toBe(`${SOURCE}:3:9: unterminated string`);
    expect(errorOf('name: "a\\qb"')).toBe(`${SOURCE}:1:9: invalid escape sequence '\\q'`);
    expect(errorOf('name: "\\777"')).toBe(`${SOURCE}:1:8: octal escape '\\777' out of range`);
  });

  it("unbalanced braces and unexpected end of input", () => {
    expect(errorOf("input {\n  name: 'a'\n")).toBe(
      `${SOURCE}:3:1: unexpected end of input: missing '}' to close '{' opened at 1:7`,
    );
    expect(errorOf("input < name: 'a'")).toBe(
      `${SOURCE}:1:18: unexpected end of input: missing '>' to close '<' opened at 1:7`,
    );
    expect(errorOf("input { name: 'a' } }")).toBe(`${SOURCE}:1:21: expected a field name, got '}'`);
    expect(errorOf("name:")).toBe(
      `${SOURCE}:1:6: field 'name' of inference.ModelConfig expects string, got end of input`,
    );
    expect(errorOf("input [ { name: 'a' }")).toBe(
      `${SOURCE}:1:22: expected ',' or ']' in the list of 'input', got end of input`,
    );
    expect(errorOf("max_batch_size: -")).toBe(`${SOURCE}:1:18: expected a number after '-', got end of input`);
  });

  it("reports the first error in the file, even when a later one is lexical", () => {
    expect(errorOf("bogus: 1\nname: 'unterminated")).toBe(
      `${SOURCE}:1:1: unknown field 'bogus' in inference.ModelConfig`,
    );
  });
});
