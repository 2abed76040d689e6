import { describe, expect, it } from "vitest";
import type { ModelConfigJson } from "./model-config-types.js";
import { parsePbtxt } from "./pbtxt-parser.js";
import { unimplementedConfigFields } from "./unimplemented-fields.js";

const paths = (text: string, nativeBackend = false): string[] =>
  unimplementedConfigFields(parsePbtxt(text) as ModelConfigJson, { nativeBackend }).map((field) => field.path);

describe("unimplementedConfigFields", () => {
  it("names every field Operon parses but does not implement, where it is set", () => {
    expect(
      paths(`name: "m"
optimization { execution_accelerators { cpu_execution_accelerator [ { name: "openvino" } ] } }
input [ { name: "a", data_type: TYPE_FP32, dims: [ 1 ], allow_ragged_batch: true }, { name: "b", data_type: TYPE_FP32, dims: [ 1 ] } ]
batch_input [ { kind: BATCH_ELEMENT_COUNT, target_name: "n", data_type: TYPE_FP32, source_input: "a" } ]
instance_group [ { count: 1 }, { count: 2, rate_limiter { resources [ { name: "R", count: 1 } ] } } ]
metric_tags { key: "team" value: "a" }`),
    ).toEqual([
      "optimization",
      "batch_input",
      "metric_tags",
      "input[0].allow_ragged_batch",
      "instance_group[1].rate_limiter",
    ]);
  });

  it("says what the field is and that it has no effect", () => {
    const [field] = unimplementedConfigFields(
      parsePbtxt(`name: "m" instance_group [ { rate_limiter { priority: 2 } } ]`) as ModelConfigJson,
      { nativeBackend: false },
    );
    expect(field!.message).toBe(
      "instance_group[0].rate_limiter: the rate limiter (resources and priority per instance) is not implemented by Operon; the setting has no effect",
    );
  });

  it("reports nothing for a config of implemented fields, explicit defaults included", () => {
    expect(
      paths(`name: "m"
max_batch_size: 8
input [ { name: "a", data_type: TYPE_FP32, dims: [ 1 ], allow_ragged_batch: false } ]
dynamic_batching { max_queue_delay_microseconds: 100 }
instance_group [ { count: 2, kind: KIND_CPU, passive: false } ]
parameters { key: "x" value: { string_value: "y" } }`),
    ).toEqual([]);
  });

  it("leaves optimization to native backends, which read their config themselves", () => {
    expect(paths(`name: "m" optimization { priority: PRIORITY_MAX }`, true)).toEqual([]);
  });
});
