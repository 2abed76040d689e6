import { type DataType, elementByteSize, elementCount, isDataType } from "@operon/protocol/datatypes";
import type { ErrorKind } from "@operon/protocol/errors";
import { decodeHalfFloats, numberToBfloat16Bits, numberToFloat16Bits } from "@operon/protocol/half-float";
import {
  bytesElementsToStrings,
  countBytesElements,
  decodeBytesElements,
  encodeBytesElements,
} from "@operon/protocol/tensor";
import type { BackendApiVersion } from "./backend-api-version.js";

/**
 * What a TypeScript-backend model sees: typed tensors, requests, the
 * execute context, and the shape of the model class. Model files import it
 * as `@operon/backend-api/typescript-model-api` (the older path
 * `@operon/worker/backends/typescript-model-api` still works), or use the
 * same helpers from `args.tensor` / `ctx.tensor`, which needs no import.
 *
 * A model module default-exports a class (or exports `Model`):
 *
 *   export default class {
 *     initialize(args) {}                         // optional, may be async
 *     execute(requests, ctx) {                    // one response or Error per request, in order
 *       return requests.map((r) => ({ outputs: [ctx.tensor.int32("n", [1], [r.input("x").size])] }));
 *     }
 *     finalize() {}                               // optional
 *   }
 *
 * Decoupled models (config `model_transaction_policy { decoupled: true }`)
 * return nothing from execute and answer through `request.sender.send()`.
 *
 * The model runs in its worker process, as that process's code: a promise
 * rejection nobody handles ends the worker (the gateway restarts it), and
 * an execute that does not return within `execute_timeout_ms` kills it.
 *
 * A model may declare the backend API version it was written for, as an
 * export or a static property of its class:
 *
 *   export const operonBackendApi = { major: 1, minor: 0 };
 *
 * The loader refuses it (INVALID_ARG, naming both versions) when the major
 * differs from the server's BACKEND_API_VERSION or the minor is newer. A
 * model that declares none is taken as written for the server's version.
 *
 * A custom step (uploaded from the console) may declare its tensors, so
 * the upload form is prefilled from the code instead of typed in:
 *
 *   export const operonSignature: DeclaredSignature = {
 *     maxBatchSize: 0,                                   // optional, default 0
 *     inputs: [{ name: "x", datatype: "FP32", dims: [4] }],
 *     outputs: [{ name: "y", datatype: "FP32", dims: [4] }],
 *   };
 *
 * It must be written as a literal (the control plane reads it from the
 * source, without running the code).
 *
 * Nothing of the worker here, so the module stands alone in dist/ for
 * model files to import.
 */

export type { BackendApiVersion, DataType, ErrorKind };

