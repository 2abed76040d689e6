import { isDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { tensorDataFromContents } from "@operon/protocol/grpc-tensor-contents";
import type {
  InferInput,
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  RequestedOutput,
} from "@operon/protocol/inference";
import { assertTensorByteSize, type Parameters as InferParameters, type ParameterValue } from "@operon/protocol/tensor";
import { checkReservedParameters } from "../request-parameters.js";
import type { WireInferRequest, WireInput, WireParameter, WireParameters } from "./grpc-wire.js";

/** ModelInfer messages (as proto-loader decodes them) to and from the engine's InferRequest/InferResponse. */

/** `allowReserved`: triton_ parameters the calling frontend reads itself (streaming's triton_enable_empty_final_response). */
export function decodeInferRequest(message: WireInferRequest, allowReserved: readonly string[] = []): InferRequest {
  const inputs = message.inputs ?? [];
  const raw = message.raw_input_contents ?? [];
  const inputParameters = inputs.map((input) => decodeParameters(input.parameters, `input '${input.name}': `));
  // Inputs in shared memory have no raw_input_contents entry (Triton's clients send one per other input, in order).
  let sharedMemory = false;
  for (const parameters of inputParameters) if (parameters[SHM_REGION] !== undefined) sharedMemory = true;
  const rawInputs = sharedMemory ? inputParameters.filter((p) => p[SHM_REGION] === undefined).length : inputs.length;
  if (raw.length > 0 && raw.length !== rawInputs) {
    throw new OperonError(
      "INVALID_ARG",
      `expected ${rawInputs} raw_input_contents (one per input not in shared memory, in order), got ${raw.length}`,
    );
  }
  const outputs: RequestedOutput[] = (message.outputs ?? []).map((output) => {
    const parameters = decodeParameters(output.parameters, `output '${output.name}': `);
    if (parameters[SHM_REGION] !== undefined) sharedMemory = true;
    return withParameters({ name: output.name }, parameters);
  });
  const parameters = decodeParameters(message.parameters, "");
  // The same rules as HTTP's (priority, timeout, reserved triton_ keys).
  checkReservedParameters(parameters, allowReserved);
  let next = 0;
  return {
    modelName: message.model_name,
    ...(message.model_version ? { modelVersion: message.model_version } : {}),
    ...(message.id ? { id: message.id } : {}),
    parameters,
    inputs: inputs.map((input, i) => {
      const own = inputParameters[i]!;
      if (own[SHM_REGION] !== undefined) return sharedMemoryInput(input, own);
      return decodeInput(input, raw.length > 0 ? raw[next++] : undefined, own);
    }),
    ...(outputs.length > 0 ? { outputs } : {}),
    ...(sharedMemory ? { sharedMemory: true as const } : {}),
  };
}

const SHM_REGION = "shared_memory_region";

/** An input whose bytes are in a shared-memory region: the frontend reads them before the engine sees it. */
function sharedMemoryInput(input: WireInput, parameters: InferParameters): InferInput {
  const { name } = input;
  if (input.contents != null && Object.values(input.contents).some((v) => Array.isArray(v) && v.length > 0)) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${name}': contents must not be set when it names a shared_memory_region`,
    );
  }
  const datatype = input.datatype;
  if (!isDataType(datatype)) throw new OperonError("INVALID_ARG", `input '${name}': unknown datatype '${datatype}'`);
  return { name, datatype, shape: decodeShape(input), data: Buffer.alloc(0), parameters };
}

function decodeShape(input: WireInput): number[] {
  return input.shape.map((dim) => {
    const n = typeof dim === "number" ? dim : Number(dim);
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new OperonError("INVALID_ARG", `input '${input.name}': invalid shape dimension ${dim}`);
    }
    return n;
  });
}

function decodeInput(input: WireInput, raw: Buffer | undefined, parameters: InferParameters): InferInput {
  const { name } = input;
  const datatype = input.datatype;
  if (!isDataType(datatype)) throw new OperonError("INVALID_ARG", `input '${name}': unknown datatype '${datatype}'`);
  const shape = decodeShape(input);
  let data: Buffer;
  if (raw !== undefined) {
    if (input.contents != null) {
      throw new OperonError("INVALID_ARG", `input '${name}': contents must not be set when raw_input_contents is used`);
    }
    data = raw;
    assertTensorByteSize({ name, datatype, shape, data });
  } else {
    data = tensorDataFromContents({ name, datatype, shape }, input.contents ?? {});
  }
  return withParameters({ name, datatype, shape, data }, parameters);
}

