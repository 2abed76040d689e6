import { type DataType, elementByteSize, elementCount, isDataType } from "@operon/protocol/datatypes";
import { jsonDataToBuffer } from "@operon/protocol/json-tensor-codec";
import type { TensorMetadata } from "@operon/protocol/inference";
import { encodeBytesElements } from "@operon/protocol/tensor";
import { numberToBfloat16Bits, numberToFloat16Bits } from "@operon/protocol/half-float";
import { PerfError, messageOf } from "./perf-error.js";
import { hasVariableDims, suggestDims } from "./suggested-dims.js";

/**
 * The request inputs of a perf run, built once from the model's metadata
 * before any load is sent: perf_analyzer's --input-data (zero, random, or a
 * JSON file), --shape for variable dimensions and --batch-size for batching
 * models. The result is raw little-endian bytes per input, which the
 * clients turn into one fixed request body each.
 */

/**
 * Where the input values come from. `file` carries the parsed JSON of an
 * --input-data file; `path` names it in messages (a path on disk, or the
 * name of a sample uploaded in the console).
 */
export type InputDataSource = { kind: "zero" } | { kind: "random" } | { kind: "file"; path: string; json: unknown };

/** One model input as a request must fill it: dims exclude the batch dimension; -1 = variable. */
export interface InputSpec {
  name: string;
  datatype: DataType;
  dims: number[];
  /** True when the model batches (max_batch_size > 0): the request shape is [batch, ...dims]. */
  batched: boolean;
  /** True when its variable dims were filled with suggested sizes (suggested-dims.ts), not given. */
  suggested?: boolean;
}

/** One input of a prepared request: full shape (batch included) and its raw bytes. */
export interface PreparedInput {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Buffer;
}

/** The inputs of one request, in the model's input order. */
export type PreparedInputSet = readonly PreparedInput[];

export interface InputSpecOptions {
  /** The model's max_batch_size from its config; 0 = the model does not batch. */
  maxBatchSize: number;
  batchSize: number;
  /** --shape values by input name: the dims without the batch dimension. */
  shapes: Readonly<Record<string, readonly number[]>>;
  /**
   * Variable dims no --shape names get a suggested size (suggestDims) instead
   * of an error: the control plane's runs, which have no person to ask.
   */
  fillVariableDims?: boolean;
}

/** Length of the random strings generated for BYTES inputs. */
export const RANDOM_STRING_LENGTH = 16;
/** Random integers are drawn from [0, RANDOM_INT_MAX]: valid for every integer type and plausible as indices. */
export const RANDOM_INT_MAX = 127;

/**
 * Parses one --shape value, `NAME:d1,d2,...` (perf_analyzer's form; the
 * name may itself contain ':' — the last one separates). Dims are >= 0;
 * an empty list is a scalar.
 */
export function parseShapeFlag(text: string): { name: string; dims: number[] } {
  const colon = text.lastIndexOf(":");
  const name = colon > 0 ? text.slice(0, colon) : "";
  if (name === "")
    throw new PerfError("BAD_OPTIONS", `--shape '${text}': expected NAME:d1,d2,... (for example INPUT0:1,16)`);
  const list = text.slice(colon + 1).trim();
  const dims = list === "" ? [] : list.split(",").map((part) => part.trim());
  for (const dim of dims) {
    if (!/^[0-9]+$/.test(dim))
      throw new PerfError("BAD_OPTIONS", `--shape '${text}': '${dim}' is not a dimension (a whole number >= 0)`);
  }
  return { name, dims: dims.map(Number) };
}

/**
 * Resolves the model's inputs into specs: the batch dimension is split off
 * for batching models, --shape values fill variable dims (fixed dims must
 * agree), and --batch-size is checked against max_batch_size.
 */
export function resolveInputSpecs(inputs: readonly TensorMetadata[], options: InputSpecOptions): InputSpec[] {
  const { maxBatchSize, batchSize } = options;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new PerfError("BAD_OPTIONS", `--batch-size must be a whole number >= 1, got ${batchSize}`);
  }
  if (maxBatchSize === 0 && batchSize !== 1) {
    throw new PerfError(
      "BAD_OPTIONS",
      `--batch-size ${batchSize}: the model does not batch (max_batch_size 0); use --batch-size 1`,
    );
  }
  if (maxBatchSize > 0 && batchSize > maxBatchSize) {
    throw new PerfError("BAD_OPTIONS", `--batch-size ${batchSize} exceeds the model's max_batch_size ${maxBatchSize}`);
  }
  const names = new Set(inputs.map((input) => input.name));
  for (const name of Object.keys(options.shapes)) {
    if (!names.has(name)) {
      throw new PerfError(
        "BAD_OPTIONS",
        `--shape names input '${name}', which the model does not have (inputs: ${[...names].join(", ")})`,
      );
    }
  }
  return inputs.map((input) => {
    if (!isDataType(input.datatype)) {
      throw new PerfError(
        "BAD_OPTIONS",
        `input '${input.name}' has datatype '${input.datatype}', which perf cannot generate`,
      );
    }
    const batched = maxBatchSize > 0;
    const modelDims = batched ? input.shape.slice(1) : [...input.shape];
    const given = options.shapes[input.name];
    if (given === undefined && options.fillVariableDims === true && hasVariableDims(modelDims)) {
      return { name: input.name, datatype: input.datatype, dims: suggestDims(modelDims), batched, suggested: true };
    }
    const dims = given === undefined ? modelDims : mergeDims(input.name, modelDims, given);
    return { name: input.name, datatype: input.datatype, dims, batched };
  });
}