/** Any tensor-shaped value: a TypedTensor, or a plain { name, datatype, shape, data }. */
export interface TensorLike {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

/**
 * A tensor with typed accessors. `data` is raw little-endian row-major
 * bytes (BYTES: Triton's 4-byte length + bytes per element). The typed
 * arrays are views of `data` when its alignment allows (copies otherwise):
 * request inputs may live in shared memory that is reused after the
 * request's final response, so copy (`.slice()`) what you keep longer.
 */
export interface TypedTensor extends TensorLike {
  readonly shape: number[];
  readonly data: Buffer;
  /** Number of elements (product of the shape; 1 for a scalar). */
  readonly size: number;
  /** FP32 as is; FP16 and BF16 widened. */
  toFloat32Array(): Float32Array;
  /** FP64. */
  toFloat64Array(): Float64Array;
  toInt8Array(): Int8Array;
  /** UINT8 or BOOL. */
  toUint8Array(): Uint8Array;
  toInt16Array(): Int16Array;
  /** UINT16 (FP16 / BF16: their raw bits). */
  toUint16Array(): Uint16Array;
  toInt32Array(): Int32Array;
  toUint32Array(): Uint32Array;
  toBigInt64Array(): BigInt64Array;
  toBigUint64Array(): BigUint64Array;
  /** Any datatype but BYTES, as numbers (INT64/UINT64 beyond 2^53 lose precision; BOOL is 0/1). */
  toNumbers(): number[];
  /** BOOL. */
  toBooleans(): boolean[];
  /** BYTES, each element decoded as UTF-8. */
  toStrings(): string[];
  /** BYTES, each element's bytes (views). */
  toBuffers(): Buffer[];
  /** The same bytes under another name (no copy). */
  rename(name: string): TypedTensor;
}

/** A successful response: its output tensors (filtered to the request's requested outputs by the backend). */
export interface TypedResponse {
  outputs: TensorLike[];
}

/** Decoupled models answer through this; non-decoupled models' send() throws. */
export interface ResponseSender {
  /**
   * Sends one response, a per-response Error, or (undefined, with final)
   * just the final flag. Exactly one call per request has final: true;
   * any call after it throws.
   */
  send(response: TypedResponse | Error | undefined, options?: { final?: boolean }): void;
  /** True once the final response went out (sent by the model, or by the backend on its behalf). */
  readonly finished: boolean;
}

export interface TypedRequest {
  /** The client's request id; "" when it sent none. */
  readonly id: string;
  readonly inputs: ReadonlyMap<string, TypedTensor>;
  /** The request's parameters (KServe `parameters`). */
  readonly parameters: Readonly<Record<string, string | number | boolean>>;
  /** The outputs the client asked for; empty = every output. */
  readonly requestedOutputs: readonly string[];
  readonly sender: ResponseSender;
  /** The input of that name; throws an INVALID_ARG ModelError naming it when the request has none. */
  input(name: string): TypedTensor;
}

export type ModelLogLevel = "debug" | "info" | "warn" | "error";
export type ModelLog = (level: ModelLogLevel, message: string, fields?: Record<string, unknown>) => void;

export interface InferOptions {
  /** undefined = the version the model's version policy serves. */
  version?: string;
  /** Outputs to return; undefined or empty = every output. */
  outputs?: string[];
  parameters?: Record<string, string | number | boolean>;
}

/** A BLS call's outcome: outputs, or the failure as a value (infer never throws). */
export type InferResult =
  | { outputs: Map<string, TypedTensor>; error?: undefined }
  | { outputs?: undefined; error: { kind: ErrorKind; message: string } };

/** The second argument of execute (and the same object for every call). */
export interface ExecuteContext {
  readonly modelName: string;
  readonly tensor: TensorFactory;
  readonly log: ModelLog;
  /**
   * BLS: runs an inference on another model served by the same gateway,
   * as a request like any other (its scheduler batches concurrent calls).
   * Safe to call concurrently. Calls nest at most 8 deep: a deeper one
   * fails INVALID_ARG (a model calling itself without end). A decoupled
   * model cannot be called (UNSUPPORTED): a call takes one response.
   */
  infer(model: string, inputs: readonly TensorLike[], options?: InferOptions): Promise<InferResult>;
  /** An Error carrying an error kind, to return or throw (e.g. INVALID_ARG for a bad request). */
  error(kind: ErrorKind, message: string): ModelError;
}

export interface InitializeArgs {
  /** The model config as Triton's JSON (snake_case keys). */
  readonly config: Record<string, unknown>;
  /** Config `parameters` (string values), overridden by the load request's. */
  readonly parameters: Readonly<Record<string, string>>;
  readonly modelName: string;
  readonly instanceName: string;
  /** KIND_CPU, KIND_GPU, KIND_MODEL. */
  readonly instanceKind: string;
  /** The GPU ordinal of a KIND_GPU instance (instance_group gpus, count per GPU); null otherwise. */
  readonly deviceId: number | null;
  /** The model's folder in the repository (<repo>/<model>). */
  readonly modelDir: string;
  /** The version folder's name ("1"); its files are in path.join(modelDir, modelVersion). */
  readonly modelVersion: string;
  readonly log: ModelLog;
  readonly tensor: TensorFactory;
}

/** One tensor of a declared signature: dims without the batch dimension (-1 for a dynamic size). */
export interface DeclaredTensor {
  name: string;
  datatype: DataType;
  dims: number[];
}

/** What `export const operonSignature` declares (see the module comment). */
export interface DeclaredSignature {
  /** > 0: tensors carry a batch dimension not written in dims. Default 0. */
  maxBatchSize?: number;
  inputs: DeclaredTensor[];
  outputs: DeclaredTensor[];
}

/** What a model class's instances provide. */
export interface ModelInstance {
  /**
   * True when the model runs its own work on the GPU it is given (initialize's deviceId, e.g. through a
   * native addon). Without it a KIND_GPU instance is refused at load: a TypeScript model runs on the CPU,
   * and an instance placed on a GPU never runs on the CPU instead.
   */
  readonly usesGpu?: boolean;
  initialize?(args: InitializeArgs): void | Promise<void>;
  execute(
    requests: TypedRequest[],
    ctx: ExecuteContext,
  ): Array<TypedResponse | Error> | undefined | void | Promise<Array<TypedResponse | Error> | undefined | void>;
  finalize?(): void | Promise<void>;
}

/** An Error with one of Operon's error kinds; any Error with a valid `kind` property works the same. */
export class ModelError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "ModelError";
  }
}

