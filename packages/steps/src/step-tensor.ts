import type { DataType } from "@operon/protocol/datatypes";

/**
 * The tensor a step sees: one sample (no batch dimension; the pipeline
 * splits batches, see step-pipeline.ts), its elements in a typed array of
 * the datatype's own kind, row-major, or one Buffer per element for BYTES.
 * BOOL is a Uint8Array of 0/1. FP16 and BF16 are widened to FP32 where they
 * enter a pipeline, so steps never see them.
 */
export type NumericArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

export interface StepTensor {
  datatype: DataType;
  shape: number[];
  data: NumericArray | Buffer[];
}

/** A problem with a step's input or parameters: the request (or the load) fails INVALID_ARG with this message. */
export class StepInputError extends Error {
  override readonly name = "StepInputError";
}

export const NUMERIC_DATATYPES = [
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP32",
  "FP64",
] as const satisfies readonly DataType[];
export type NumericDataType = (typeof NUMERIC_DATATYPES)[number];

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** An empty (zeroed) array for `count` elements of a numeric datatype. */
export function allocate(datatype: NumericDataType, count: number): NumericArray {
  switch (datatype) {
    case "BOOL":
    case "UINT8":
      return new Uint8Array(count);
    case "UINT16":
      return new Uint16Array(count);
    case "UINT32":
      return new Uint32Array(count);
    case "UINT64":
      return new BigUint64Array(count);
    case "INT8":
      return new Int8Array(count);
    case "INT16":
      return new Int16Array(count);
    case "INT32":
      return new Int32Array(count);
    case "INT64":
      return new BigInt64Array(count);
    case "FP32":
      return new Float32Array(count);
    case "FP64":
      return new Float64Array(count);
  }
}

export function isNumeric(tensor: StepTensor): tensor is StepTensor & { data: NumericArray } {
  return tensor.datatype !== "BYTES";
}

/** The tensor's elements as numbers (INT64 / UINT64 beyond 2^53 lose precision). */
export function toNumbers(tensor: StepTensor, where: string): Float64Array {
  if (!isNumeric(tensor)) throw new StepInputError(`${where} must be numeric, got BYTES`);
  const data = tensor.data;
  const out = new Float64Array(data.length);
  for (let i = 0; i < data.length; i += 1) out[i] = Number(data[i]!);
  return out;
}

/** Numbers into a fresh array of the datatype (integers are rounded toward zero and wrap as typed arrays do; BOOL: non-zero is 1). */
export function fromNumbers(datatype: NumericDataType, values: ArrayLike<number>): NumericArray {
  const out = allocate(datatype, values.length);
  if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
    for (let i = 0; i < values.length; i += 1) {
      const value = values[i]!;
      out[i] = BigInt(Number.isFinite(value) ? Math.trunc(value) : 0);
    }
  } else if (datatype === "BOOL") {
    for (let i = 0; i < values.length; i += 1) out[i] = values[i] !== 0 && !Number.isNaN(values[i]) ? 1 : 0;
  } else {
    (out as Exclude<NumericArray, BigInt64Array | BigUint64Array>).set(values as ArrayLike<number>);
  }
  return out;
}

export function describeShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** Requires a datatype among `allowed` and a rank among `ranks` (undefined: any). */
export function expectTensor(
  tensor: StepTensor,
  where: string,
  allowed: readonly DataType[] | undefined,
  ranks?: readonly number[],
): void {
  if (allowed !== undefined && !allowed.includes(tensor.datatype)) {
    throw new StepInputError(`${where} must be ${allowed.join(" or ")}, got ${tensor.datatype}`);
  }
  if (ranks !== undefined && !ranks.includes(tensor.shape.length)) {
    throw new StepInputError(
      `${where} must have ${ranks.join(" or ")} dimensions, got shape ${describeShape(tensor.shape)}`,
    );
  }
}

/**
 * A built step: runs one sample. Factories (one per catalog entry, in
 * image-steps.ts, text-steps.ts and tensor-steps.ts) run once per load with
 * validated parameters, read their files then, and return it.
 */
export type StepRun = (inputs: Readonly<Record<string, StepTensor>>) => Promise<Record<string, StepTensor>>;

export interface StepEnvironment {
  /** A file of the model's folder (path relative to it, confined to it). */
  readFile(relativePath: string): Promise<Buffer>;
  /** The worker's kernels on the native backend API, where it has them (absent: every step runs in TypeScript). */
  native?: NativeKernels | undefined;
}

/** Normalizes 8-bit HWC pixels to FP32: (v·scale − mean[c]) / std[c], the values image.normalize computes. */
export type NativeNormalize = (pixels: Uint8Array, shape: [number, number, number]) => Promise<Float32Array>;

/**
 * Numeric kernels a worker runs on the native backend API (Operon's
 * operon_tensor_ops backend, loaded in the worker's own process: no process
 * crossing), for the steps where that pays (bench/numeric-steps-native.mjs;
 * README, "Numeric steps and the native backend API"). The worker provides
 * them (@operon/worker's steps-native-kernels.ts); this package only asks.
 */
export interface NativeKernels {
  /** A kernel for one image.normalize step's parameters; undefined when native backends are unavailable. */
  normalize(params: { scale: number; mean: number[]; std: number[] }): Promise<NativeNormalize | undefined>;
}

// Each factory declares its own parameter type; the catalog's schema has checked the values.
export type StepFactory = (params: any, env: StepEnvironment) => StepRun | Promise<StepRun>;

export function stepInput(inputs: Readonly<Record<string, StepTensor>>, name: string): StepTensor {
  const tensor = inputs[name];
  if (tensor === undefined) throw new StepInputError(`input '${name}' is missing`);
  return tensor;
}