/** The full request shape of a spec, given dims with no variable dimension left. */
export function requestShape(spec: InputSpec, dims: readonly number[], batchSize: number): number[] {
  return spec.batched ? [batchSize, ...dims] : [...dims];
}

/**
 * Builds the request input sets: one for generated data, one per entry of
 * an --input-data file (requests cycle through them). Throws BAD_OPTIONS
 * when a variable dimension has no size or file data does not fit.
 */
export function prepareInputSets(
  specs: readonly InputSpec[],
  batchSize: number,
  source: InputDataSource,
  random: () => number = Math.random,
): PreparedInputSet[] {
  if (source.kind === "file") return inputSetsFromFile(specs, batchSize, source.path, source.json);
  return [
    specs.map((spec) => {
      const dims = fixedDims(spec, spec.dims, "");
      const shape = requestShape(spec, dims, batchSize);
      return {
        name: spec.name,
        datatype: spec.datatype,
        shape,
        data: generateTensorData(spec.datatype, elementCount(shape), source.kind, random),
      };
    }),
  ];
}

/**
 * `count` elements of zero or random data in Triton's raw layout. Random
 * floats are uniform in [0, 1), integers in [0, RANDOM_INT_MAX], BOOL
 * true/false, BYTES random [a-z0-9] strings; zero BYTES elements are "0".
 */
/**
 * The largest FP16 / BF16 values below 1: random values near 1 round up to
 * 1, and random data stays in [0, 1) (for values >= 0 the bit patterns order
 * as the values do).
 */
const FP16_BELOW_ONE = 0x3bff;
const BF16_BELOW_ONE = 0x3f7f;

export function generateTensorData(
  datatype: DataType,
  count: number,
  kind: "zero" | "random",
  random: () => number = Math.random,
): Buffer {
  if (datatype === "BYTES") {
    const elements = Array.from({ length: count }, () =>
      kind === "zero" ? "0" : randomString(RANDOM_STRING_LENGTH, random),
    );
    return encodeBytesElements(elements);
  }
  const size = elementByteSize(datatype)!;
  const out = Buffer.alloc(count * size);
  if (kind === "zero") return out;
  const randomInt = (): number => Math.floor(random() * (RANDOM_INT_MAX + 1));
  for (let i = 0; i < count; i += 1) {
    const offset = i * size;
    switch (datatype) {
      case "BOOL":
        out[offset] = random() < 0.5 ? 0 : 1;
        break;
      case "UINT8":
      case "INT8":
        out[offset] = randomInt();
        break;
      case "UINT16":
      case "INT16":
        out.writeUInt16LE(randomInt(), offset);
        break;
      case "UINT32":
      case "INT32":
        out.writeUInt32LE(randomInt(), offset);
        break;
      case "UINT64":
      case "INT64":
        out.writeBigUInt64LE(BigInt(randomInt()), offset);
        break;
      case "FP16":
        out.writeUInt16LE(Math.min(numberToFloat16Bits(random()), FP16_BELOW_ONE), offset);
        break;
      case "BF16":
        out.writeUInt16LE(Math.min(numberToBfloat16Bits(random()), BF16_BELOW_ONE), offset);
        break;
      case "FP32":
        out.writeFloatLE(random(), offset);
        break;
      case "FP64":
        out.writeDoubleLE(random(), offset);
        break;
    }
  }
  return out;
}

// ---- --input-data file (perf_analyzer's JSON format) ----

/**
 * `{"data": [{"INPUT0": [..] | {"content": [..], "shape": [..]} | {"b64": ".."}, ...}, ...]}`.
 * Values and shapes exclude the batch dimension; with --batch-size N each
 * entry's data is repeated N times to fill the batch.
 */
