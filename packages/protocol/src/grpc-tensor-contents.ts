import { type DataType, elementCount } from "./datatypes.js";
import { OperonError } from "./errors.js";
import { type Tensor, decodeBytesElements, encodeBytesElements } from "./tensor.js";

/** A 64-bit integer as protobuf loaders hand it over (decimal string with `longs: String`). */
export type Int64Value = string | number | bigint;

/**
 * gRPC InferTensorContents as @grpc/proto-loader decodes it (keepCase).
 * 64-bit fields may be strings, numbers or bigints on input; on output they
 * are decimal strings so no precision is lost whatever `longs` is in use.
 */
export interface InferTensorContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: Int64Value[];
  uint_contents?: number[];
  uint64_contents?: Int64Value[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

export type ContentsField = keyof InferTensorContents;

const CONTENTS_FIELDS: readonly ContentsField[] = [
  "bool_contents",
  "int_contents",
  "int64_contents",
  "uint_contents",
  "uint64_contents",
  "fp32_contents",
  "fp64_contents",
  "bytes_contents",
];

const FIELD_OF: Record<DataType, ContentsField | undefined> = {
  BOOL: "bool_contents",
  INT8: "int_contents",
  INT16: "int_contents",
  INT32: "int_contents",
  INT64: "int64_contents",
  UINT8: "uint_contents",
  UINT16: "uint_contents",
  UINT32: "uint_contents",
  UINT64: "uint64_contents",
  FP32: "fp32_contents",
  FP64: "fp64_contents",
  BYTES: "bytes_contents",
  FP16: undefined,
  BF16: undefined,
};

/** The typed-contents field carrying a datatype; undefined for FP16/BF16, which only travel raw. */
export function contentsFieldOf(datatype: DataType): ContentsField | undefined {
  return FIELD_OF[datatype];
}

interface TensorHeader {
  name: string;
  datatype: DataType;
  shape: readonly number[];
}

/**
 * Converts typed contents into Operon's raw little-endian data for one
 * input. Only the field matching the datatype may hold values, and it must
 * hold exactly as many as the shape has elements. Out-of-range values are
 * rejected rather than silently wrapped.
 */
export function tensorDataFromContents(input: TensorHeader, contents: InferTensorContents): Buffer {
  const { name, datatype } = input;
  const field = FIELD_OF[datatype];
  if (field === undefined) {
    throw invalid(name, `${datatype} has no typed contents field; send it in raw_input_contents`);
  }
  for (const other of CONTENTS_FIELDS) {
    if (other !== field && (contents[other]?.length ?? 0) > 0) {
      throw invalid(name, `datatype ${datatype} must use ${field}, but ${other} holds values`);
    }
  }
  const values = contents[field] ?? [];
  const count = elementCount(input.shape);
  if (values.length !== count) {
    throw invalid(
      name,
      `expected ${count} elements in ${field} for shape [${input.shape.join(",")}], got ${values.length}`,
    );
  }
  return encodeValues(name, datatype, values);
}

function encodeValues(name: string, datatype: DataType, values: ReadonlyArray<unknown>): Buffer {
  switch (datatype) {
    case "BOOL": {
      const out = Buffer.allocUnsafe(values.length);
      values.forEach((v, i) => out.writeUInt8(v ? 1 : 0, i));
      return out;
    }
    case "INT8":
    case "INT16":
    case "INT32":
    case "UINT8":
    case "UINT16":
    case "UINT32":
      return encodeSmallInts(name, datatype, values);
    case "INT64":
    case "UINT64": {
      const out = Buffer.allocUnsafe(values.length * 8);
      values.forEach((v, i) => {
        const big = toBigInt(name, v);
        if (datatype === "INT64") {
          if (big < -(2n ** 63n) || big >= 2n ** 63n) throw outOfRange(name, datatype, v, i);
          out.writeBigInt64LE(big, i * 8);
        } else {
          if (big < 0n || big >= 2n ** 64n) throw outOfRange(name, datatype, v, i);
          out.writeBigUInt64LE(big, i * 8);
        }
      });
      return out;
    }
    case "FP32": {
      const out = Buffer.allocUnsafe(values.length * 4);
      values.forEach((v, i) => out.writeFloatLE(toNumber(name, v), i * 4));
      return out;
    }
    case "FP64": {
      const out = Buffer.allocUnsafe(values.length * 8);
      values.forEach((v, i) => out.writeDoubleLE(toNumber(name, v), i * 8));
      return out;
    }
    case "BYTES":
      return encodeBytesElements(values.map((v) => toBuffer(name, v)));
    default:
      throw invalid(name, `${datatype} has no typed contents field; send it in raw_input_contents`);
  }
}

const SMALL_INT: Record<string, { size: 1 | 2 | 4; min: number; max: number; signed: boolean }> = {
  INT8: { size: 1, min: -128, max: 127, signed: true },
  INT16: { size: 2, min: -32768, max: 32767, signed: true },
  INT32: { size: 4, min: -2147483648, max: 2147483647, signed: true },
  UINT8: { size: 1, min: 0, max: 255, signed: false },
  UINT16: { size: 2, min: 0, max: 65535, signed: false },
  UINT32: { size: 4, min: 0, max: 4294967295, signed: false },
};

function encodeSmallInts(name: string, datatype: DataType, values: ReadonlyArray<unknown>): Buffer {
  const spec = SMALL_INT[datatype];
  if (spec === undefined) throw new OperonError("INTERNAL", `no integer layout for ${datatype}`);
  const out = Buffer.allocUnsafe(values.length * spec.size);
  values.forEach((v, i) => {
    const n = toNumber(name, v);
    if (!Number.isInteger(n) || n < spec.min || n > spec.max) throw outOfRange(name, datatype, v, i);
    const offset = i * spec.size;
    if (spec.signed) out.writeIntLE(n, offset, spec.size);
    else out.writeUIntLE(n, offset, spec.size);
  });
  return out;
}

/**
 * Converts a tensor's raw data into typed contents (the inverse of
 * tensorDataFromContents). 64-bit integers come back as decimal strings.
 * Throws INVALID_ARG for FP16/BF16, which have no typed field.
 */
export function contentsFromTensorData(tensor: Tensor): InferTensorContents {
  const { name, datatype, data } = tensor;
  switch (datatype) {
    case "BOOL":
      return { bool_contents: Array.from(data, (b) => b !== 0) };
    case "INT8":
    case "INT16":
    case "INT32":
    case "UINT8":
    case "UINT16":
    case "UINT32": {
      const spec = SMALL_INT[datatype];
      if (spec === undefined) throw new OperonError("INTERNAL", `no integer layout for ${datatype}`);
      const values = readEach(data, spec.size, (offset) =>
        spec.signed ? data.readIntLE(offset, spec.size) : data.readUIntLE(offset, spec.size),
      );
      return spec.signed ? { int_contents: values } : { uint_contents: values };
    }
    case "INT64":
      return { int64_contents: readEach(data, 8, (offset) => data.readBigInt64LE(offset).toString()) };
    case "UINT64":
      return { uint64_contents: readEach(data, 8, (offset) => data.readBigUInt64LE(offset).toString()) };
    case "FP32":
      return { fp32_contents: readEach(data, 4, (offset) => data.readFloatLE(offset)) };
    case "FP64":
      return { fp64_contents: readEach(data, 8, (offset) => data.readDoubleLE(offset)) };
    case "BYTES":
      return { bytes_contents: decodeBytesElements(data, name) };
    default:
      throw new OperonError(
        "INVALID_ARG",
        `tensor '${name}': ${datatype} has no typed contents field; use raw contents`,
      );
  }
}

function readEach<T>(data: Buffer, size: number, read: (offset: number) => T): T[] {
  const out: T[] = new Array<T>(Math.floor(data.length / size));
  for (let i = 0; i < out.length; i++) out[i] = read(i * size);
  return out;
}

function toNumber(name: string, value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value))) return Number(value);
  if (typeof value === "bigint") return Number(value);
  throw invalid(name, `expected a number, got ${describe(value)}`);
}

function toBigInt(name: string, value: unknown): bigint {
  try {
    if (typeof value === "bigint") return value;
    if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
    if (typeof value === "string" && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  } catch {
    // falls through to the error below
  }
  throw invalid(name, `expected an integer, got ${describe(value)}`);
}

function toBuffer(name: string, value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return Buffer.from(value, "utf8");
  throw invalid(name, `expected bytes, got ${describe(value)}`);
}

function describe(value: unknown): string {
  return typeof value === "string" ? `'${value}'` : String(value);
}

function invalid(name: string, message: string): OperonError {
  return new OperonError("INVALID_ARG", `input '${name}': ${message}`);
}

function outOfRange(name: string, datatype: DataType, value: unknown, index: number): OperonError {
  return invalid(name, `element ${index} (${describe(value)}) is out of range for ${datatype}`);
}