/** `target` is a fresh object of the caller's: set in place (a `{ ...target, parameters }` clone costs µs on Node 20). */
function withParameters<T extends object>(
  target: T,
  parameters: InferParameters,
): T & { parameters?: InferParameters } {
  if (Object.keys(parameters).length > 0) (target as T & { parameters?: InferParameters }).parameters = parameters;
  return target;
}

export function encodeInferResponse(response: InferResponse, requestId: string | undefined): object {
  return {
    model_name: response.modelName,
    model_version: response.modelVersion,
    id: response.id ?? requestId ?? "",
    parameters: encodeParameters(response.parameters),
    outputs: response.outputs.map((output) => ({
      name: output.name,
      datatype: output.datatype,
      shape: output.shape,
      // Tensors may carry per-output parameters (e.g. from classification).
      parameters: encodeParameters((output as { parameters?: InferParameters }).parameters),
    })),
    raw_output_contents: response.outputs.map((output) => output.data),
  };
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** 64-bit values become numbers when exact, bigints otherwise. */
function integerValue(value: string | number | undefined): number | bigint {
  const big = BigInt(value ?? 0);
  return big >= MIN_SAFE && big <= MAX_SAFE ? Number(big) : big;
}

export function decodeParameters(map: WireParameters, where: string): InferParameters {
  const out: InferParameters = {};
  for (const [key, parameter] of Object.entries(map ?? {})) {
    switch (parameter.parameter_choice) {
      case "bool_param":
        out[key] = parameter.bool_param ?? false;
        break;
      case "string_param":
        out[key] = parameter.string_param ?? "";
        break;
      case "double_param":
        out[key] = parameter.double_param ?? 0;
        break;
      case "int64_param":
        out[key] = integerValue(parameter.int64_param);
        break;
      case "uint64_param":
        out[key] = integerValue(parameter.uint64_param);
        break;
      default:
        throw new OperonError("INVALID_ARG", `${where}parameter '${key}' has no value`);
    }
  }
  return out;
}

function encodeParameter(key: string, value: ParameterValue): WireParameter {
  switch (typeof value) {
    case "boolean":
      return { bool_param: value };
    case "string":
      return { string_param: value };
    case "number":
      return Number.isSafeInteger(value) ? { int64_param: value } : { double_param: value };
    default:
      if (value >= INT64_MIN && value <= INT64_MAX) return { int64_param: value.toString() };
      if (value > INT64_MAX && value <= UINT64_MAX) return { uint64_param: value.toString() };
      throw new OperonError("INTERNAL", `parameter '${key}' (${value}) does not fit in 64 bits`);
  }
}

export function encodeParameters(parameters: InferParameters | undefined): Record<string, WireParameter> {
  const out: Record<string, WireParameter> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) out[key] = encodeParameter(key, value);
  return out;
}

export function decodeLoadOptions(parameters: WireParameters): ModelLoadOptions {
  const options: ModelLoadOptions = {};
  const files = new Map<string, Buffer>();
  for (const [key, parameter] of Object.entries(parameters ?? {})) {
    if (key === "config") {
      if (parameter.parameter_choice !== "string_param") {
        throw new OperonError(
          "INVALID_ARG",
          "load parameter 'config' must be a string_param holding the model config JSON",
        );
      }
      options.config = parameter.string_param ?? "";
    } else if (key.startsWith("file:")) {
      const path = key.slice("file:".length);
      if (parameter.parameter_choice !== "bytes_param" || path === "") {
        throw new OperonError(
          "INVALID_ARG",
          `load parameter '${key}' must be 'file:<version>/<path>' with a bytes_param`,
        );
      }
      files.set(path, parameter.bytes_param ?? Buffer.alloc(0));
    } else {
      throw new OperonError("INVALID_ARG", `unrecognized load parameter '${key}'`);
    }
  }
  if (files.size > 0) {
    if (options.config === undefined) {
      throw new OperonError("INVALID_ARG", "load parameter 'config' is required when 'file:' parameters are given");
    }
    options.files = files;
  }
  return options;
}
