import {
  type RawInputSpec,
  assignBinaryChunks,
  rawBinaryInput,
  splitBinaryBody,
} from "@operon/protocol/binary-tensor-codec";
import { DATATYPES, type DataType, elementByteSize, isDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { InferInput, InferRequest, RequestedOutput } from "@operon/protocol/inference";
import { jsonDataToBuffer } from "@operon/protocol/json-tensor-codec";
import { type Parameters, assertTensorByteSize } from "@operon/protocol/tensor";
import { checkReservedParameters } from "../request-parameters.js";
import { parseJsonBody } from "./http-body-reader.js";
import {
  expectObject,
  expectString,
  invalidField,
  isJsonObject,
  kindOf,
  optionalBoolean,
  optionalParameters,
  optionalString,
} from "./http-json-fields.js";

/**
 * Turns an HTTP /infer body into the engine's InferRequest. Three body
 * forms (extension_binary_data.md), chosen by Inference-Header-Content-Length:
 * absent = all JSON; N > 0 = N bytes of JSON then binary tensor data;
 * 0 = a raw binary request, the whole body being the single input's data.
 *
 * The HTTP-only parameters (`binary_data_output`, `binary_data_size`) are
 * consumed here and not passed to the engine; per-output `binary_data` stays
 * on the requested outputs because the response encoder reads it there.
 */

export interface InferTarget {
  modelName: string;
  modelVersion?: string;
}

export interface DecodedInferRequest {
  request: InferRequest;
  /** Request-level default for sending outputs as binary (true for raw binary requests, as in Triton). */
  binaryDataOutput: boolean;
}

export async function decodeInferBody(
  body: Buffer,
  headerLength: number | undefined,
  target: InferTarget,
  rawInput: () => RawInputSpec | Promise<RawInputSpec>,
  maxBytesElements?: number,
): Promise<DecodedInferRequest> {
  if (headerLength === 0) {
    const input = rawBinaryInput(body, await rawInput(), maxBytesElements);
    return { request: inferRequestFor(target, {}, [input]), binaryDataOutput: true };
  }
  if (headerLength === undefined) return decodeInferJson(parseJsonBody(body), undefined, target);
  const { header, binary } = splitBinaryBody(body, headerLength);
  return decodeInferJson(parseJsonBody(header), binary, target);
}

/** `binary` is the data after the JSON header, or undefined when the body is all JSON. */
export function decodeInferJson(json: unknown, binary: Buffer | undefined, target: InferTarget): DecodedInferRequest {
  return assembleInferRequest(decodeInferHeader(json), binary, target, false);
}

/**
 * What an /infer body's JSON says, checked, before any tensor data is attached: everything of the request that
 * its JSON alone decides. Immutable once made: a BinaryHeaderMemo may hand the same one to many requests.
 */
export interface DecodedInferHeader {
  readonly id: string | undefined;
  /** The request parameters as sent, binary_data_output included. */
  readonly given: Parameters;
  readonly binaryDataOutput: boolean;
  readonly inputs: readonly InputHeader[];
  readonly outputs: readonly RequestedOutput[] | undefined;
  /** True when some input or output names a shared-memory region. */
  readonly sharedMemory: boolean;
}

/** Checks an /infer body's parsed JSON (every field, every rule) without reading any tensor data. */
export function decodeInferHeader(json: unknown): DecodedInferHeader {
  if (json === undefined)
    throw new OperonError("INVALID_ARG", "the inference request body is empty; expected a JSON object");
  const body = expectObject(json, "request body");
  const id = optionalString(body["id"], "id");
  const given = optionalParameters(body["parameters"], "parameters") ?? {};
  checkReservedParameters(given);
  const binaryDataOutput = optionalBoolean(given["binary_data_output"], "parameters.binary_data_output") ?? false;
  const inputs = decodeInputHeaders(body["inputs"]);
  const outputs = decodeRequestedOutputs(body["outputs"]);
  const sharedMemory =
    inputs.some((input) => input.data === undefined && input.binaryDataSize === undefined) ||
    outputs?.some((output) => output.parameters?.["shared_memory_region"] !== undefined) === true;
  return { id, given, binaryDataOutput, inputs, outputs, sharedMemory };
}

/**
 * The engine's request from a decoded header and the binary data after it (undefined for an all-JSON body).
 * `shared`: the header serves other requests too (BinaryHeaderMemo), so every object the engine or a later step
 * may change (parameters, shapes, requested outputs) is this request's own copy.
 */
export function assembleInferRequest(
  header: DecodedInferHeader,
  binary: Buffer | undefined,
  target: InferTarget,
  shared: boolean,
): DecodedInferRequest {
  const given = withoutKey(header.given, "binary_data_output");
  const parameters = shared && given === header.given ? { ...given } : given;
  const chunks = binaryChunks(header.inputs, binary);
  const inputs: InferInput[] = [];
  for (let i = 0; i < header.inputs.length; i++) {
    const input = header.inputs[i]!;
    // No data and no binary chunk: the input names a shared-memory region (checked above); the frontend reads it.
    if (input.data === undefined && chunks[i] === undefined) inputs.push(sharedMemoryInput(input));
    else inputs.push(toInferInput(input, chunks[i], shared));
  }
  const request = inferRequestFor(target, parameters, inputs);
  if (header.sharedMemory) request.sharedMemory = true;
  if (header.id !== undefined) request.id = header.id;
  if (header.outputs !== undefined)
    request.outputs = shared ? header.outputs.map(copyOutput) : (header.outputs as RequestedOutput[]);
  return { request, binaryDataOutput: header.binaryDataOutput };
}

function copyOutput(output: RequestedOutput): RequestedOutput {
  return output.parameters === undefined
    ? { name: output.name }
    : { name: output.name, parameters: { ...output.parameters } };
}

/**
 * The engine's request for `target`. Not `{ ...target, parameters, inputs }`: on Node 20 an object spread followed
 * by more properties takes a slow path of 1 to 3 µs (bench micro-measure, 2026-12-06), once per request.
 */
export function inferRequestFor(target: InferTarget, parameters: Parameters, inputs: InferInput[]): InferRequest {
  const request: InferRequest = { modelName: target.modelName, parameters, inputs };
  if (target.modelVersion !== undefined) request.modelVersion = target.modelVersion;
  return request;
}

/** The parameter rules shared with gRPC (../request-parameters.ts). */
export { checkReservedParameters };

export interface InputHeader {
  name: string;
  datatype: DataType;
  shape: number[];
  parameters: Parameters | undefined;
  binaryDataSize: number | undefined;
  data: unknown;
}

/** Up to this many inputs, duplicate names are found by comparing with the earlier ones (no Set per request). */
const LINEAR_NAME_CHECK = 16;

function decodeInputHeaders(value: unknown): InputHeader[] {
  if (!Array.isArray(value)) throw invalidField("inputs", `must be an array, got ${kindOf(value)}`);
  const seen = value.length > LINEAR_NAME_CHECK ? new Set<string>() : undefined;
  const headers: InputHeader[] = [];
  for (let i = 0; i < value.length; i++) headers.push(decodeInputHeader(value[i], i, headers, seen));
  return headers;
}

/**
 * One entry of `inputs`. Field paths ('inputs[0].shape') are built only for an error: a template string per field
 * per request is garbage on the hot path. `earlier`/`seen`: the inputs before it, to refuse a repeated name.
 */
function decodeInputHeader(
  entry: unknown,
  i: number,
  earlier: readonly InputHeader[],
  seen: Set<string> | undefined,
): InputHeader {
  const path = (field?: string): string => (field === undefined ? `inputs[${i}]` : `inputs[${i}].${field}`);
  const input = isJsonObject(entry) ? entry : expectObject(entry, path());
  const nameValue = input["name"];
  const name = typeof nameValue === "string" ? nameValue : expectString(nameValue, path("name"));
  if (name === "") throw invalidField(path("name"), "must not be empty");
  const repeated = seen !== undefined ? seen.has(name) : earlier.some((header) => header.name === name);
  if (repeated) throw new OperonError("INVALID_ARG", `input '${name}' appears more than once in 'inputs'`);
  seen?.add(name);
  const datatypeValue = input["datatype"];
  const datatypeText =
    typeof datatypeValue === "string" ? datatypeValue : expectString(datatypeValue, path("datatype"));
  if (!isDataType(datatypeText)) {
    throw invalidField(path("datatype"), `must be one of ${DATATYPES.join(", ")}; got '${datatypeText}'`);
  }
  const shape = decodeShape(input["shape"], path);
  const parametersValue = input["parameters"];
  const parameters =
    parametersValue === undefined ? undefined : optionalParameters(parametersValue, path("parameters"));
  if (parameters === undefined && input["data"] !== undefined) {
    // The common input: no parameters, JSON data.
    return {
      name,
      datatype: datatypeText,
      shape,
      parameters: undefined,
      binaryDataSize: undefined,
      data: input["data"],
    };
  }
  const binaryDataSize = parameters?.["binary_data_size"];
  if (
    binaryDataSize !== undefined &&
    (typeof binaryDataSize !== "number" || !Number.isSafeInteger(binaryDataSize) || binaryDataSize < 0)
  ) {
    throw invalidField(
      path("parameters.binary_data_size"),
      `must be a non-negative integer, got ${JSON.stringify(binaryDataSize)}`,
    );
  }
  const own = parameters === undefined ? undefined : withoutKey(parameters, "binary_data_size");
  const data = input["data"];
  if (binaryDataSize !== undefined && data !== undefined) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${name}' has both 'data' and a binary_data_size parameter; send one or the other`,
    );
  }
  const inSharedMemory = parameters?.["shared_memory_region"] !== undefined;
  if (inSharedMemory && (data !== undefined || binaryDataSize !== undefined)) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${name}' names a shared_memory_region and also carries data; send one or the other`,
    );
  }
  if (binaryDataSize === undefined && data === undefined && !inSharedMemory) {
    throw invalidField(path("data"), `is missing for input '${name}', which has no binary_data_size parameter`);
  }
  return {
    name,
    datatype: datatypeText,
    shape,
    parameters: own !== undefined && Object.keys(own).length > 0 ? own : undefined,
    binaryDataSize: binaryDataSize as number | undefined,
    data,
  };
}