// ---- typed tensors ----

type NumericArray =
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

interface TypedArrayClass<T extends NumericArray> {
  readonly BYTES_PER_ELEMENT: number;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): T;
}

class TypedTensorImpl implements TypedTensor {
  readonly size: number;

  constructor(
    readonly name: string,
    readonly datatype: DataType,
    readonly shape: number[],
    readonly data: Buffer,
  ) {
    this.size = elementCount(shape);
  }

  toFloat32Array(): Float32Array {
    if (this.datatype === "FP16" || this.datatype === "BF16") {
      return decodeHalfFloats(this.datatype, this.view(Uint16Array, this.datatype));
    }
    return this.view(Float32Array, "FP32");
  }
  toFloat64Array(): Float64Array {
    return this.view(Float64Array, "FP64");
  }
  toInt8Array(): Int8Array {
    return this.view(Int8Array, "INT8");
  }
  toUint8Array(): Uint8Array {
    return this.view(Uint8Array, this.datatype === "BOOL" ? "BOOL" : "UINT8");
  }
  toInt16Array(): Int16Array {
    return this.view(Int16Array, "INT16");
  }
  toUint16Array(): Uint16Array {
    return this.view(Uint16Array, this.datatype === "FP16" || this.datatype === "BF16" ? this.datatype : "UINT16");
  }
  toInt32Array(): Int32Array {
    return this.view(Int32Array, "INT32");
  }
  toUint32Array(): Uint32Array {
    return this.view(Uint32Array, "UINT32");
  }
  toBigInt64Array(): BigInt64Array {
    return this.view(BigInt64Array, "INT64");
  }
  toBigUint64Array(): BigUint64Array {
    return this.view(BigUint64Array, "UINT64");
  }

  toNumbers(): number[] {
    switch (this.datatype) {
      case "BYTES":
        throw new TypeError(`tensor '${this.name}' is BYTES: use toStrings() or toBuffers()`);
      case "FP16":
      case "BF16":
        return Array.from(this.toFloat32Array());
      case "INT64":
        return Array.from(this.toBigInt64Array(), Number);
      case "UINT64":
        return Array.from(this.toBigUint64Array(), Number);
      default:
        return Array.from(this.view(ARRAY_OF[this.datatype], this.datatype) as ArrayLike<number>);
    }
  }

  toBooleans(): boolean[] {
    return Array.from(this.view(Uint8Array, "BOOL"), (byte) => byte !== 0);
  }

  toStrings(): string[] {
    if (this.datatype !== "BYTES") throw new TypeError(`tensor '${this.name}' is ${this.datatype}, not BYTES`);
    return bytesElementsToStrings(this.data, this.name);
  }

  toBuffers(): Buffer[] {
    if (this.datatype !== "BYTES") throw new TypeError(`tensor '${this.name}' is ${this.datatype}, not BYTES`);
    return decodeBytesElements(this.data, this.name);
  }

  rename(name: string): TypedTensor {
    return new TypedTensorImpl(name, this.datatype, this.shape, this.data);
  }

