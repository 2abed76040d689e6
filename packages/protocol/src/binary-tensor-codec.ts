import { type DataType, elementByteSize, elementCount } from "./datatypes.js";
import { OperonError } from "./errors.js";
import type { InferResponse, RequestedOutput } from "./inference.js";
import { bufferToJsonText } from "./json-tensor-codec.js";
import {
  DEFAULT_MAX_BYTES_ELEMENTS,
  type ParameterValue,
  type Parameters,
  type Tensor,
  assertTensorByteSize,
  countBytesElements,
} from "./tensor.js";

/**
 * Triton's binary_tensor_data extension (extension_binary_data.md): a body
 * is a JSON header followed by tensor bytes in the order the tensors appear
 * in the JSON, each sized by its `binary_data_size` parameter. Everything
 * here works on Buffer slices: tensor bytes are never copied or visited per
 * element, on the way in or out.
 */

/** Header naming the JSON header's byte length (Node lower-cases header names). */
export const INFERENCE_HEADER_CONTENT_LENGTH = "inference-header-content-length";

/**
 * Parses the Inference-Header-Content-Length value: undefined when the
 * header is absent (the body is all JSON), 0 for a raw binary request.
 */
export function parseInferenceHeaderLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const length = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(length)) {
    throw new OperonError(
      "INVALID_ARG",
      `Inference-Header-Content-Length must be a non-negative integer, got '${value}'`,
    );
  }
  return length;
}

/** Splits a body into its JSON header and the binary tensor data after it (views, not copies). */
export function splitBinaryBody(body: Buffer, headerLength: number): { header: Buffer; binary: Buffer } {
  if (!Number.isSafeInteger(headerLength) || headerLength < 0) {
    throw new OperonError(
      "INVALID_ARG",
      `Inference-Header-Content-Length must be a non-negative integer, got ${headerLength}`,
    );
  }
  if (headerLength > body.length) {
    throw new OperonError(
      "INVALID_ARG",
      `Inference-Header-Content-Length ${headerLength} exceeds the request body length ${body.length}`,
    );
  }
  return { header: body.subarray(0, headerLength), binary: body.subarray(headerLength) };
}

/** One request input as the binary assignment needs it: undefined size = its data is in the JSON. */
export interface BinaryInputSlot {
  name: string;
  binaryDataSize: number | undefined;
}

/**
 * Hands out the binary section to the inputs that declared a
 * `binary_data_size`, in JSON order. The sizes must account for every byte:
 * a short section or trailing bytes are INVALID_ARG naming the input.
 * Returns, per input, its slice or undefined for a JSON-data input.
 */
export function assignBinaryChunks(inputs: readonly BinaryInputSlot[], binary: Buffer): Array<Buffer | undefined> {
  const chunks: Array<Buffer | undefined> = [];
  let offset = 0;
  let lastBinaryInput: string | undefined;
  for (const input of inputs) {
    const size = input.binaryDataSize;
    if (size === undefined) {
      chunks.push(undefined);
      continue;
    }
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${input.name}': binary_data_size must be a non-negative integer, got ${size}`,
      );
    }
    const end = offset + size;
    if (end > binary.length) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${input.name}': binary_data_size is ${size} but only ${binary.length - offset} bytes of binary data are left`,
      );
    }
    chunks.push(binary.subarray(offset, end));
    offset = end;
    lastBinaryInput = input.name;
  }
  if (offset !== binary.length) {
    const extra = binary.length - offset;
    throw new OperonError(
      "INVALID_ARG",
      lastBinaryInput === undefined
        ? `the request has ${extra} bytes of binary data but no input has a binary_data_size parameter`
        : `${extra} unexpected bytes of binary data after input '${lastBinaryInput}', the last input with binary_data_size`,
    );
  }
  return chunks;
}

/** The single input of a model as a raw binary request fills it; -1 marks a variable dimension. */
export interface RawInputSpec {
  name: string;
  datatype: DataType;
  shape: number[];
}

/**
 * A raw binary request (Inference-Header-Content-Length: 0): the whole body
 * is the data of the model's only input. The caller supplies the shape
 * (batch-1 included where the model batches); at most one -1 dimension is
 * allowed and is resolved from the body size. A BYTES input of more than
 * maxBytesElements elements is INVALID_ARG.
 */