/**
 * `parameters` less an HTTP-only key the frontend consumed (binary_data_output, binary_data_size): a fresh object
 * when the key is there. Not `delete`: it turns the object into a slow dictionary, and the request's parameters are
 * read on every step after this one.
 */
function withoutKey(parameters: Parameters, key: string): Parameters {
  if (parameters[key] === undefined) return parameters;
  const rest: Parameters = {};
  for (const name in parameters) if (name !== key) rest[name] = parameters[name]!;
  return rest;
}

function decodeShape(value: unknown, path: (field: string) => string): number[] {
  let valid = Array.isArray(value);
  if (valid) {
    const dims = value as unknown[];
    for (let d = 0; d < dims.length && valid; d++) {
      const dim = dims[d];
      valid = typeof dim === "number" && Number.isSafeInteger(dim) && dim >= 0;
    }
  }
  if (!valid) {
    throw invalidField(
      path("shape"),
      `must be an array of non-negative integers, got ${JSON.stringify(value) ?? "nothing"}`,
    );
  }
  return value as number[];
}

/** No binary data and no input asking for any (an all-JSON body): every input's chunk is undefined. */
function noBinaryWanted(headers: readonly InputHeader[]): boolean {
  for (const header of headers) if (header.binaryDataSize !== undefined) return false;
  return true;
}

