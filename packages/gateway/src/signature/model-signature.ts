import { fromConfigDataType, type DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { InferInput, InferRequest } from "@operon/protocol/inference";
import { DEFAULT_MAX_BYTES_ELEMENTS, assertTensorByteSize, type Tensor } from "@operon/protocol/tensor";

/**
 * Checks an inference request against the model's config before it is
 * queued: the names, datatypes and shapes the client sent, the batch size,
 * and the byte size of every tensor. Every failure is INVALID_ARG naming the
 * tensor and what was expected, with Triton's wording where it has one.
 */
export interface ServedTensorConfig {
  name: string;
  datatype: DataType;
  /** Config dims, without the batch dimension (-1 = any). */
  dims: number[];
  /** Shape the model itself wants, when config `reshape` differs from dims. */
  reshape?: number[];
  optional: boolean;
}

export interface ServedModelSignature {
  name: string;
  maxBatchSize: number;
  inputs: ServedTensorConfig[];
  outputs: ServedTensorConfig[];
}

export interface ValidatedRequest {
  /** Inputs as the backend receives them (reshape applied). */
  inputs: Tensor[];
  /** Requested outputs; undefined = all. */
  outputNames: string[] | undefined;
  /** Inferences this request stands for (first dim when batching, else 1). */
  batchSize: number;
}

/** maxBytesElements: elements one BYTES input may hold (checked on its shape before its bytes are walked). */
export function validateInferRequest(
  model: ServedModelSignature,
  request: InferRequest,
  maxBytesElements = DEFAULT_MAX_BYTES_ELEMENTS,
): ValidatedRequest {
  const byName = inputsByName(model);
  const seen = new Set<string>();
  let batchSize: number | undefined;
  const inputs: Tensor[] = [];

  for (const input of request.inputs) {
    const config = byName.get(input.name);
    if (config === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `unexpected inference input '${input.name}' for model '${model.name}'; it has inputs: ${[...byName.keys()].map((n) => `'${n}'`).join(", ")}`,
      );
    }
    if (seen.has(input.name)) {
      throw new OperonError("INVALID_ARG", `input '${input.name}' is given more than once`);
    }
    seen.add(input.name);
    if (input.datatype !== config.datatype) {
      throw new OperonError(
        "INVALID_ARG",
        `inference input '${input.name}' data-type is '${input.datatype}', but model '${model.name}' expects '${config.datatype}'`,
      );
    }
    const inputBatch = checkShape(model, config, input);
    if (inputBatch !== undefined) {
      if (batchSize !== undefined && batchSize !== inputBatch) {
        throw new OperonError(
          "INVALID_ARG",
          `inputs of model '${model.name}' disagree on the batch size: input '${input.name}' has ${inputBatch}, an earlier input has ${batchSize}`,
        );
      }
      batchSize = inputBatch;
    }
    assertTensorByteSize(input, maxBytesElements);
    inputs.push(toBackendTensor(model, config, input, inputBatch));
  }

  // The common case (every input given, none twice) needs no list of the missing ones.
  const missing =
    seen.size === model.inputs.length
      ? []
      : model.inputs.filter((input) => !input.optional && !seen.has(input.name)).map((input) => input.name);
  if (missing.length > 0) {
    throw new OperonError(
      "INVALID_ARG",
      `expected ${model.inputs.filter((i) => !i.optional).length} inputs but got ${request.inputs.length} inputs for model '${model.name}'; missing: ${missing.map((n) => `'${n}'`).join(", ")}`,
    );
  }

  let outputNames: string[] | undefined;
  if (request.outputs !== undefined && request.outputs.length > 0) {
    const known = new Set(model.outputs.map((output) => output.name));
    outputNames = [];
    for (const output of request.outputs) {
      if (!known.has(output.name)) {
        throw new OperonError(
          "INVALID_ARG",
          `unexpected inference output '${output.name}' for model '${model.name}'; it has outputs: ${[...known].map((n) => `'${n}'`).join(", ")}`,
        );
      }
      if (output.parameters?.classification !== undefined) {
        throw new OperonError(
          "UNSUPPORTED",
          `output '${output.name}' asks for 'classification', but this server does not implement the classification extension`,
        );
      }
      if (outputNames.includes(output.name)) {
        throw new OperonError("INVALID_ARG", `output '${output.name}' is requested more than once`);
      }
      outputNames.push(output.name);
    }
  }

  return { inputs, outputNames, batchSize: batchSize ?? 1 };
}