export function rawBinaryInput(
  body: Buffer,
  spec: RawInputSpec,
  maxBytesElements = DEFAULT_MAX_BYTES_ELEMENTS,
): Tensor {
  const { name, datatype } = spec;
  const shape = [...spec.shape];
  const variable = shape.flatMap((dim, index) => (dim < 0 ? [index] : []));
  if (variable.length > 1) {
    throw new OperonError(
      "INVALID_ARG",
      `raw binary request: input '${name}' has shape [${shape.join(",")}] with ${variable.length} variable dimensions; send a JSON header to give the shape`,
    );
  }
  const size = elementByteSize(datatype);
  const variableIndex = variable[0];
  if (variableIndex !== undefined) {
    const fixed = elementCount(shape.filter((dim) => dim >= 0));
    if (size !== undefined && body.length % size !== 0) {
      throw new OperonError(
        "INVALID_ARG",
        `raw binary request: ${body.length} bytes is not a whole number of ${datatype} elements for input '${name}'`,
      );
    }
    // BYTES: the walk stops at the element limit, so a body of millions of empty elements costs no more than the limit.
    const elements = size === undefined ? countBytesElements(body, name, maxBytesElements) : body.length / size;
    if (fixed === 0 ? elements !== 0 : elements % fixed !== 0) {
      throw new OperonError(
        "INVALID_ARG",
        `raw binary request: ${elements} elements do not fit shape [${shape.join(",")}] of input '${name}'`,
      );
    }
    shape[variableIndex] = fixed === 0 ? 0 : elements / fixed;
  }
  const tensor: Tensor = { name, datatype, shape, data: body };
  // BYTES sizes need a walk over every element; the engine validates those.
  if (size !== undefined) assertTensorByteSize(tensor);
  return tensor;
}

export interface ResponseEncodingOptions {
  /** Request-level `binary_data_output`: the default for outputs without their own `binary_data`. */
  binaryDataOutput?: boolean;
  /** The request's `outputs`: filters the response (when non-empty) and carries per-output `binary_data`. */
  outputs?: readonly RequestedOutput[];
}

export interface EncodedInferResponse {
  /**
   * The JSON text of a pure JSON body (a string, so node:http sends it in one write with the
   * response's headers, with no Buffer made for it); the JSON header then each binary output's bytes otherwise.
   */
  body: string | Buffer[];
  /** Byte length of the JSON header, set only when binary data follows it. */
  headerLength?: number;
}

/**
 * Builds the HTTP body of an inference response. Outputs asked for as
 * binary carry `parameters.binary_data_size` and their bytes follow the
 * JSON in output order (zero-copy: the output buffers themselves); the rest
 * carry JSON `data`. When requested outputs are given, only those are sent.
 */
export function encodeInferResponseBody(
  response: InferResponse,
  options: ResponseEncodingOptions = {},
): EncodedInferResponse {
  const requested =
    options.outputs !== undefined && options.outputs.length > 0
      ? new Map(options.outputs.map((output) => [output.name, output]))
      : undefined;
  const binaryChunks: Buffer[] = [];
  const outputTexts: string[] = [];
  for (const output of response.outputs) {
    const request = requested?.get(output.name);
    if (requested !== undefined && request === undefined) continue;
    // An output written to a shared-memory region travels without its bytes (name, datatype, shape), as Triton sends it.
    if (request?.parameters?.["shared_memory_region"] !== undefined) {
      outputTexts.push(
        `{"name":${JSON.stringify(output.name)},"datatype":${JSON.stringify(output.datatype)},"shape":${JSON.stringify(output.shape)}}`,
      );
      continue;
    }
    const perOutput = request?.parameters?.["binary_data"];
    const binary = typeof perOutput === "boolean" ? perOutput : options.binaryDataOutput === true;
    const head = `{"name":${JSON.stringify(output.name)},"datatype":${JSON.stringify(output.datatype)},"shape":${JSON.stringify(output.shape)}`;
    if (binary) {
      outputTexts.push(`${head},"parameters":{"binary_data_size":${output.data.length}}}`);
      binaryChunks.push(output.data);
    } else {
      outputTexts.push(`${head},"data":${bufferToJsonText(output)}}`);
    }
  }
  const fields = [
    `"model_name":${JSON.stringify(response.modelName)}`,
    `"model_version":${JSON.stringify(response.modelVersion)}`,
  ];
  if (response.id !== undefined) fields.push(`"id":${JSON.stringify(response.id)}`);
  if (response.parameters !== undefined && Object.keys(response.parameters).length > 0) {
    fields.push(`"parameters":${stringifyParameters(response.parameters)}`);
  }
  fields.push(`"outputs":[${outputTexts.join(",")}]`);
  const text = `{${fields.join(",")}}`;
  if (binaryChunks.length === 0) return { body: text };
  const json = Buffer.from(text, "utf8");
  return { body: [json, ...binaryChunks], headerLength: json.length };
}

/** Parameters may hold bigints (gRPC int64); JSON gets a number when exact, else a decimal string. */
function stringifyParameters(parameters: Parameters): string {
  return JSON.stringify(parameters, (_key, value: ParameterValue | Parameters) =>
    typeof value === "bigint"
      ? value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value.toString()
      : value,
  );
}
