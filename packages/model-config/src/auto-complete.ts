/**
 * Completing a config from what the backend reports about the model, and
 * checking a config against it (Triton's --strict-model-config=false path,
 * as its ONNX Runtime backend does it).
 *
 * Order of use: parse -> autoCompleteConfig -> normalizeConfig ->
 * validateConfig -> validateAgainstModel. Auto-completion must see the RAW
 * parsed config: whether max_batch_size was written is read from the key's
 * presence (parsePbtxt / configFromJson only emit fields the input set), and
 * can be overridden with the `maxBatchSizeSet` option when the caller knows
 * better (e.g. it already normalized the config).
 */
import type { DataType } from "@operon/protocol/datatypes";
import { fromConfigDataType, toConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson, ModelInputJson, ModelOutputJson } from "./model-config-types.js";

export interface IoInfo {
  name: string;
  /** undefined when the model's type has no KServe equivalent. */
  datatype: DataType | undefined;
  /** Full model shape including any batch dimension; -1 for dynamic dims. */
  shape: number[];
}

export interface ModelIoMetadata {
  inputs: IoInfo[];
  outputs: IoInfo[];
}

export interface AutoCompleteOptions {
  /** max_batch_size chosen for models that can batch when the config does not say. Default 4 (Triton's). */
  defaultMaxBatchSize?: number;
  /** Whether the config file set max_batch_size; default: `config.max_batch_size !== undefined`. */
  maxBatchSizeSet?: boolean;
}

/** A model can batch when every input and output has a dynamic first dimension. */
function modelSupportsBatching(io: ModelIoMetadata): boolean {
  const all = [...io.inputs, ...io.outputs];
  return all.length > 0 && all.every((tensor) => tensor.shape.length > 0 && tensor.shape[0] === -1);
}

/**
 * A new config with max_batch_size decided (when the file left it out),
 * missing inputs/outputs appended in model order, and missing data_type /
 * dims of listed ones filled. When batching is enabled this way and no
 * scheduler was configured, `dynamic_batching: {}` is added (Triton's ORT
 * backend does the same). dims never include the batch dimension.
 */
export function autoCompleteConfig(
  config: ModelConfigJson,
  io: ModelIoMetadata,
  options: AutoCompleteOptions = {},
): ModelConfigJson {
  const out = structuredClone(config);
  const maxBatchSizeSet = options.maxBatchSizeSet ?? config.max_batch_size !== undefined;
  if (!maxBatchSizeSet) {
    if (modelSupportsBatching(io)) {
      out.max_batch_size = options.defaultMaxBatchSize ?? 4;
      const scheduled = out.dynamic_batching ?? out.sequence_batching ?? out.ensemble_scheduling;
      if (scheduled === undefined && out.max_batch_size > 0) out.dynamic_batching = {};
    } else {
      out.max_batch_size = 0;
    }
  }
  const batching = (out.max_batch_size ?? 0) > 0;
  // A sequence model's control and state tensors are the server's to feed and keep, never the client's (Triton).
  const sequence = sequenceTensorNames(out);
  out.input = completeTensors<ModelInputJson>(
    out.input ?? [],
    io.inputs.filter((tensor) => !sequence.inputs.has(tensor.name)),
    batching,
  );
  out.output = completeTensors<ModelOutputJson>(
    out.output ?? [],
    io.outputs.filter((tensor) => !sequence.outputs.has(tensor.name)),
    batching,
  );
  return out;
}

/** The inputs (control inputs, state inputs) and outputs (state outputs) that sequence_batching reserves. */
export function sequenceTensorNames(config: ModelConfigJson): { inputs: Set<string>; outputs: Set<string> } {
  const sequence = config.sequence_batching;
  const inputs = new Set<string>();
  const outputs = new Set<string>();
  for (const control of sequence?.control_input ?? []) if (control.name) inputs.add(control.name);
  for (const state of sequence?.state ?? []) {
    const { input_name, output_name } = state as { input_name?: string; output_name?: string };
    if (input_name) inputs.add(input_name);
    if (output_name) outputs.add(output_name);
  }
  return { inputs, outputs };
}

