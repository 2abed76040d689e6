import type { ModelConfigJson } from "./model-config-types.js";

/**
 * Model config fields that Operon parses (they are in model_config.proto)
 * but does not implement. A config that sets one loads with a warning per
 * field in its status (repository index, console, log), or is refused
 * under --strict-model-config; it is never silently accepted as if the
 * field worked. Remove an entry here when its field is implemented.
 *
 * Judged on the config as written (before defaults and auto-complete), so a
 * field Operon fills in itself never warns. Native backends (Triton C++
 * API libraries) read their config themselves and may honour
 * `optimization`; that field is not reported for them.
 */
export interface UnimplementedField {
  /** Where it is set: "optimization", "instance_group[0].rate_limiter", "input[1].allow_ragged_batch". */
  path: string;
  message: string;
}

const isSet = (value: unknown): boolean => {
  if (value === undefined || value === null || value === false || value === "" || value === 0) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
};

export function unimplementedConfigFields(
  config: ModelConfigJson,
  options: { nativeBackend: boolean },
): UnimplementedField[] {
  const found: UnimplementedField[] = [];
  const add = (path: string, what: string): void =>
    void found.push({ path, message: `${path}: ${what} is not implemented by Operon; the setting has no effect` });
  const raw = config as Record<string, unknown>;

  if (!options.nativeBackend && isSet(raw["optimization"]))
    add(
      "optimization",
      "model optimization (graph level, priority, CUDA graphs, execution accelerators, pinned memory, eager batching)",
    );
  if (isSet(raw["batch_input"])) add("batch_input", "ragged batching (batch inputs)");
  if (isSet(raw["batch_output"])) add("batch_output", "ragged batching (batch outputs)");
  if (isSet(raw["model_operations"])) add("model_operations", "model operations (op library preloading)");
  if (isSet(raw["model_repository_agents"])) add("model_repository_agents", "model repository agents");
  if (isSet(raw["cc_model_filenames"])) add("cc_model_filenames", "per-compute-capability model files");
  if (isSet(raw["metric_tags"])) add("metric_tags", "metric tags");

  for (const [index, input] of (config.input ?? []).entries()) {
    const fields = input as Record<string, unknown>;
    if (isSet(fields["allow_ragged_batch"])) add(`input[${index}].allow_ragged_batch`, "ragged batching");
    if (isSet(fields["is_shape_tensor"])) add(`input[${index}].is_shape_tensor`, "shape tensors");
  }
  for (const [index, output] of (config.output ?? []).entries()) {
    if (isSet((output as Record<string, unknown>)["is_shape_tensor"]))
      add(`output[${index}].is_shape_tensor`, "shape tensors");
  }
  for (const [index, group] of (config.instance_group ?? []).entries()) {
    const fields = group as Record<string, unknown>;
    const at = `instance_group[${index}]`;
    if (isSet(fields["rate_limiter"]))
      add(`${at}.rate_limiter`, "the rate limiter (resources and priority per instance)");
    if (isSet(fields["host_policy"])) add(`${at}.host_policy`, "host policies");
    if (isSet(fields["secondary_devices"])) add(`${at}.secondary_devices`, "secondary devices");
    if (isSet(fields["passive"])) add(`${at}.passive`, "passive instances");
    if (isSet(fields["profile"])) add(`${at}.profile`, "TensorRT optimization profiles");
  }
  return found;
}
