/**
 * The plain-object shape of a ModelConfig, as Triton serves it in JSON:
 * snake_case keys (proto field names), enums as value names ("TYPE_FP32"),
 * all integers (int64/uint64 included) as JS numbers, repeated fields as
 * arrays, maps as plain objects, a oneof as just its set member.
 *
 * Only the fields the server reads are typed; everything else in
 * model_config.proto is still carried through via the index signatures.
 * Every field is optional: a freshly parsed config holds exactly what the
 * file wrote; normalizeConfig() fills Triton's defaults.
 */

/** One of model_config.proto's DataType names, e.g. "TYPE_FP32". */
export type ConfigDataType = string;

export interface ModelTensorReshapeJson {
  shape: number[];
}

export interface ModelInputJson {
  name: string;
  data_type?: ConfigDataType;
  format?: "FORMAT_NONE" | "FORMAT_NHWC" | "FORMAT_NCHW" | string;
  dims?: number[];
  reshape?: ModelTensorReshapeJson;
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
  [field: string]: unknown;
}

export interface ModelOutputJson {
  name: string;
  data_type?: ConfigDataType;
  dims?: number[];
  reshape?: ModelTensorReshapeJson;
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
  [field: string]: unknown;
}

/** A oneof: exactly one member is present. */
export interface ModelVersionPolicyJson {
  latest?: { num_versions?: number };
  all?: Record<string, never>;
  specific?: { versions?: number[] };
}

export type InstanceGroupKind = "KIND_AUTO" | "KIND_GPU" | "KIND_CPU" | "KIND_MODEL";

export interface ModelInstanceGroupJson {
  name?: string;
  kind?: InstanceGroupKind | string;
  count?: number;
  gpus?: number[];
  rate_limiter?: {
    resources?: { name?: string; global?: boolean; count?: number }[];
    priority?: number;
  };
  secondary_devices?: { kind?: string; device_id?: number }[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
  [field: string]: unknown;
}

export interface ModelParameterJson {
  string_value: string;
}

export interface ModelQueuePolicyJson {
  timeout_action?: "REJECT" | "DELAY" | string;
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

export interface ModelDynamicBatchingJson {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: ModelQueuePolicyJson;
  /** Keyed by priority level (1-based) as a decimal string. */
  priority_queue_policy?: Record<string, ModelQueuePolicyJson>;
}

export interface ModelSequenceBatchingJson {
  max_sequence_idle_microseconds?: number;
  control_input?: {
    name?: string;
    control?: {
      kind?: string;
      int32_false_true?: number[];
      fp32_false_true?: number[];
      bool_false_true?: boolean[];
      data_type?: ConfigDataType;
    }[];
  }[];
  direct?: { max_queue_delay_microseconds?: number; minimum_slot_utilization?: number };
  oldest?: {
    max_candidate_sequences?: number;
    preferred_batch_size?: number[];
    max_queue_delay_microseconds?: number;
    preserve_ordering?: boolean;
  };
  state?: Record<string, unknown>[];
  iterative_sequence?: boolean;
  [field: string]: unknown;
}

export interface EnsembleStepJson {
  model_name?: string;
  model_version?: number;
  /** Step model's input tensor name -> ensemble tensor name. */
  input_map?: Record<string, string>;
  /** Step model's output tensor name -> ensemble tensor name. */
  output_map?: Record<string, string>;
  model_namespace?: string;
}

export interface ModelEnsemblingJson {
  step?: EnsembleStepJson[];
  max_inflight_responses?: number;
}

export interface ModelWarmupInputJson {
  data_type?: ConfigDataType;
  dims?: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

export interface ModelWarmupJson {
  name?: string;
  batch_size?: number;
  inputs?: Record<string, ModelWarmupInputJson>;
  count?: number;
}

export interface ModelOptimizationPolicyJson {
  graph?: { level?: number };
  priority?: string;
  input_pinned_memory?: { enable?: boolean };
  output_pinned_memory?: { enable?: boolean };
  gather_kernel_buffer_threshold?: number;
  eager_batching?: boolean;
  [field: string]: unknown;
}

/**
 * The config parameter that picks where a model's instances run: "thread",
 * "process" or "inline" (the gateway's instances/instance-launch.ts reads it;
 * the control plane refuses "inline" in uploaded configs).
 */
export const ISOLATION_PARAMETER = "operon_isolation";

export interface ModelConfigJson {
  name?: string;
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: ModelVersionPolicyJson;
  max_batch_size?: number;
  input?: ModelInputJson[];
  output?: ModelOutputJson[];
  instance_group?: ModelInstanceGroupJson[];
  default_model_filename?: string;
  parameters?: Record<string, ModelParameterJson>;
  dynamic_batching?: ModelDynamicBatchingJson;
  sequence_batching?: ModelSequenceBatchingJson;
  ensemble_scheduling?: ModelEnsemblingJson;
  optimization?: ModelOptimizationPolicyJson;
  model_warmup?: ModelWarmupJson[];
  model_transaction_policy?: { decoupled?: boolean };
  response_cache?: { enable?: boolean };
  [field: string]: unknown;
}
