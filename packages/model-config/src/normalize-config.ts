/**
 * Triton's model-config defaults and semantic checks.
 *
 * normalizeConfig() fills what Triton fills before serving a config, so the
 * JSON from the config endpoint has the same fields Triton's has (proto3
 * defaults printed: empty lists, false flags, FORMAT_NONE...). It runs after
 * auto-completion (which must still see which fields the file left unset)
 * and before validateConfig(). Neither function mutates its argument.
 *
 * Operon has no GPU execution path yet: KIND_AUTO instance groups become
 * KIND_CPU, KIND_GPU is kept as the user asked (the loader decides).
 */
import { sequenceTensorNames } from "./auto-complete.js";
import { elementCount } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type {
  ModelConfigJson,
  ModelDynamicBatchingJson,
  ModelInputJson,
  ModelInstanceGroupJson,
  ModelOptimizationPolicyJson,
  ModelOutputJson,
} from "./model-config-types.js";

/** Most dynamic_batching.priority_levels a model may have. */
export const MAX_PRIORITY_LEVELS = 1000;

export interface NormalizeOptions {
  /** The model's directory name; the config's name must match it (or be empty). */
  modelName: string;
  /** Backend for configs that name neither platform nor backend. */
  defaultBackend?: string;
  /** Prefix for error messages (e.g. the config file path); defaults to the model name. */
  source?: string;
}

/** Platform name <-> backend name pairs that Triton treats as the same thing. */
const PLATFORM_BACKENDS: readonly (readonly [platform: string, backend: string])[] = [
  ["onnxruntime_onnx", "onnxruntime"],
];

const DEFAULT_MODEL_FILENAMES: Record<string, string> = { onnxruntime: "model.onnx" };

export function normalizeConfig(config: ModelConfigJson, options: NormalizeOptions): ModelConfigJson {
  const { modelName } = options;
  const source = options.source ?? modelName;
  const out = structuredClone(config);

  if (out.name === undefined || out.name === "") {
    out.name = modelName;
  } else if (out.name !== modelName) {
    throw new OperonError(
      "INVALID_ARG",
      `${source}: name: model configuration name '${out.name}' does not match the model directory name '${modelName}'`,
    );
  }

  const isEnsemble = out.platform === "ensemble" || out.ensemble_scheduling !== undefined;
  fillPlatformAndBackend(out, isEnsemble ? undefined : options.defaultBackend, source);
  const defaultFile = DEFAULT_MODEL_FILENAMES[out.backend ?? ""];
  if (defaultFile !== undefined && !out.default_model_filename) out.default_model_filename = defaultFile;

  out.runtime ??= "";
  out.default_model_filename ??= "";
  out.version_policy ??= { latest: { num_versions: 1 } };
  out.max_batch_size ??= 0;
  out.input = (out.input ?? []).map(normalizeInput);
  out.output = (out.output ?? []).map(normalizeOutput);
  out.batch_input ??= [];
  out.batch_output ??= [];
  if (!isEnsemble) out.instance_group = normalizeInstanceGroups(out.instance_group, modelName);
  out.cc_model_filenames ??= {};
  out.metric_tags ??= {};
  out.parameters ??= {};
  out.model_warmup ??= [];
  out.optimization = normalizeOptimization(out.optimization);
  if (out.dynamic_batching !== undefined) out.dynamic_batching = normalizeDynamicBatching(out.dynamic_batching);
  return out;
}

function fillPlatformAndBackend(config: ModelConfigJson, defaultBackend: string | undefined, source: string): void {
  if (!config.platform && !config.backend && defaultBackend) config.backend = defaultBackend;
  for (const [platform, backend] of PLATFORM_BACKENDS) {
    if (config.platform === platform && !config.backend) config.backend = backend;
    else if (config.backend === backend && !config.platform) config.platform = platform;
    else if (config.platform === platform && config.backend !== backend) {
      throw new OperonError(
        "INVALID_ARG",
        `${source}: backend: platform '${platform}' requires backend '${backend}', got '${config.backend}'`,
      );
    }
  }
  config.platform ??= "";
  config.backend ??= "";
}