  private view<T extends NumericArray>(type: TypedArrayClass<T>, expected: DataType): T {
    if (this.datatype !== expected) throw new TypeError(`tensor '${this.name}' is ${this.datatype}, not ${expected}`);
    const size = type.BYTES_PER_ELEMENT;
    const { data } = this;
    if (data.byteOffset % size === 0) return new type(data.buffer, data.byteOffset, data.length / size);
    // Misaligned (e.g. a tensor after an odd-sized one in a frame): one copy into fresh memory.
    const copy = data.buffer.slice(data.byteOffset, data.byteOffset + data.length);
    return new type(copy, 0, data.length / size);
  }
}

const ARRAY_OF: Record<
  Exclude<DataType, "BYTES" | "FP16" | "BF16" | "INT64" | "UINT64">,
  TypedArrayClass<NumericArray>
> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  FP32: Float32Array,
  FP64: Float64Array,
};

/**
 * Wraps tensor-shaped bytes (no copy) after checking them: a known
 * datatype, a shape of non-negative integers, and bytes that fill exactly
 * that shape. Throws TypeError naming the tensor.
 */
export function typedTensor(value: TensorLike): TypedTensor {
  if (value instanceof TypedTensorImpl) return value;
  const where = `tensor '${String((value as Partial<TensorLike>)?.name)}'`;
  if (typeof value !== "object" || value === null || typeof value.name !== "string")
    throw new TypeError("a tensor needs a string name");
  if (typeof value.datatype !== "string" || !isDataType(value.datatype))
    throw new TypeError(`${where}: unknown datatype '${String(value.datatype)}'`);
  if (!Array.isArray(value.shape) || !value.shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0)) {
    throw new TypeError(`${where}: shape must be a list of non-negative integers, got ${JSON.stringify(value.shape)}`);
  }
  if (!(value.data instanceof Uint8Array)) throw new TypeError(`${where}: data must be a Buffer or Uint8Array`);
  const data = Buffer.isBuffer(value.data)
    ? value.data
    : Buffer.from(value.data.buffer, value.data.byteOffset, value.data.byteLength);
  const shape = [...value.shape];
  const count = elementCount(shape);
  const size = elementByteSize(value.datatype);
  if (size !== undefined && data.length !== count * size) {
    throw new TypeError(
      `${where}: shape [${shape.join(",")}] of ${value.datatype} needs ${count * size} bytes, got ${data.length}`,
    );
  }
  if (size === undefined) {
    let found: number;
    try {
      found = countBytesElements(data, value.name);
    } catch (error) {
      throw new TypeError(`${where}: ${(error as Error).message}`);
    }
    if (found !== count)
      throw new TypeError(`${where}: shape [${shape.join(",")}] holds ${count} BYTES elements, got ${found}`);
  }
  return new TypedTensorImpl(value.name, value.datatype, shape, data);
}

function checkCount(name: string, shape: readonly number[], length: number): number[] {
  if (!shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0)) {
    throw new TypeError(
      `tensor '${name}': shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`,
    );
  }
  const count = elementCount(shape);
  if (count !== length)
    throw new TypeError(`tensor '${name}': shape [${shape.join(",")}] holds ${count} elements, got ${length} values`);
  return [...shape];
}

function fromValues<T extends NumericArray>(
  name: string,
  datatype: DataType,
  shape: readonly number[],
  values: ArrayLike<number> | ArrayLike<bigint>,
  type: { new (length: number): T },
  convert?: (value: number | bigint) => number | bigint,
): TypedTensor {
  const checked = checkCount(name, shape, values.length);
  const array = new type(values.length) as unknown as { [i: number]: number | bigint; buffer: ArrayBuffer };
  for (let i = 0; i < values.length; i += 1) {
    const value = values[i]!;
    array[i] = convert !== undefined ? convert(value) : value;
  }
  return new TypedTensorImpl(name, datatype, checked, Buffer.from(array.buffer));
}

const toBigInt = (value: number | bigint): bigint => (typeof value === "bigint" ? value : BigInt(Math.trunc(value)));
const toNumber = (value: number | bigint): number => Number(value);