function binaryChunks(headers: readonly InputHeader[], binary: Buffer | undefined): Array<Buffer | undefined> {
  if (binary === undefined && noBinaryWanted(headers)) return new Array<Buffer | undefined>(headers.length);
  if (binary === undefined) {
    const wantsBinary = headers.find((header) => header.binaryDataSize !== undefined && header.binaryDataSize > 0);
    if (wantsBinary !== undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${wantsBinary.name}' has binary_data_size ${wantsBinary.binaryDataSize} but the request has no binary data; send the JSON length in the Inference-Header-Content-Length header`,
      );
    }
    binary = Buffer.alloc(0);
  }
  return assignBinaryChunks(headers, binary);
}

/** `shared`: the header serves other requests too, so the shape and parameters are copied (assembleInferRequest). */
function toInferInput(header: InputHeader, chunk: Buffer | undefined, shared: boolean): InferInput {
  const { name, datatype } = header;
  const shape = shared ? header.shape.slice() : header.shape;
  const data = chunk ?? jsonDataToBuffer(name, datatype, shape, header.data);
  const input: InferInput = { name, datatype, shape, data };
  // O(1) for fixed-size types; BYTES would need a walk over every element, left to the engine.
  if (chunk !== undefined && elementByteSize(datatype) !== undefined) assertTensorByteSize(input);
  if (header.parameters !== undefined) input.parameters = shared ? { ...header.parameters } : header.parameters;
  return input;
}

function sharedMemoryInput(header: InputHeader): InferInput {
  const { name, datatype, shape } = header;
  return {
    name,
    datatype,
    shape,
    data: Buffer.alloc(0),
    ...(header.parameters ? { parameters: header.parameters } : {}),
  };
}

function decodeRequestedOutputs(value: unknown): RequestedOutput[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalidField("outputs", `must be an array, got ${kindOf(value)}`);
  return value.map((entry, i) => {
    const path = `outputs[${i}]`;
    const output = expectObject(entry, path);
    const name = expectString(output["name"], `${path}.name`);
    const parameters = optionalParameters(output["parameters"], `${path}.parameters`);
    optionalBoolean(parameters?.["binary_data"], `${path}.parameters.binary_data`);
    const requested: RequestedOutput = { name };
    if (parameters !== undefined) requested.parameters = parameters;
    return requested;
  });
}