function normalizeInput(input: ModelInputJson): ModelInputJson {
  return {
    ...input,
    name: input.name ?? "",
    format: input.format ?? "FORMAT_NONE",
    dims: input.dims ?? [],
    is_shape_tensor: input.is_shape_tensor ?? false,
    allow_ragged_batch: input.allow_ragged_batch ?? false,
    optional: input.optional ?? false,
    is_non_linear_format_io: input.is_non_linear_format_io ?? false,
  };
}

function normalizeOutput(output: ModelOutputJson): ModelOutputJson {
  return {
    ...output,
    name: output.name ?? "",
    dims: output.dims ?? [],
    label_filename: output.label_filename ?? "",
    is_shape_tensor: output.is_shape_tensor ?? false,
    is_non_linear_format_io: output.is_non_linear_format_io ?? false,
  };
}

/** One CPU instance when none is given; unnamed groups become "<model>_<index>" as in Triton. */
function normalizeInstanceGroups(
  groups: ModelInstanceGroupJson[] | undefined,
  modelName: string,
): ModelInstanceGroupJson[] {
  const given: ModelInstanceGroupJson[] = groups !== undefined && groups.length > 0 ? groups : [{ name: modelName }];
  return given.map((group, index) => ({
    ...group,
    name: group.name || `${modelName}_${index}`,
    kind: group.kind === undefined || group.kind === "KIND_AUTO" ? "KIND_CPU" : group.kind,
    count: group.count === undefined || group.count === 0 ? 1 : group.count,
    gpus: group.gpus ?? [],
    secondary_devices: group.secondary_devices ?? [],
    profile: group.profile ?? [],
    passive: group.passive ?? false,
    host_policy: group.host_policy ?? "",
  }));
}

function normalizeOptimization(optimization: ModelOptimizationPolicyJson | undefined): ModelOptimizationPolicyJson {
  const given = optimization ?? {};
  return {
    ...given,
    priority: given.priority ?? "PRIORITY_DEFAULT",
    input_pinned_memory: given.input_pinned_memory ?? { enable: true },
    output_pinned_memory: given.output_pinned_memory ?? { enable: true },
    gather_kernel_buffer_threshold: given.gather_kernel_buffer_threshold ?? 0,
    eager_batching: given.eager_batching ?? false,
  };
}

function normalizeDynamicBatching(batching: ModelDynamicBatchingJson): ModelDynamicBatchingJson {
  return {
    ...batching,
    preferred_batch_size: batching.preferred_batch_size ?? [],
    max_queue_delay_microseconds: batching.max_queue_delay_microseconds ?? 0,
    preserve_ordering: batching.preserve_ordering ?? false,
    priority_levels: batching.priority_levels ?? 0,
    default_priority_level: batching.default_priority_level ?? 0,
    priority_queue_policy: batching.priority_queue_policy ?? {},
  };
}

/**
 * Triton's semantic checks on a (normalized) config. Throws OperonError
 * INVALID_ARG "<source>: <field.path>: <problem>" for the first violation.
 */
export function validateConfig(config: ModelConfigJson, source: string): void {
  new ConfigValidator(source).validate(config);
}

class ConfigValidator {
  constructor(private readonly source: string) {}

  private fail(path: string, problem: string): never {
    throw new OperonError("INVALID_ARG", `${this.source}: ${path}: ${problem}`);
  }