const TYPED_ARRAY_DATATYPES: ReadonlyArray<[TypedArrayClass<NumericArray>, DataType]> = [
  [Float32Array, "FP32"],
  [Float64Array, "FP64"],
  [Int8Array, "INT8"],
  [Uint8Array, "UINT8"],
  [Int16Array, "INT16"],
  [Uint16Array, "UINT16"],
  [Int32Array, "INT32"],
  [Uint32Array, "UINT32"],
  [BigInt64Array, "INT64"],
  [BigUint64Array, "UINT64"],
];

/** Tensor constructors; values are copied into fresh little-endian bytes (fromTypedArray and raw do not copy). */
export const tensor = {
  bool: (name: string, shape: readonly number[], values: ArrayLike<boolean | number>): TypedTensor => {
    const checked = checkCount(name, shape, values.length);
    const data = Buffer.allocUnsafe(values.length);
    for (let i = 0; i < values.length; i += 1) data[i] = values[i] ? 1 : 0;
    return new TypedTensorImpl(name, "BOOL", checked, data);
  },
  uint8: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "UINT8", shape, values, Uint8Array),
  uint16: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "UINT16", shape, values, Uint16Array),
  uint32: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "UINT32", shape, values, Uint32Array),
  uint64: (name: string, shape: readonly number[], values: ArrayLike<number | bigint>): TypedTensor =>
    fromValues(name, "UINT64", shape, values as ArrayLike<number>, BigUint64Array, toBigInt),
  int8: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "INT8", shape, values, Int8Array),
  int16: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "INT16", shape, values, Int16Array),
  int32: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "INT32", shape, values, Int32Array),
  int64: (name: string, shape: readonly number[], values: ArrayLike<number | bigint>): TypedTensor =>
    fromValues(name, "INT64", shape, values as ArrayLike<number>, BigInt64Array, toBigInt),
  float16: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "FP16", shape, values, Uint16Array, (value) => numberToFloat16Bits(toNumber(value))),
  bfloat16: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "BF16", shape, values, Uint16Array, (value) => numberToBfloat16Bits(toNumber(value))),
  float32: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "FP32", shape, values, Float32Array),
  float64: (name: string, shape: readonly number[], values: ArrayLike<number>): TypedTensor =>
    fromValues(name, "FP64", shape, values, Float64Array),
  /** BYTES: strings are encoded as UTF-8. */
  bytes: (name: string, shape: readonly number[], values: ArrayLike<string | Uint8Array>): TypedTensor => {
    const checked = checkCount(name, shape, values.length);
    const elements = Array.from(values, (value) =>
      typeof value === "string"
        ? Buffer.from(value, "utf8")
        : Buffer.from(value.buffer, value.byteOffset, value.byteLength),
    );
    return new TypedTensorImpl(name, "BYTES", checked, encodeBytesElements(elements));
  },
  /**
   * A view of the array's bytes (no copy: do not modify it after sending).
   * datatype defaults to the array's own (Float32Array: FP32, ...); give
   * one of the same element size to reinterpret (Uint8Array as BOOL,
   * Uint16Array holding FP16 or BF16 bits).
   */
  fromTypedArray: (name: string, shape: readonly number[], array: NumericArray, datatype?: DataType): TypedTensor => {
    const own = TYPED_ARRAY_DATATYPES.find(([type]) => array instanceof type)?.[1];
    if (own === undefined) throw new TypeError(`tensor '${name}': not a typed array`);
    const chosen = datatype ?? own;
    if (chosen === "BYTES" || elementByteSize(chosen) !== array.BYTES_PER_ELEMENT) {
      throw new TypeError(`tensor '${name}': a ${array.constructor.name} cannot hold ${chosen}`);
    }
    const checked = checkCount(name, shape, array.length);
    return new TypedTensorImpl(name, chosen, checked, Buffer.from(array.buffer, array.byteOffset, array.byteLength));
  },
  /** Wraps raw bytes in the wire layout (checked, not copied). */
  raw: (name: string, datatype: DataType, shape: readonly number[], data: Uint8Array): TypedTensor =>
    typedTensor({ name, datatype, shape, data }),
  /** Wraps any tensor-shaped value (checked, not copied). */
  from: (value: TensorLike): TypedTensor => typedTensor(value),
};

export type TensorFactory = typeof tensor;
