import { isDataType } from "@operon/protocol/datatypes";
import type { InferInput, InferRequest, RequestedOutput } from "@operon/protocol/inference";
import { assertTensorByteSize } from "@operon/protocol/tensor";
import { DEFAULT_INFER_MESSAGE_BUDGET } from "./protobuf-budget.js";

/**
 * The common ModelInferRequest read straight from its bytes: names, a
 * version and an id, inputs of a name, a datatype and a packed shape, their
 * data in raw_input_contents, and requested outputs by name. That is what
 * Triton's clients send for a plain inference, and reading it here skips
 * protobufjs's generic decode, its toObject copy (every int64 a string) and
 * the conversion to the engine's request: on a gateway at concurrency 1 the
 * three cost ~25 µs a call, most of it in allocation.
 *
 * Anything else (parameters, typed `contents`, shared memory, an unknown
 * field, a non-ASCII name, a dimension of 2^49 or more, more inputs or
 * dimensions than the budget allows, malformed bytes) answers undefined, and
 * the caller decodes the message the generic way, which accepts or refuses it
 * with its own errors. So for any message this gives what the generic path
 * gives, or nothing (plain-model-infer.test.ts checks the two side by side).
 * Tensor data are views of `message`, as protobufjs gives them.
 */
export function decodePlainModelInfer(message: Buffer): InferRequest | undefined {
  try {
    return readRequest(message);
  } catch (error) {
    if (error === NOT_PLAIN) return undefined;
    throw error;
  }
}

/** Thrown inside the reader when the message is not plain: the generic decoder takes it. */
const NOT_PLAIN = Symbol("not a plain ModelInferRequest");

const LENGTH_DELIMITED = 2;

// Field numbers of grpc_service.proto: ModelInferRequest, InferInputTensor, InferRequestedOutputTensor.
const MODEL_NAME = 1;
const MODEL_VERSION = 2;
const ID = 3;
const INPUTS = 5;
const OUTPUTS = 6;
const RAW_INPUT_CONTENTS = 7;
const INPUT_NAME = 1;
const INPUT_DATATYPE = 2;
const INPUT_SHAPE = 3;
const OUTPUT_NAME = 1;

/** Varints of at most this many bytes are read (< 2^49: exact as numbers); longer ones go the generic way. */
const MAX_VARINT_BYTES = 7;

/** A cursor over one message (or sub-message) of the bytes. */
class WireReader {
  constructor(
    readonly bytes: Buffer,
    public at: number,
    readonly end: number,
  ) {}

  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i += 1) {
      if (this.at >= this.end) throw NOT_PLAIN;
      const byte = this.bytes[this.at++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw NOT_PLAIN;
  }

  /** The next field's key: field number × 8 + wire type. */
  key(): number {
    return this.varint();
  }

  /** A length-delimited payload's end; `at` is its start. */
  payloadEnd(): number {
    const size = this.varint();
    const end = this.at + size;
    if (end > this.end) throw NOT_PLAIN;
    return end;
  }

  /** An ASCII string field (protobufjs and this read ASCII alike; other bytes go the generic way). */
  ascii(): string {
    const end = this.payloadEnd();
    for (let i = this.at; i < end; i += 1) if (this.bytes[i]! >= 0x80) throw NOT_PLAIN;
    const text = this.bytes.toString("latin1", this.at, end);
    this.at = end;
    return text;
  }
}

function readRequest(message: Buffer): InferRequest {
  const wire = new WireReader(message, 0, message.length);
  const budget = DEFAULT_INFER_MESSAGE_BUDGET;
  let modelName = "";
  let modelVersion = "";
  let id = "";
  const inputs: InferInput[] = [];
  const raws: Buffer[] = [];
  let outputs: RequestedOutput[] | undefined;
  while (wire.at < wire.end) {
    const key = wire.key();
    if ((key & 7) !== LENGTH_DELIMITED) throw NOT_PLAIN;
    const field = key >>> 3;
    if (field === MODEL_NAME) modelName = wire.ascii();
    else if (field === MODEL_VERSION) modelVersion = wire.ascii();
    else if (field === ID) id = wire.ascii();
    else if (field === RAW_INPUT_CONTENTS) {
      const end = wire.payloadEnd();
      if (raws.length >= budget.maxInputs) throw NOT_PLAIN;
      raws.push(message.subarray(wire.at, end));
      wire.at = end;
    } else if (field === INPUTS) {
      if (inputs.length >= budget.maxInputs) throw NOT_PLAIN;
      inputs.push(readInput(wire, wire.payloadEnd()));
    } else if (field === OUTPUTS) {
      outputs ??= [];
      if (outputs.length >= budget.maxOutputs) throw NOT_PLAIN;
      outputs.push({ name: readOutputName(wire, wire.payloadEnd()) });
    } else throw NOT_PLAIN;
  }
  // Inputs without raw data carry `contents`, or are in shared memory: both the generic way, as is a count mismatch.
  if (raws.length === 0 || raws.length !== inputs.length) throw NOT_PLAIN;
  for (let i = 0; i < inputs.length; i += 1) {
    const input = inputs[i]!;
    input.data = raws[i]!;
    assertTensorByteSize(input);
  }
  // The generic decoder's shape (grpc-infer-codec.ts decodeInferRequest): optional fields only when set.
  const request: InferRequest = { modelName, parameters: {}, inputs };
  if (modelVersion !== "") request.modelVersion = modelVersion;
  if (id !== "") request.id = id;
  if (outputs !== undefined) request.outputs = outputs;
  return request;
}

const NO_DATA = Buffer.alloc(0);

function readInput(wire: WireReader, end: number): InferInput {
  const sub = new WireReader(wire.bytes, wire.at, end);
  let name = "";
  let datatype = "";
  const shape: number[] = [];
  while (sub.at < end) {
    const key = sub.key();
    if ((key & 7) !== LENGTH_DELIMITED) throw NOT_PLAIN;
    const field = key >>> 3;
    if (field === INPUT_NAME) name = sub.ascii();
    else if (field === INPUT_DATATYPE) datatype = sub.ascii();
    else if (field === INPUT_SHAPE) {
      // Packed int64s (proto3's encoding); more than one packed run appends, as protobuf does.
      const shapeEnd = sub.payloadEnd();
      const dims = new WireReader(sub.bytes, sub.at, shapeEnd);
      while (dims.at < shapeEnd) {
        if (shape.length >= DEFAULT_INFER_MESSAGE_BUDGET.maxShapeDims) throw NOT_PLAIN;
        shape.push(dims.varint());
      }
      sub.at = shapeEnd;
    } else throw NOT_PLAIN;
  }
  if (!isDataType(datatype)) throw NOT_PLAIN;
  wire.at = end;
  return { name, datatype, shape, data: NO_DATA };
}

function readOutputName(wire: WireReader, end: number): string {
  const sub = new WireReader(wire.bytes, wire.at, end);
  let name = "";
  while (sub.at < end) {
    const key = sub.key();
    if (key !== ((OUTPUT_NAME << 3) | LENGTH_DELIMITED)) throw NOT_PLAIN;
    name = sub.ascii();
  }
  wire.at = end;
  return name;
}
