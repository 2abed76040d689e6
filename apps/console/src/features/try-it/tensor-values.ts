/**
 * What the try-it panel sends as a KServe v2 JSON tensor: a shape and its
 * values in row-major order, read from text the person can edit.
 */
export const KSERVE_DATATYPES = [
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP16",
  "FP32",
  "FP64",
  "BYTES",
  "BF16",
] as const;

export type TensorValue = number | string | boolean;
export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** The model's shape with every dynamic size (-1) as 1: one request of batch 1. */
export function concreteShape(shape: readonly number[]): number[] {
  return shape.map((dim) => (dim < 0 ? 1 : dim));
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((count, dim) => count * dim, 1);
}

/** Values to start from: 0, 1, 2, … (wrapping for small integer types), alternating booleans, short strings. */
export function defaultValues(datatype: string, count: number): TensorValue[] {
  return Array.from({ length: count }, (_, index): TensorValue => {
    if (datatype === "BOOL") return index % 2 === 1;
    if (datatype === "BYTES") return `text ${index}`;
    if (datatype === "INT8") return index % 128;
    if (datatype === "UINT8") return index % 256;
    return index;
  });
}

export function formatShape(shape: readonly number[]): string {
  return shape.join(", ");
}

export function parseShape(text: string): Parsed<number[]> {
  const dims = text
    .split(/[\s,]+/)
    .filter((part) => part !== "")
    .map(Number);
  if (dims.some((dim) => !Number.isInteger(dim) || dim < 0))
    return { ok: false, message: "whole numbers ≥ 0 separated by commas, e.g. 1, 16" };
  return { ok: true, value: dims };
}

function fits(datatype: string, value: unknown): boolean {
  if (datatype === "BOOL") return typeof value === "boolean";
  if (datatype === "BYTES") return typeof value === "string";
  if (datatype.startsWith("FP") || datatype === "BF16") return typeof value === "number";
  return typeof value === "number" && Number.isInteger(value);
}

function kindOf(datatype: string): string {
  if (datatype === "BOOL") return "true/false values";
  if (datatype === "BYTES") return "strings";
  if (datatype.startsWith("FP") || datatype === "BF16") return "numbers";
  return "whole numbers";
}

/** A flat JSON array of `count` values of the datatype's kind. */
export function parseValues(text: string, datatype: string, count: number): Parsed<TensorValue[]> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `not valid JSON: ${(error as Error).message}` };
  }
  if (!Array.isArray(value)) return { ok: false, message: "a JSON array, e.g. [1, 2, 3]" };
  if (value.some((item) => !fits(datatype, item)))
    return { ok: false, message: `${datatype} takes ${kindOf(datatype)} only` };
  if (value.length !== count) return { ok: false, message: `the shape holds ${count} values; ${value.length} given` };
  return { ok: true, value: value as TensorValue[] };
}

export type FillKind = "zeros" | "random" | "ramp";

/**
 * Values for a whole tensor at once: zeros, random values (uniform in [0, 1) for floats, the type's small range
 * for integers: what an image model's normalized input looks like), or the ramp 0, 1, 2, …
 */
export function fillValues(datatype: string, count: number, kind: FillKind, random = Math.random): TensorValue[] {
  if (kind === "ramp") return defaultValues(datatype, count);
  const floats = datatype.startsWith("FP") || datatype === "BF16";
  return Array.from({ length: count }, (): TensorValue => {
    if (datatype === "BOOL") return kind === "random" ? random() < 0.5 : false;
    if (datatype === "BYTES") return "";
    if (kind === "zeros") return 0;
    if (floats) return Math.round(random() * 1e4) / 1e4;
    return Math.floor(random() * (datatype === "INT8" ? 128 : 256));
  });
}

/** Base64 of raw bytes, for a BYTES input's file (a PNG is not text, so JSON cannot carry it as a string). */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  // In slices: String.fromCharCode(...bytes) overflows the call stack on a large file.
  for (let offset = 0; offset < bytes.length; offset += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(offset, offset + 0x8000));
  }
  return btoa(binary);
}

/** The values a new input starts with: the ramp for a small tensor, zeros for an image-sized one (no 27,648-number ramp). */
export function initialValues(datatype: string, count: number): TensorValue[] {
  return count > 256 ? fillValues(datatype, count, "zeros") : defaultValues(datatype, count);
}
