import { type DataType, elementByteSize, elementCount } from "./datatypes.js";
import { OperonError } from "./errors.js";

/**
 * A tensor as it moves inside Operon: raw little-endian row-major bytes,
 * never per-element JS values. BYTES tensors hold Triton's binary layout:
 * per element a 4-byte little-endian length then the bytes.
 */
export interface Tensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Buffer;
}

/** Request/response parameters (KServe v2 `parameters`, gRPC InferParameter). */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

/**
 * Checks that data's byte length agrees with shape and datatype; for BYTES,
 * that the length-prefixed elements exactly fill the buffer and their count
 * matches the shape. Throws INVALID_ARG naming the tensor.
 */
export function assertTensorByteSize(tensor: Tensor): void {
  const count = elementCount(tensor.shape);
  const size = elementByteSize(tensor.datatype);
  if (size !== undefined) {
    const expected = count * size;
    if (tensor.data.length !== expected) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${tensor.name}': expected ${expected} bytes for shape [${tensor.shape.join(",")}] of ${tensor.datatype}, got ${tensor.data.length}`,
      );
    }
    return;
  }
  const found = countBytesElements(tensor.data, tensor.name);
  if (found !== count) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${tensor.name}': expected ${count} BYTES elements for shape [${tensor.shape.join(",")}], got ${found}`,
    );
  }
}

/** Counts length-prefixed BYTES elements; throws INVALID_ARG when the buffer is truncated. */
export function countBytesElements(data: Buffer, tensorName: string): number {
  let offset = 0;
  let count = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': truncated BYTES element length at byte ${offset}`);
    }
    const length = data.readUInt32LE(offset);
    offset += 4 + length;
    if (offset > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': BYTES element ${count} runs past the end of the data`);
    }
    count += 1;
  }
  return count;
}

/** Splits Triton-layout BYTES data into its elements (views, no copies). */
export function decodeBytesElements(data: Buffer, tensorName = "tensor"): Buffer[] {
  const elements: Buffer[] = [];
  let offset = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': truncated BYTES element length at byte ${offset}`);
    }
    const length = data.readUInt32LE(offset);
    const start = offset + 4;
    const end = start + length;
    if (end > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': BYTES element ${elements.length} runs past the end of the data`);
    }
    elements.push(data.subarray(start, end));
    offset = end;
  }
  return elements;
}

/** Joins elements into Triton-layout BYTES data. */
export function encodeBytesElements(elements: ReadonlyArray<Buffer | string>): Buffer {
  const buffers = elements.map((element) => (typeof element === "string" ? Buffer.from(element, "utf8") : element));
  const total = buffers.reduce((sum, buffer) => sum + 4 + buffer.length, 0);
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const buffer of buffers) {
    out.writeUInt32LE(buffer.length, offset);
    buffer.copy(out, offset + 4);
    offset += 4 + buffer.length;
  }
  return out;
}