  validate(config: ModelConfigJson): void {
    const maxBatchSize = config.max_batch_size ?? 0;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 0)
      this.fail("max_batch_size", `must be >= 0, got ${maxBatchSize}`);
    this.tensors("input", config.input ?? []);
    this.tensors("output", config.output ?? []);
    this.versionPolicy(config);
    this.scheduling(config, maxBatchSize);
    this.instanceGroups(config);
    this.warmup(config, maxBatchSize);
    this.responseCache(config);
  }

  /** Triton: the response cache holds one response per request, so it cannot serve decoupled models. */
  private responseCache(config: ModelConfigJson): void {
    if (config.response_cache?.enable === true && config.model_transaction_policy?.decoupled === true) {
      this.fail(
        "response_cache",
        "response cache is not supported for decoupled models (model_transaction_policy { decoupled: true }); disable response_cache or decoupled",
      );
    }
  }

  private tensors(kind: "input" | "output", tensors: (ModelInputJson | ModelOutputJson)[]): void {
    const names = new Set<string>();
    tensors.forEach((tensor, index) => {
      const path = `${kind}[${index}]`;
      if (!tensor.name) this.fail(`${path}.name`, `${kind} name must not be empty`);
      if (names.has(tensor.name)) this.fail(`${path}.name`, `duplicate ${kind} name '${tensor.name}'`);
      names.add(tensor.name);
      if (tensor.data_type === undefined || tensor.data_type === "TYPE_INVALID") {
        this.fail(`${path}.data_type`, `${kind} '${tensor.name}' must set a data_type other than TYPE_INVALID`);
      }
      const dims = tensor.dims ?? [];
      this.dims(`${path}.dims`, dims);
      if (tensor.reshape !== undefined) {
        const shape = tensor.reshape.shape ?? [];
        this.dims(`${path}.reshape.shape`, shape);
        const fixed = (d: number[]): boolean => d.every((dim) => dim !== -1);
        if (fixed(dims) && fixed(shape) && elementCount(dims) !== elementCount(shape)) {
          this.fail(
            `${path}.reshape`,
            `reshape [${shape.join(",")}] has ${elementCount(shape)} elements but dims [${dims.join(",")}] have ${elementCount(dims)}`,
          );
        }
      }
    });
  }

  private dims(path: string, dims: number[]): void {
    dims.forEach((dim, index) => {
      if (!Number.isInteger(dim) || (dim <= 0 && dim !== -1))
        this.fail(`${path}[${index}]`, `dimension must be > 0 or -1, got ${dim}`);
    });
  }

  private versionPolicy(config: ModelConfigJson): void {
    const policy = config.version_policy;
    if (policy?.latest !== undefined && (policy.latest.num_versions ?? 0) < 1) {
      this.fail("version_policy.latest.num_versions", `must be >= 1, got ${policy.latest.num_versions ?? 0}`);
    }
    (policy?.specific?.versions ?? []).forEach((version, index) => {
      if (version < 1) this.fail(`version_policy.specific.versions[${index}]`, `version must be >= 1, got ${version}`);
    });
  }

  private scheduling(config: ModelConfigJson, maxBatchSize: number): void {
    const dynamic = config.dynamic_batching;
    if (dynamic !== undefined) {
      if (maxBatchSize === 0) this.fail("dynamic_batching", "dynamic batching requires max_batch_size > 0");
      this.preferredSizes("dynamic_batching.preferred_batch_size", dynamic.preferred_batch_size ?? [], maxBatchSize);
      if ((dynamic.max_queue_delay_microseconds ?? 0) < 0) {
        this.fail(
          "dynamic_batching.max_queue_delay_microseconds",
          `must be >= 0, got ${dynamic.max_queue_delay_microseconds}`,
        );
      }
      this.priorities(dynamic);
    }
    const sequence = config.sequence_batching;
    if (sequence !== undefined) {
      // max_batch_size 0 is allowed (Triton's *_nobatch_sequence_* models): one row per execution.
      const reserved = sequenceTensorNames(config);
      for (const input of config.input ?? []) {
        if (reserved.inputs.has(input.name ?? ""))
          this.fail(
            "input",
            `'${input.name}' is a control or state input of sequence_batching: the server feeds it, so it must not be listed in input`,
          );
      }
      const oldest = sequence.oldest;
      if (oldest !== undefined) {
        this.preferredSizes(
          "sequence_batching.oldest.preferred_batch_size",
          oldest.preferred_batch_size ?? [],
          maxBatchSize,
        );
      }
    }
    this.ensemble(config);
  }

  private preferredSizes(path: string, sizes: number[], maxBatchSize: number): void {
    sizes.forEach((size, index) => {
      if (size <= 0) this.fail(`${path}[${index}]`, `preferred batch size must be > 0, got ${size}`);
      if (size > maxBatchSize)
        this.fail(`${path}[${index}]`, `preferred batch size ${size} exceeds max_batch_size ${maxBatchSize}`);
    });
  }

  /**
   * Triton: levels are 1..priority_levels (1 highest); 0 levels means
   * priorities are off. Operon caps them at MAX_PRIORITY_LEVELS (Triton has
   * no cap; 4,000,000 levels made each request cost millions of steps).
   */
  private priorities(dynamic: ModelDynamicBatchingJson): void {
    const levels = dynamic.priority_levels ?? 0;
    const defaultLevel = dynamic.default_priority_level ?? 0;
    if (levels > MAX_PRIORITY_LEVELS) {
      this.fail(
        "dynamic_batching.priority_levels",
        `is ${levels}; a model may have at most ${MAX_PRIORITY_LEVELS} priority levels`,
      );
      return;
    }
    if (levels > 0 && (defaultLevel < 1 || defaultLevel > levels)) {
      this.fail(
        "dynamic_batching.default_priority_level",
        `must be in [1, ${levels}] (priority_levels), got ${defaultLevel}`,
      );
    }
    if (levels === 0 && defaultLevel !== 0) {
      this.fail("dynamic_batching.default_priority_level", `is ${defaultLevel} but priority_levels is 0`);
    }
    for (const key of Object.keys(dynamic.priority_queue_policy ?? {})) {
      const level = Number(key);
      if (!Number.isInteger(level) || level < 1 || level > levels) {
        this.fail(
          `dynamic_batching.priority_queue_policy[${key}]`,
          `priority level must be in [1, ${levels}] (priority_levels), got ${key}`,
        );
      }
    }
  }

  private ensemble(config: ModelConfigJson): void {
    const ensemble = config.ensemble_scheduling;
    if (ensemble === undefined) {
      if (config.platform === "ensemble")
        this.fail("ensemble_scheduling", "platform 'ensemble' requires ensemble_scheduling");
      return;
    }
    if (config.platform !== "ensemble")
      this.fail("platform", `ensemble_scheduling requires platform 'ensemble', got '${config.platform ?? ""}'`);
    const steps = ensemble.step ?? [];
    if (steps.length === 0) this.fail("ensemble_scheduling.step", "an ensemble needs at least one step");
    steps.forEach((step, index) => {
      if (!step.model_name) this.fail(`ensemble_scheduling.step[${index}].model_name`, "must not be empty");
    });
    if ((config.instance_group ?? []).length > 0) this.fail("instance_group", "ensemble models take no instance_group");
  }

  private instanceGroups(config: ModelConfigJson): void {
    (config.instance_group ?? []).forEach((group, index) => {
      const count = group.count ?? 1;
      if (!Number.isInteger(count) || count < 1)
        this.fail(`instance_group[${index}].count`, `must be >= 1, got ${count}`);
    });
  }

  private warmup(config: ModelConfigJson, maxBatchSize: number): void {
    const limit = Math.max(maxBatchSize, 1);
    (config.model_warmup ?? []).forEach((sample, index) => {
      const size = sample.batch_size ?? 0;
      if (size < 1 || size > limit) {
        this.fail(
          `model_warmup[${index}].batch_size`,
          `must be in [1, ${limit}] (max(max_batch_size, 1)), got ${size}`,
        );
      }
    });
  }
}
