import type * as grpc from "@grpc/grpc-js";
import type * as protoLoader from "@grpc/proto-loader";
import type { InferResponse } from "@operon/protocol/inference";
import { encodeInferResponse } from "./grpc-infer-codec.js";
import { INFERENCE_SERVICE } from "./grpc-wire.js";

/**
 * ModelInfer's answer, written straight to its protobuf bytes when it is
 * plain (no parameters on the response or its outputs, shapes of
 * non-negative integers), else the object protobufjs serializes
 * (encodeInferResponse). The bytes skip protobufjs's fromObject copy and
 * its generic writer; servePreEncodedResponses lets grpc-js send them as
 * they are. plain-model-infer-response.test.ts holds the two to the same
 * decoded message.
 */
export function encodeModelInferAnswer(response: InferResponse, requestId: string | undefined): object {
  return encodePlainModelInferResponse(response, requestId) ?? encodeInferResponse(response, requestId);
}

/** Makes ModelInfer's response serializer pass a Buffer (encodeModelInferAnswer's bytes) through unchanged. */
export function servePreEncodedResponses(definition: protoLoader.PackageDefinition): void {
  const service = definition[INFERENCE_SERVICE] as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
  const method = service["ModelInfer"]!;
  const serialize = method.responseSerialize;
  method.responseSerialize = (value: unknown) => (Buffer.isBuffer(value) ? value : serialize(value));
}

// Field numbers of grpc_service.proto: ModelInferResponse and its InferOutputTensor.
const MODEL_NAME = 1;
const MODEL_VERSION = 2;
const ID = 3;
const OUTPUTS = 5;
const RAW_OUTPUT_CONTENTS = 6;
const OUTPUT_NAME = 1;
const OUTPUT_DATATYPE = 2;
const OUTPUT_SHAPE = 3;

const LENGTH_DELIMITED = 2;

/** The response's bytes, or undefined when it is not plain. */
export function encodePlainModelInferResponse(
  response: InferResponse,
  requestId: string | undefined,
): Buffer | undefined {
  if (response.parameters !== undefined && hasKeys(response.parameters)) return undefined;
  const outputs = response.outputs;
  const id = response.id ?? requestId ?? "";
  // Sizes first (every length prefix is known before a byte is written), then one buffer.
  const outputSizes: number[] = [];
  let size = stringFieldSize(response.modelName) + stringFieldSize(response.modelVersion) + stringFieldSize(id);
  for (const output of outputs) {
    const parameters = (output as { parameters?: object }).parameters;
    if (parameters !== undefined && hasKeys(parameters)) return undefined;
    let shapeBytes = 0;
    for (const dim of output.shape) {
      if (!Number.isSafeInteger(dim) || dim < 0) return undefined;
      shapeBytes += varintSize(dim);
    }
    const outputSize =
      stringFieldSize(output.name) +
      stringFieldSize(output.datatype) +
      (shapeBytes > 0 ? 1 + varintSize(shapeBytes) + shapeBytes : 0);
    outputSizes.push(outputSize);
    size += 1 + varintSize(outputSize) + outputSize;
    size += 1 + varintSize(output.data.length) + output.data.length;
  }
  const bytes = Buffer.allocUnsafe(size);
  let at = writeString(bytes, 0, MODEL_NAME, response.modelName);
  at = writeString(bytes, at, MODEL_VERSION, response.modelVersion);
  at = writeString(bytes, at, ID, id);
  for (let i = 0; i < outputs.length; i += 1) {
    const output = outputs[i]!;
    bytes[at++] = (OUTPUTS << 3) | LENGTH_DELIMITED;
    at = writeVarint(bytes, at, outputSizes[i]!);
    at = writeString(bytes, at, OUTPUT_NAME, output.name);
    at = writeString(bytes, at, OUTPUT_DATATYPE, output.datatype);
    let shapeBytes = 0;
    for (const dim of output.shape) shapeBytes += varintSize(dim);
    if (shapeBytes > 0) {
      bytes[at++] = (OUTPUT_SHAPE << 3) | LENGTH_DELIMITED;
      at = writeVarint(bytes, at, shapeBytes);
      for (const dim of output.shape) at = writeVarint(bytes, at, dim);
    }
  }
  for (const output of outputs) {
    bytes[at++] = (RAW_OUTPUT_CONTENTS << 3) | LENGTH_DELIMITED;
    at = writeVarint(bytes, at, output.data.length);
    bytes.set(output.data, at);
    at += output.data.length;
  }
  return bytes;
}

/** Writes `value` at `at`; returns the offset after it. */
function writeVarint(bytes: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    bytes[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  bytes[at++] = value;
  return at;
}

/** Writes a string field (nothing for ""); returns the offset after it. ASCII is copied by hand: a call into Buffer's encoder costs more than the few characters of a name. */
function writeString(bytes: Buffer, at: number, field: number, text: string): number {
  if (text === "") return at;
  bytes[at++] = (field << 3) | LENGTH_DELIMITED;
  if (isAscii(text)) {
    at = writeVarint(bytes, at, text.length);
    for (let i = 0; i < text.length; i += 1) bytes[at++] = text.charCodeAt(i);
    return at;
  }
  const length = Buffer.byteLength(text, "utf8");
  at = writeVarint(bytes, at, length);
  return at + bytes.write(text, at, length, "utf8");
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}

function hasKeys(object: object): boolean {
  for (const _ in object) return true;
  return false;
}

/** A length-delimited string field's bytes (key, length, text); an empty string is not written (proto3's default). */
function stringFieldSize(text: string): number {
  if (text === "") return 0;
  const length = isAscii(text) ? text.length : Buffer.byteLength(text, "utf8");
  return 1 + varintSize(length) + length;
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size += 1;
  }
  return size;
}