function completeTensors<T extends ModelInputJson | ModelOutputJson>(
  configured: T[],
  model: IoInfo[],
  batching: boolean,
): T[] {
  const byName = new Map(model.map((tensor) => [tensor.name, tensor]));
  const completed = configured.map((tensor) => {
    const info = byName.get(tensor.name);
    if (info === undefined) return tensor; // validateAgainstModel reports it
    const filled = { ...tensor };
    if ((filled.data_type === undefined || filled.data_type === "TYPE_INVALID") && info.datatype !== undefined) {
      filled.data_type = toConfigDataType(info.datatype);
    }
    filled.dims ??= configDims(info.shape, batching);
    return filled;
  });
  const listed = new Set(configured.map((tensor) => tensor.name));
  for (const info of model) {
    if (listed.has(info.name)) continue;
    const added = { name: info.name, dims: configDims(info.shape, batching) } as T;
    if (info.datatype !== undefined) added.data_type = toConfigDataType(info.datatype);
    completed.push(added);
  }
  return completed;
}

function configDims(shape: number[], batching: boolean): number[] {
  return batching ? shape.slice(1) : [...shape];
}

/**
 * Checks a (completed, normalized) config against the model: every configured
 * tensor exists, datatypes match, and the configured shape (batch dim -1
 * prepended when max_batch_size > 0; reshape.shape in place of dims when
 * given, since that is what the model sees) has the model's rank with each
 * dimension equal to the model's unless the model's is -1.
 * Errors: OperonError INVALID_ARG "<source>: <message>"; source defaults to
 * "model '<name>'".
 */
export function validateAgainstModel(config: ModelConfigJson, io: ModelIoMetadata, source?: string): void {
  const prefix = source ?? `model '${config.name ?? ""}'`;
  const batching = (config.max_batch_size ?? 0) > 0;
  check("input", config.input ?? [], io.inputs, batching, prefix);
  check("output", config.output ?? [], io.outputs, batching, prefix);
}

function check(
  kind: "input" | "output",
  configured: (ModelInputJson | ModelOutputJson)[],
  model: IoInfo[],
  batching: boolean,
  prefix: string,
): void {
  for (const tensor of configured) {
    const info = model.find((candidate) => candidate.name === tensor.name);
    if (info === undefined) {
      const names = model.map((candidate) => candidate.name).join(", ");
      throw invalid(
        prefix,
        `unexpected ${kind} '${tensor.name}' in the configuration; the model's ${kind}s are: ${names || "(none)"}`,
      );
    }
    const modelType = info.datatype === undefined ? "an unsupported type" : toConfigDataType(info.datatype);
    const configType = tensor.data_type ?? "TYPE_INVALID";
    if (info.datatype === undefined || fromConfigDataType(configType) !== info.datatype) {
      throw invalid(
        prefix,
        `${kind} '${tensor.name}': the configuration says ${configType} but the model tensor is ${modelType}`,
      );
    }
    const dims = tensor.reshape !== undefined ? (tensor.reshape.shape ?? []) : (tensor.dims ?? []);
    const expected = batching ? [-1, ...dims] : dims;
    if (!shapesCompatible(expected, info.shape)) {
      const what = tensor.reshape !== undefined ? "reshape" : "dims";
      const batchNote = batching ? " (with the batch dimension, as max_batch_size > 0)" : "";
      throw invalid(
        prefix,
        `${kind} '${tensor.name}': the configuration's shape [${expected.join(",")}]${batchNote} from ${what} ` +
          `does not match the model tensor's shape [${info.shape.join(",")}]`,
      );
    }
  }
}

function invalid(prefix: string, message: string): OperonError {
  return new OperonError("INVALID_ARG", `${prefix}: ${message}`);
}

function shapesCompatible(configured: number[], model: number[]): boolean {
  return configured.length === model.length && configured.every((dim, i) => model[i] === -1 || model[i] === dim);
}
