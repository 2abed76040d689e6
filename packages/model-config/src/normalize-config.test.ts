import { describe, it, expect } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "./model-config-types.js";
import { normalizeConfig, validateConfig } from "./normalize-config.js";
import { parsePbtxt } from "./pbtxt-parser.js";

function validationError(config: ModelConfigJson): string {
  try {
    validateConfig(config, "cfg");
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected validation to fail");
}

/** A valid normalized batching model to break one field at a time. */
function base(extra: ModelConfigJson = {}): ModelConfigJson {
  return normalizeConfig(
    {
      max_batch_size: 8,
      backend: "onnxruntime",
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      output: [{ name: "y", data_type: "TYPE_FP32", dims: [-1] }],
      ...extra,
    },
    { modelName: "m" },
  );
}

describe("normalizeConfig", () => {
  it("fills Triton's defaults for a minimal ONNX config", () => {
    const raw = parsePbtxt(
      'platform: "onnxruntime_onnx"\ninput { name: "x" data_type: TYPE_FP32 }\noutput { name: "y" data_type: TYPE_FP32 dims: 2 }',
      "c",
    );
    expect(normalizeConfig(raw, { modelName: "simple" })).toEqual({
      name: "simple",
      platform: "onnxruntime_onnx",
      backend: "onnxruntime",
      runtime: "",
      default_model_filename: "model.onnx",
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 0,
      input: [
        {
          name: "x",
          data_type: "TYPE_FP32",
          format: "FORMAT_NONE",
          dims: [],
          is_shape_tensor: false,
          allow_ragged_batch: false,
          optional: false,
          is_non_linear_format_io: false,
        },
      ],
      output: [
        {
          name: "y",
          data_type: "TYPE_FP32",
          dims: [2],
          label_filename: "",
          is_shape_tensor: false,
          is_non_linear_format_io: false,
        },
      ],
      batch_input: [],
      batch_output: [],
      instance_group: [
        {
          name: "simple",
          kind: "KIND_CPU",
          count: 1,
          gpus: [],
          secondary_devices: [],
          profile: [],
          passive: false,
          host_policy: "",
        },
      ],
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
      optimization: {
        priority: "PRIORITY_DEFAULT",
        input_pinned_memory: { enable: true },
        output_pinned_memory: { enable: true },
        gather_kernel_buffer_threshold: 0,
        eager_batching: false,
      },
    });
    expect(raw.name).toBeUndefined(); // the input is not mutated
  });

  it("fills platform from backend and the backend from defaultBackend", () => {
    expect(normalizeConfig({ backend: "onnxruntime" }, { modelName: "m" })).toMatchObject({
      platform: "onnxruntime_onnx",
    });
    expect(normalizeConfig({}, { modelName: "m", defaultBackend: "onnxruntime" })).toMatchObject({
      backend: "onnxruntime",
      platform: "onnxruntime_onnx",
      default_model_filename: "model.onnx",
    });
    expect(normalizeConfig({ backend: "python" }, { modelName: "m" })).toMatchObject({
      backend: "python",
      platform: "",
      default_model_filename: "",
    });
    expect(
      normalizeConfig({ backend: "onnxruntime", default_model_filename: "net.onnx" }, { modelName: "m" })
        .default_model_filename,
    ).toBe("net.onnx");
  });

  it("rejects a platform/backend mismatch and a name different from the directory", () => {
    expect(() => normalizeConfig({ platform: "onnxruntime_onnx", backend: "python" }, { modelName: "m" })).toThrow(
      "m: backend: platform 'onnxruntime_onnx' requires backend 'onnxruntime', got 'python'",
    );
    expect(() => normalizeConfig({ name: "other" }, { modelName: "m", source: "repo/m/config.pbtxt" })).toThrow(
      "repo/m/config.pbtxt: name: model configuration name 'other' does not match the model directory name 'm'",
    );
    expect(normalizeConfig({ name: "m" }, { modelName: "m" }).name).toBe("m");
  });

  it("completes instance groups: names, count 1, KIND_AUTO -> KIND_CPU, KIND_GPU kept", () => {
    const config = normalizeConfig(
      { instance_group: [{ count: 2 }, { kind: "KIND_AUTO", name: "pool" }, { kind: "KIND_GPU", gpus: [0] }] },
      { modelName: "m" },
    );
    expect(config.instance_group!.map((g) => [g.name, g.kind, g.count, g.gpus])).toEqual([
      ["m_0", "KIND_CPU", 2, []],
      ["pool", "KIND_CPU", 1, []],
      ["m_2", "KIND_GPU", 1, [0]],
    ]);
  });

  it("gives ensembles no instance group and no default backend", () => {
    const config = normalizeConfig(
      { platform: "ensemble", ensemble_scheduling: { step: [{ model_name: "a" }] } },
      { modelName: "e", defaultBackend: "onnxruntime" },
    );
    expect(config.instance_group).toBeUndefined();
    expect(config.backend).toBe("");
  });

  it("fills dynamic batching defaults and keeps given values", () => {
    expect(
      normalizeConfig({ dynamic_batching: { max_queue_delay_microseconds: 10 } }, { modelName: "m" }).dynamic_batching,
    ).toEqual({
      preferred_batch_size: [],
      max_queue_delay_microseconds: 10,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
  });
});

describe("validateConfig", () => {
  it("accepts valid configs", () => {
    expect(() => validateConfig(base(), "cfg")).not.toThrow();
    expect(() =>
      validateConfig(
        base({
          input: [{ name: "x", data_type: "TYPE_FP32", dims: [2, -1], reshape: { shape: [-1, 2] } }],
          dynamic_batching: {
            preferred_batch_size: [4, 8],
            priority_levels: 3,
            default_priority_level: 2,
            priority_queue_policy: { "1": {}, "3": {} },
          },
          version_policy: { specific: { versions: [1, 2] } },
          model_warmup: [{ batch_size: 8 }],
        }),
        "cfg",
      ),
    ).not.toThrow();
    expect(() =>
      validateConfig(
        base({ input: [{ name: "x", data_type: "TYPE_FP32", dims: [1], reshape: { shape: [] } }] }),
        "cfg",
      ),
    ).not.toThrow();
  });

  it("max_batch_size and dims", () => {
    expect(validationError(base({ max_batch_size: -1 }))).toBe("cfg: max_batch_size: must be >= 0, got -1");
    expect(validationError(base({ input: [{ name: "x", data_type: "TYPE_FP32", dims: [3, 0] }] }))).toBe(
      "cfg: input[0].dims[1]: dimension must be > 0 or -1, got 0",
    );
    expect(validationError(base({ output: [{ name: "y", data_type: "TYPE_FP32", dims: [-2] }] }))).toBe(
      "cfg: output[0].dims[0]: dimension must be > 0 or -1, got -2",
    );
  });

  it("data types and tensor names", () => {
    expect(validationError(base({ input: [{ name: "x", dims: [1] }] }))).toBe(
      "cfg: input[0].data_type: input 'x' must set a data_type other than TYPE_INVALID",
    );
    expect(validationError(base({ output: [{ name: "y", data_type: "TYPE_INVALID" }] }))).toBe(
      "cfg: output[0].data_type: output 'y' must set a data_type other than TYPE_INVALID",
    );
    expect(validationError(base({ input: [{ name: "", data_type: "TYPE_FP32" }] }))).toBe(
      "cfg: input[0].name: input name must not be empty",
    );
    expect(
      validationError(
        base({
          input: [
            { name: "x", data_type: "TYPE_FP32" },
            { name: "x", data_type: "TYPE_INT32" },
          ],
        }),
      ),
    ).toBe("cfg: input[1].name: duplicate input name 'x'");
  });

  it("reshape element counts", () => {
    expect(
      validationError(base({ input: [{ name: "x", data_type: "TYPE_FP32", dims: [2, 3], reshape: { shape: [5] } }] })),
    ).toBe("cfg: input[0].reshape: reshape [5] has 5 elements but dims [2,3] have 6");
    expect(
      validationError(base({ output: [{ name: "y", data_type: "TYPE_FP32", dims: [2], reshape: { shape: [0] } }] })),
    ).toBe("cfg: output[0].reshape.shape[0]: dimension must be > 0 or -1, got 0");
  });

  it("batching schedulers need max_batch_size > 0; preferred sizes within it", () => {
    expect(validationError(base({ max_batch_size: 0, dynamic_batching: {} }))).toBe(
      "cfg: dynamic_batching: dynamic batching requires max_batch_size > 0",
    );
    // Triton serves sequence models without batching (its *_nobatch_sequence_* models): one row per execution.
    expect(() => validateConfig(base({ max_batch_size: 0, sequence_batching: {} }), "cfg")).not.toThrow();
    expect(
      validationError(
        base({
          input: [{ name: "START", data_type: "TYPE_INT32", dims: [1] }],
          sequence_batching: { control_input: [{ name: "START", control: [{ kind: "CONTROL_SEQUENCE_START" }] }] },
        }),
      ),
    ).toBe(
      "cfg: input: 'START' is a control or state input of sequence_batching: the server feeds it, so it must not be listed in input",
    );
    expect(validationError(base({ dynamic_batching: { preferred_batch_size: [4, 16] } }))).toBe(
      "cfg: dynamic_batching.preferred_batch_size[1]: preferred batch size 16 exceeds max_batch_size 8",
    );
    expect(validationError(base({ dynamic_batching: { preferred_batch_size: [0] } }))).toBe(
      "cfg: dynamic_batching.preferred_batch_size[0]: preferred batch size must be > 0, got 0",
    );
    expect(validationError(base({ dynamic_batching: { max_queue_delay_microseconds: -5 } }))).toBe(
      "cfg: dynamic_batching.max_queue_delay_microseconds: must be >= 0, got -5",
    );
    expect(validationError(base({ sequence_batching: { oldest: { preferred_batch_size: [9] } } }))).toBe(
      "cfg: sequence_batching.oldest.preferred_batch_size[0]: preferred batch size 9 exceeds max_batch_size 8",
    );
  });

  it("priority levels", () => {
    expect(validationError(base({ dynamic_batching: { priority_levels: 2, default_priority_level: 3 } }))).toBe(
      "cfg: dynamic_batching.default_priority_level: must be in [1, 2] (priority_levels), got 3",
    );
    expect(validationError(base({ dynamic_batching: { priority_levels: 2 } }))).toBe(
      "cfg: dynamic_batching.default_priority_level: must be in [1, 2] (priority_levels), got 0",
    );
    expect(validationError(base({ dynamic_batching: { default_priority_level: 1 } }))).toBe(
      "cfg: dynamic_batching.default_priority_level: is 1 but priority_levels is 0",
    );
    expect(
      validationError(
        base({
          dynamic_batching: { priority_levels: 2, default_priority_level: 1, priority_queue_policy: { "3": {} } },
        }),
      ),
    ).toBe("cfg: dynamic_batching.priority_queue_policy[3]: priority level must be in [1, 2] (priority_levels), got 3");
    expect(validationError(base({ dynamic_batching: { priority_queue_policy: { "1": {} } } }))).toBe(
      "cfg: dynamic_batching.priority_queue_policy[1]: priority level must be in [1, 0] (priority_levels), got 1",
    );
  });

  it("instance groups and version policy", () => {
    expect(validationError(base({ instance_group: [{ count: -1 }] }))).toBe(
      "cfg: instance_group[0].count: must be >= 1, got -1",
    );
    expect(validationError(base({ version_policy: { specific: { versions: [1, 0] } } }))).toBe(
      "cfg: version_policy.specific.versions[1]: version must be >= 1, got 0",
    );
    expect(validationError(base({ version_policy: { latest: {} } }))).toBe(
      "cfg: version_policy.latest.num_versions: must be >= 1, got 0",
    );
  });

  it("ensembles", () => {
    const ensemble = (extra: ModelConfigJson): ModelConfigJson =>
      normalizeConfig(
        {
          platform: "ensemble",
          max_batch_size: 1,
          input: [{ name: "x", data_type: "TYPE_FP32", dims: [1] }],
          output: [{ name: "y", data_type: "TYPE_FP32", dims: [1] }],
          ensemble_scheduling: { step: [{ model_name: "a", input_map: { in: "x" }, output_map: { out: "y" } }] },
          ...extra,
        },
        { modelName: "e" },
      );
    expect(() => validateConfig(ensemble({}), "cfg")).not.toThrow();
    expect(validationError(ensemble({ platform: "onnxruntime_onnx" }))).toBe(
      "cfg: platform: ensemble_scheduling requires platform 'ensemble', got 'onnxruntime_onnx'",
    );
    expect(validationError(ensemble({ ensemble_scheduling: { step: [] } }))).toBe(
      "cfg: ensemble_scheduling.step: an ensemble needs at least one step",
    );
    expect(
      validationError(ensemble({ ensemble_scheduling: { step: [{ model_name: "a" }, { model_version: 1 }] } })),
    ).toBe("cfg: ensemble_scheduling.step[1].model_name: must not be empty");
    expect(validationError(ensemble({ instance_group: [{ count: 1 }] }))).toBe(
      "cfg: instance_group: ensemble models take no instance_group",
    );
    expect(validationError(base({ platform: "ensemble", backend: "" }))).toBe(
      "cfg: ensemble_scheduling: platform 'ensemble' requires ensemble_scheduling",
    );
  });

  it("warmup batch size", () => {
    expect(validationError(base({ model_warmup: [{ batch_size: 9 }] }))).toBe(
      "cfg: model_warmup[0].batch_size: must be in [1, 8] (max(max_batch_size, 1)), got 9",
    );
    expect(validationError(base({ max_batch_size: 0, model_warmup: [{ name: "w", batch_size: 2 }] }))).toBe(
      "cfg: model_warmup[0].batch_size: must be in [1, 1] (max(max_batch_size, 1)), got 2",
    );
    expect(() => validateConfig(base({ max_batch_size: 0, model_warmup: [{ batch_size: 1 }] }), "cfg")).not.toThrow();
  });

  it("response cache and decoupled models exclude each other", () => {
    expect(
      validationError(base({ response_cache: { enable: true }, model_transaction_policy: { decoupled: true } })),
    ).toBe(
      "cfg: response_cache: response cache is not supported for decoupled models (model_transaction_policy { decoupled: true }); disable response_cache or decoupled",
    );
    expect(() => validateConfig(base({ response_cache: { enable: true } }), "cfg")).not.toThrow();
    expect(() =>
      validateConfig(base({ response_cache: { enable: true }, model_transaction_policy: { decoupled: false } }), "cfg"),
    ).not.toThrow();
    expect(() =>
      validateConfig(base({ response_cache: { enable: false }, model_transaction_policy: { decoupled: true } }), "cfg"),
    ).not.toThrow();
  });
});