function inputSetsFromFile(
  specs: readonly InputSpec[],
  batchSize: number,
  path: string,
  json: unknown,
): PreparedInputSet[] {
  const where = `--input-data ${path}`;
  const entries = isRecord(json) && !Array.isArray(json) ? json["data"] : undefined;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new PerfError(
      "BAD_OPTIONS",
      `${where}: expected {"data": [ {<input name>: <values>, ...}, ... ]} with at least one entry`,
    );
  }
  return entries.map((entry, index) => {
    if (!isRecord(entry) || Array.isArray(entry)) {
      throw new PerfError(
        "BAD_OPTIONS",
        `${where}: data[${index}] must be an object of input name -> values (sequence streams are not supported)`,
      );
    }
    return specs.map((spec) => {
      const context = `${where}: data[${index}].${spec.name}`;
      const value = entry[spec.name];
      if (value === undefined) throw new PerfError("BAD_OPTIONS", `${context} is missing`);
      // A bare array is the content itself; an object is {content, shape} or {b64}.
      const content = isRecord(value) && !Array.isArray(value) ? value : { content: value };
      const dims = fixedDims(
        spec,
        content["shape"] !== undefined ? shapeOf(content["shape"], context) : spec.dims,
        context,
      );
      const one = entryData(spec, dims, content, context);
      const shape = requestShape(spec, dims, batchSize);
      const data = spec.batched && batchSize > 1 ? Buffer.concat(Array.from({ length: batchSize }, () => one)) : one;
      return { name: spec.name, datatype: spec.datatype, shape, data };
    });
  });
}

function entryData(spec: InputSpec, dims: number[], content: Record<string, unknown>, context: string): Buffer {
  if (typeof content["b64"] === "string" && spec.datatype === "BYTES") {
    // As perf_analyzer reads it: the decoded bytes are one element (an encoded image, a text), repeated to fill the shape.
    const element = Buffer.from(content["b64"], "base64");
    return encodeBytesElements(Array.from({ length: elementCount(dims) }, () => element));
  }
  if (typeof content["b64"] === "string") {
    const data = Buffer.from(content["b64"], "base64");
    const size = elementByteSize(spec.datatype);
    if (size !== undefined && data.length !== elementCount(dims) * size) {
      throw new PerfError(
        "BAD_OPTIONS",
        `${context}: b64 data is ${data.length} bytes, but shape [${dims.join(",")}] of ${spec.datatype} needs ${elementCount(dims) * size}`,
      );
    }
    return data;
  }
  if (!("content" in content))
    throw new PerfError(
      "BAD_OPTIONS",
      `${context}: expected an array, {"content": [...], "shape": [...]} or {"b64": "..."}`,
    );
  try {
    return jsonDataToBuffer(spec.name, spec.datatype, dims, content["content"]);
  } catch (error) {
    throw new PerfError("BAD_OPTIONS", `${context}: ${messageOf(error)}`, { cause: error });
  }
}

function shapeOf(value: unknown, context: string): number[] {
  if (!Array.isArray(value) || !value.every((dim) => Number.isSafeInteger(dim) && (dim as number) >= 0)) {
    throw new PerfError("BAD_OPTIONS", `${context}.shape must be an array of whole numbers >= 0`);
  }
  return value as number[];
}

// ---- helpers ----

function mergeDims(name: string, modelDims: readonly number[], given: readonly number[]): number[] {
  const shown = `[${modelDims.join(",")}]`;
  if (given.length !== modelDims.length) {
    throw new PerfError(
      "BAD_OPTIONS",
      `--shape ${name}:${given.join(",")} has ${given.length} dims, but the input's shape ${shown} (batch dimension excluded) has ${modelDims.length}`,
    );
  }
  return modelDims.map((dim, i) => {
    const wanted = given[i]!;
    if (dim >= 0 && dim !== wanted) {
      throw new PerfError(
        "BAD_OPTIONS",
        `--shape ${name}:${given.join(",")} conflicts with the input's fixed shape ${shown} at dim ${i}`,
      );
    }
    return wanted;
  });
}

function fixedDims(spec: InputSpec, dims: readonly number[], context: string): number[] {
  if (dims.some((dim) => dim < 0)) {
    throw new PerfError(
      "BAD_OPTIONS",
      `${context === "" ? "" : `${context}: `}input '${spec.name}' has variable shape [${dims.join(",")}]${spec.batched ? " (batch dimension excluded)" : ""}; ` +
        `give its size with --shape ${spec.name}:${dims.map((dim) => (dim < 0 ? "N" : String(dim))).join(",")}`,
    );
  }
  return [...dims];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

function randomString(length: number, random: () => number): string {
  let text = "";
  for (let i = 0; i < length; i += 1) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return text;
}
