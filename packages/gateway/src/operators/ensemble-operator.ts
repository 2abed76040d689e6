import { fromConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { ModelStepSpec, OperatorSpec, TensorSpec } from "@operon/operator-spec/operator-spec-schema";

/**
 * A Triton ensemble (platform "ensemble", ensemble_scheduling) as an
 * OperatorSpec, unchanged in meaning: the config's input/output are the
 * operator's, each step calls model_name (model_version -1 = latest) with
 * input_map (model input -> ensemble tensor) and publishes output_map
 * (model output -> ensemble tensor) on the whiteboard.
 *
 * model_config.proto names the in-flight field `max_inflight_responses`
 * (older docs: `max_inflight_requests`; both are read): it becomes the
 * in-flight cap of every step (0 = unlimited), Triton's per-step
 * backpressure.
 *
 * Step ids are the model names; a model used by several steps gets
 * "<model>#2", "#3", ... for its later steps.
 */
export function ensembleToOperator(name: string, config: ModelConfigJson): OperatorSpec {
  const scheduling = config.ensemble_scheduling;
  if (scheduling === undefined) {
    throw new OperonError("INVALID_ARG", `model '${name}' is not an ensemble: its config has no ensemble_scheduling`);
  }
  const maxInflight = scheduling.max_inflight_responses ?? numberField(scheduling, "max_inflight_requests") ?? 0;
  const uses = new Map<string, number>();
  const steps: ModelStepSpec[] = (scheduling.step ?? []).map((step, index) => {
    const model = step.model_name ?? "";
    if (model === "") throw new OperonError("INVALID_ARG", `ensemble '${name}': step ${index} has no model_name`);
    const count = (uses.get(model) ?? 0) + 1;
    uses.set(model, count);
    const spec: ModelStepSpec = {
      id: count === 1 ? model : `${model}#${count}`,
      kind: "model",
      model,
      inputs: { ...(step.input_map ?? {}) },
      outputs: { ...(step.output_map ?? {}) },
    };
    const version = Number(step.model_version ?? -1);
    if (Number.isInteger(version) && version > 0) spec.version = String(version);
    return spec;
  });
  const tensors = (list: ModelConfigJson["input"] | ModelConfigJson["output"], role: string): TensorSpec[] =>
    (list ?? []).map((tensor) => {
      const datatype = fromConfigDataType(tensor.data_type ?? "TYPE_INVALID");
      if (datatype === undefined) {
        throw new OperonError(
          "INVALID_ARG",
          `ensemble '${name}': ${role} '${tensor.name}' has no valid data_type (got '${tensor.data_type ?? ""}')`,
        );
      }
      const spec: TensorSpec = { name: tensor.name, datatype, dims: [...(tensor.dims ?? [])] };
      if ((tensor as { optional?: boolean }).optional === true) spec.optional = true;
      return spec;
    });
  return {
    name,
    description: `Triton ensemble '${name}'`,
    maxBatchSize: config.max_batch_size ?? 0,
    maxInflightPerStep: maxInflight,
    inputs: tensors(config.input, "input"),
    outputs: tensors(config.output, "output"),
    steps,
  };
}

/** True for configs that describe an ensemble. */
export function isEnsembleConfig(config: ModelConfigJson): boolean {
  return config.platform === "ensemble" || config.ensemble_scheduling !== undefined;
}

/** Models an ensemble config calls (for load ordering). */
export function ensembleStepModels(config: ModelConfigJson): string[] {
  return [
    ...new Set(
      (config.ensemble_scheduling?.step ?? []).map((step) => step.model_name ?? "").filter((model) => model !== ""),
    ),
  ];
}

function numberField(object: object, key: string): number | undefined {
  const value = (object as Record<string, unknown>)[key];
  return typeof value === "number" ? value : undefined;
}