/** Each signature's inputs by name, built once per signature (a signature never changes after load). */
const inputMaps = new WeakMap<ServedModelSignature, Map<string, ServedTensorConfig>>();
function inputsByName(model: ServedModelSignature): Map<string, ServedTensorConfig> {
  let byName = inputMaps.get(model);
  if (byName === undefined || byName.size !== model.inputs.length) {
    byName = new Map(model.inputs.map((input) => [input.name, input]));
    inputMaps.set(model, byName);
  }
  return byName;
}

/** Returns the request's batch size for this input when the model batches. */
function checkShape(model: ServedModelSignature, config: ServedTensorConfig, input: InferInput): number | undefined {
  const shape = input.shape;
  if (!shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0)) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${input.name}': shape [${shape.join(",")}] must hold non-negative integers`,
    );
  }
  let batch: number | undefined;
  let rest = shape;
  if (model.maxBatchSize > 0) {
    if (shape.length === 0) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${input.name}': model '${model.name}' batches (max_batch_size ${model.maxBatchSize}), so the shape needs a batch dimension first; got []`,
      );
    }
    batch = shape[0]!;
    if (batch < 1 || batch > model.maxBatchSize) {
      throw new OperonError(
        "INVALID_ARG",
        `inference request batch-size must be <= ${model.maxBatchSize} for '${model.name}'; input '${input.name}' has batch size ${batch}`,
      );
    }
    rest = shape.slice(1);
  }
  const matches =
    rest.length === config.dims.length && rest.every((dim, i) => config.dims[i] === -1 || config.dims[i] === dim);
  if (!matches) {
    const expected = model.maxBatchSize > 0 ? `[-1,${config.dims.join(",")}]` : `[${config.dims.join(",")}]`;
    throw new OperonError(
      "INVALID_ARG",
      `unexpected shape for input '${input.name}' for model '${model.name}'. Expected ${expected}, got [${shape.join(",")}]`,
    );
  }
  return batch;
}

function toBackendTensor(
  model: ServedModelSignature,
  config: ServedTensorConfig,
  input: InferInput,
  batch: number | undefined,
): Tensor {
  const tensor: Tensor = { name: input.name, datatype: input.datatype, shape: input.shape, data: input.data };
  if (input.device !== undefined) tensor.device = input.device;
  if (config.reshape === undefined) return tensor;
  const reshaped = resolveReshape(config.reshape, model.maxBatchSize > 0 ? input.shape.slice(1) : input.shape);
  return { ...tensor, shape: batch !== undefined ? [batch, ...reshaped] : reshaped };
}

/** Fills a single -1 in a reshape target from the element count of the given dims. */
export function resolveReshape(target: readonly number[], from: readonly number[]): number[] {
  const count = from.reduce((product, dim) => product * dim, 1);
  const known = target.filter((dim) => dim !== -1).reduce((product, dim) => product * dim, 1);
  return target.map((dim) => (dim === -1 ? (known === 0 ? 0 : count / known) : dim));
}

/** Builds the served signature from a normalized config JSON. */
export function signatureFromConfig(config: {
  name?: string;
  max_batch_size?: number;
  input?: Array<{
    name?: string;
    data_type?: string;
    dims?: number[];
    reshape?: { shape?: number[] };
    optional?: boolean;
  }>;
  output?: Array<{ name?: string; data_type?: string; dims?: number[]; reshape?: { shape?: number[] } }>;
}): ServedModelSignature {
  const tensor = (t: {
    name?: string;
    data_type?: string;
    dims?: number[];
    reshape?: { shape?: number[] };
    optional?: boolean;
  }): ServedTensorConfig => {
    const datatype = fromConfigDataType(t.data_type ?? "TYPE_INVALID");
    if (datatype === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `tensor '${t.name ?? ""}' has no valid data_type (got '${t.data_type ?? ""}')`,
      );
    }
    const served: ServedTensorConfig = {
      name: t.name ?? "",
      datatype,
      dims: t.dims ?? [],
      optional: t.optional ?? false,
    };
    if (t.reshape?.shape !== undefined) served.reshape = t.reshape.shape;
    return served;
  };
  return {
    name: config.name ?? "",
    maxBatchSize: config.max_batch_size ?? 0,
    inputs: (config.input ?? []).map(tensor),
    outputs: (config.output ?? []).map(tensor),
  };
}
