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
  /** Empty for a tensor kept in a worker's GPU memory (`device`). */
  data: Buffer;
  /**
   * Set only on an operator's intermediate tensor between two KIND_GPU steps
   * on one GPU (the operator planner asks for it, dag-executor.ts): the bytes
   * stay in the producing worker's GPU memory and the consumer's worker reads
   * them there. Such a tensor never reaches batching, the response cache or
   * a client.
   */
  device?: DeviceTensor;
}

/** Where a tensor kept on a GPU lies, for the worker that reads it (CUDA IPC). */
export interface DeviceTensor {
  /** The CUDA ordinal. */
  gpu: number;
  /** The region's CUDA IPC handle and the tensor's offset in it (OperonHostDeviceIpcHandle: 72 bytes). */
  handle: Buffer;
  byteLength: number;
  /** The producing worker's number for its region, which it holds until the gateway releases it. */
  region: number;
  /** Gateway only: gives the region back to the producing worker (idempotent; a no-op once it exited). */
  release?: () => void;
}

/** Request/response parameters (KServe v2 `parameters`, gRPC InferParameter). */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

/**
 * Checks that data's byte length agrees with shape and datatype; for BYTES,
 * that the length-prefixed elements exactly fill the buffer and their count
 * matches the shape, and that they are at most maxBytesElements. Throws
 * INVALID_ARG naming the tensor.
 */
export function assertTensorByteSize(tensor: Tensor, maxBytesElements = Infinity): void {
  const count = elementCount(tensor.shape);
  const size = elementByteSize(tensor.datatype);
  // A tensor on a GPU (an operator's intermediate): its size is the device's; its bytes cannot be walked here.
  const byteLength = tensor.device === undefined ? tensor.data.length : tensor.device.byteLength;
  if (size !== undefined) {
    const expected = count * size;
    if (byteLength !== expected) {
      throw new OperonError(
        "INVALID_ARG",
        `input '${tensor.name}': expected ${expected} bytes for shape [${tensor.shape.join(",")}] of ${tensor.datatype}, got ${byteLength}`,
      );
    }
    return;
  }
  if (tensor.device !== undefined) return;
  // The shape says how many elements there are: refuse too many before walking them.
  if (count > maxBytesElements) throw tooManyBytesElements(tensor.name, count, maxBytesElements);
  const found = countBytesElementsUpTo(tensor.data, tensor.name, count);
  if (found !== count) {
    throw new OperonError(
      "INVALID_ARG",
      `input '${tensor.name}': expected ${count} BYTES elements for shape [${tensor.shape.join(",")}], got ${found > count ? "more" : found}`,
    );
  }
}

/**
 * Elements one BYTES tensor may hold by default (`--max-bytes-elements`):
 * every element becomes a JS value somewhere (a string for ONNX Runtime, a
 * JSON string, a protobuf entry), so the count, not the byte size, is what
 * costs memory. 8 M empty elements are only 32 MB of body.
 */
export const DEFAULT_MAX_BYTES_ELEMENTS = 1 << 20;

/** INVALID_ARG for a BYTES tensor with more elements than allowed, naming the flag. */
export function tooManyBytesElements(tensorName: string, found: number | undefined, maxElements: number): OperonError {
  return new OperonError(
    "INVALID_ARG",
    `tensor '${tensorName}' has ${found ?? "more"} BYTES elements, more than the limit of ${maxElements} per BYTES tensor (--max-bytes-elements)`,
  );
}

/**
 * Counts length-prefixed BYTES elements; throws INVALID_ARG when the buffer
 * is truncated or, with maxElements, as soon as the count passes it (the
 * walk never goes further than the limit).
 */
export function countBytesElements(data: Buffer, tensorName: string, maxElements = Infinity): number {
  const count = countBytesElementsUpTo(data, tensorName, maxElements);
  if (count > maxElements) throw tooManyBytesElements(tensorName, undefined, maxElements);
  return count;
}

/** The element count, or cap + 1 as soon as it passes cap (the walk stops there). */
function countBytesElementsUpTo(data: Buffer, tensorName: string, cap: number): number {
  let offset = 0;
  let count = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': truncated BYTES element length at byte ${offset}`);
    }
    const length = data.readUInt32LE(offset);
    offset += 4 + length;
    if (offset > data.length) {
      throw new OperonError(
        "INVALID_ARG",
        `tensor '${tensorName}': BYTES element ${count} runs past the end of the data`,
      );
    }
    count += 1;
    if (count > cap) return count;
  }
  return count;
}

/**
 * Calls visit(start, end, index) for each element of Triton-layout BYTES
 * data, in order, allocating nothing per element: the way to read BYTES
 * without one JS object per element.
 */
export function forEachBytesElement(
  data: Buffer,
  tensorName: string,
  visit: (start: number, end: number, index: number) => void,
): void {
  let offset = 0;
  let index = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) {
      throw new OperonError("INVALID_ARG", `tensor '${tensorName}': truncated BYTES element length at byte ${offset}`);
    }
    const start = offset + 4;
    const end = start + data.readUInt32LE(offset);
    if (end > data.length) {
      throw new OperonError(
        "INVALID_ARG",
        `tensor '${tensorName}': BYTES element ${index} runs past the end of the data`,
      );
    }
    visit(start, end, index);
    index += 1;
    offset = end;
  }
}

/** The elements of Triton-layout BYTES data as UTF-8 strings (no Buffer per element; empty ones share ""). */
export function bytesElementsToStrings(data: Buffer, tensorName = "tensor"): string[] {
  const strings: string[] = [];
  forEachBytesElement(
    data,
    tensorName,
    (start, end) => void strings.push(start === end ? "" : data.toString("utf8", start, end)),
  );
  return strings;
}

/** Splits Triton-layout BYTES data into its elements (views, no copies: still one Buffer object each; prefer forEachBytesElement). */
export function decodeBytesElements(data: Buffer, tensorName = "tensor"): Buffer[] {
  const elements: Buffer[] = [];
  forEachBytesElement(data, tensorName, (start, end) => void elements.push(data.subarray(start, end)));
  return elements;
}

/** Joins elements into Triton-layout BYTES data; strings are written in place (no Buffer per element). */
export function encodeBytesElements(elements: ReadonlyArray<Buffer | Uint8Array | string>): Buffer {
  let total = 0;
  for (const element of elements)
    total += 4 + (typeof element === "string" ? Buffer.byteLength(element, "utf8") : element.length);
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const element of elements) {
    if (typeof element === "string") {
      const written = element.length === 0 ? 0 : out.write(element, offset + 4, "utf8");
      out.writeUInt32LE(written, offset);
      offset += 4 + written;
    } else {
      out.writeUInt32LE(element.length, offset);
      out.set(element, offset + 4);
      offset += 4 + element.length;
    }
  }
  return out;
}
