import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import ort from "onnxruntime-node";
import type { DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { type Tensor, assertTensorByteSize, encodeBytesElements, forEachBytesElement } from "@operon/protocol/tensor";
import type { InstanceKind, IoInfo } from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import { openSyncSession, QUIET_RUN_OPTIONS, type SyncSession } from "./ort-sync-session.js";
import {
  type Backend,
  type BackendExecuteResult,
  type BackendInitOptions,
  type BackendMetadata,
} from "@operon/backend-api/backend";

/**
 * ONNX Runtime (onnxruntime-node) backend. Session creation and run() are
 * synchronous native calls on this process's JS thread, which is why this
 * lives in a worker process and runs one request at a time.
 *
 * Threads: intra-op 1 and inter-op 1 unless the config (or load) parameters
 * "intra_op_thread_count" / "inter_op_thread_count" say otherwise: one
 * thread per instance is the safer default under load; scale with instances.
 * Execution provider: CPU, or CUDA when the instance is KIND_GPU; when the
 * CUDA provider cannot load, initialize fails with UNAVAILABLE.
 */

const ORT_TO_DATATYPE: Readonly<Record<string, DataType>> = {
  bool: "BOOL",
  int8: "INT8",
  int16: "INT16",
  int32: "INT32",
  int64: "INT64",
  uint8: "UINT8",
  uint16: "UINT16",
  uint32: "UINT32",
  uint64: "UINT64",
  float16: "FP16",
  float32: "FP32",
  float64: "FP64",
  string: "BYTES",
};

/** A loaded model as execute() uses it: ort-sync-session's SyncSession, or the public API's behind the same shape. */
type OrtSession = Omit<SyncSession, "run" | "release"> & {
  run(
    feeds: Record<string, ort.Tensor>,
    fetches: readonly string[] | undefined,
  ): Record<string, ort.Tensor> | Promise<ort.InferenceSession.ReturnType>;
  release(): void | Promise<void>;
};

/** The public API's session (a GPU instance, or a binding ort-sync-session does not know). */
function publicSession(session: ort.InferenceSession): OrtSession {
  return {
    inputMetadata: session.inputMetadata,
    outputMetadata: session.outputMetadata,
    outputNames: session.outputNames,
    run: (feeds, fetches) =>
      fetches === undefined
        ? session.run(feeds, QUIET_RUN_OPTIONS)
        : session.run(feeds, [...fetches], QUIET_RUN_OPTIONS),
    release: () => session.release(),
  };
}

export function datatypeOfOrtType(type: string): DataType | undefined {
  return ORT_TO_DATATYPE[type];
}

export class OnnxRuntimeBackend implements Backend {
  readonly apiVersion = BACKEND_API_VERSION;
  private session: OrtSession | undefined;
  private info: BackendMetadata = { inputs: [], outputs: [] };
  private inputsByName = new Map<string, IoInfo>();
  private outputNameSet = new Set<string>();

  async initialize(options: BackendInitOptions): Promise<void> {
    const intraOpNumThreads = threadCount(options, "intra_op_thread_count");
    const interOpNumThreads = threadCount(options, "inter_op_thread_count");
    const gpu = resolveInstanceKind(options.config, options.instanceKind) === "KIND_GPU";
    const deviceId = options.deviceId ?? firstGpuOf(options.config) ?? 0;
    if (gpu) assertCudaProviderPresent(options.instanceName);
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      intraOpNumThreads,
      interOpNumThreads,
      executionProviders: gpu ? [{ name: "cuda", deviceId }] : ["cpu"],
      // ORT's own warnings go straight to stderr as free text; keep them to errors.
      logSeverityLevel: 3,
    };
    try {
      // On CPU, the session runs synchronously (ort-sync-session.ts says why); CUDA keeps the public API.
      const sync = gpu ? undefined : openSyncSession(options.modelPath, sessionOptions);
      this.session = sync ?? publicSession(await ort.InferenceSession.create(options.modelPath, sessionOptions));
    } catch (error) {
      const message = oneLine(error instanceof Error ? error.message : String(error));
      if (gpu && /cuda|shared library|providers/i.test(message)) {
        throw new OperonError(
          "UNAVAILABLE",
          `instance '${options.instanceName}' is KIND_GPU but the CUDA execution provider cannot be used: ${message}`,
          {
            cause: error,
          },
        );
      }
      throw new OperonError("INVALID_ARG", `failed to load '${options.modelPath}': ${message}`, { cause: error });
    }
    this.info = {
      inputs: this.session.inputMetadata.map(ioInfoOf),
      outputs: this.session.outputMetadata.map(ioInfoOf),
    };
    this.inputsByName = new Map(this.info.inputs.map((input) => [input.name, input]));
    this.outputNameSet = new Set(this.info.outputs.map((output) => output.name));
    options.log("info", "onnxruntime session created", {
      modelPath: options.modelPath,
      executionProvider: gpu ? `cuda:${deviceId}` : "cpu",
      intraOpNumThreads,
      interOpNumThreads,
    });
  }

  metadata(): BackendMetadata {
    return this.info;
  }

  async execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult> {
    const session = this.session;
    if (session === undefined) throw new OperonError("UNAVAILABLE", "onnxruntime backend: no model loaded");

    const inputStart = process.hrtime.bigint();
    this.checkInputs(inputs);
    const fetches = this.checkOutputNames(outputNames);
    const feeds: Record<string, ort.Tensor> = {};
    for (const input of inputs) feeds[input.name] = toOrtTensor(input);

    const inferStart = process.hrtime.bigint();
    let results: ort.InferenceSession.ReturnType;
    try {
      const ran = session.run(feeds, fetches);
      results = ran instanceof Promise ? await ran : ran;
    } catch (error) {
      throw new OperonError("INVALID_ARG", oneLine(error instanceof Error ? error.message : String(error)), {
        cause: error,
      });
    }

    const outputStart = process.hrtime.bigint();
    const outputs: Tensor[] = [];
    for (const name of fetches ?? session.outputNames) {
      const value = results[name];
      if (value === undefined) throw new OperonError("INTERNAL", `onnxruntime returned no value for output '${name}'`);
      outputs.push(fromOrtTensor(name, value));
    }
    const end = process.hrtime.bigint();
    return {
      outputs,
      timing: {
        computeInputNs: Number(inferStart - inputStart),
        computeInferNs: Number(outputStart - inferStart),
        computeOutputNs: Number(end - outputStart),
      },
    };
  }

  async finalize(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (session !== undefined) await session.release();
  }

  /** Checks names, datatypes, ranks, fixed dims and byte sizes before ORT sees them. */
  private checkInputs(inputs: Tensor[]): void {
    const seen = new Set<string>();
    for (const input of inputs) {
      const expected = this.inputsByName.get(input.name);
      if (expected === undefined) {
        throw new OperonError(
          "INVALID_ARG",
          `unexpected inference input '${input.name}', allowed inputs are: ${[...this.inputsByName.keys()].join(", ")}`,
        );
      }
      if (seen.has(input.name)) throw new OperonError("INVALID_ARG", `input '${input.name}' given more than once`);
      seen.add(input.name);
      if (expected.datatype !== undefined && input.datatype !== expected.datatype) {
        throw new OperonError(
          "INVALID_ARG",
          `input '${input.name}': datatype ${input.datatype} does not match the model's ${expected.datatype}`,
        );
      }
      const fits =
        input.shape.length === expected.shape.length &&
        expected.shape.every((dim, i) => dim === -1 || dim === input.shape[i]);
      if (!fits) {
        throw new OperonError(
          "INVALID_ARG",
          `input '${input.name}': shape [${input.shape.join(",")}] does not match the model's [${expected.shape.join(",")}]`,
        );
      }
      assertTensorByteSize(input);
    }
    for (const name of this.inputsByName.keys()) {
      if (!seen.has(name)) throw new OperonError("INVALID_ARG", `missing input '${name}'`);
    }
  }

  /** undefined = all outputs (ORT's default order); otherwise the requested, deduplicated names. */
  private checkOutputNames(outputNames: string[] | undefined): string[] | undefined {
    if (outputNames === undefined || outputNames.length === 0) return undefined;
    for (const name of outputNames) {
      if (!this.outputNameSet.has(name)) {
        throw new OperonError(
          "INVALID_ARG",
          `unexpected inference output '${name}', allowed outputs are: ${[...this.outputNameSet].join(", ")}`,
        );
      }
    }
    return [...new Set(outputNames)];
  }
}

function ioInfoOf(value: ort.InferenceSession.ValueMetadata): IoInfo {
  if (!value.isTensor) return { name: value.name, datatype: undefined, shape: [] };
  return {
    name: value.name,
    datatype: datatypeOfOrtType(value.type),
    // Symbolic (named or unnamed) dimensions come back as strings.
    shape: value.shape.map((dim) => (typeof dim === "number" && dim >= 0 ? dim : -1)),
  };
}

interface TypedArrayClass<T> {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
}

/** A typed view over the tensor bytes; copies only when the offset is not element-aligned. */
function typedView<T>(data: Buffer, type: TypedArrayClass<T>): T {
  const size = type.BYTES_PER_ELEMENT;
  if (data.byteOffset % size === 0) return new type(data.buffer as ArrayBuffer, data.byteOffset, data.length / size);
  const aligned = new Uint8Array(data.length);
  aligned.set(data);
  return new type(aligned.buffer, 0, data.length / size);
}

function toOrtTensor(tensor: Tensor): ort.Tensor {
  const { data, shape } = tensor;
  switch (tensor.datatype) {
    case "FP32":
      return new ort.Tensor("float32", typedView(data, Float32Array), shape);
    case "FP64":
      return new ort.Tensor("float64", typedView(data, Float64Array), shape);
    case "FP16":
      return new ort.Tensor("float16", typedView(data, Uint16Array), shape);
    case "INT8":
      return new ort.Tensor("int8", typedView(data, Int8Array), shape);
    case "INT16":
      return new ort.Tensor("int16", typedView(data, Int16Array), shape);
    case "INT32":
      return new ort.Tensor("int32", typedView(data, Int32Array), shape);
    case "INT64":
      return new ort.Tensor("int64", typedView(data, BigInt64Array), shape);
    case "UINT8":
      return new ort.Tensor("uint8", typedView(data, Uint8Array), shape);
    case "UINT16":
      return new ort.Tensor("uint16", typedView(data, Uint16Array), shape);
    case "UINT32":
      return new ort.Tensor("uint32", typedView(data, Uint32Array), shape);
    case "UINT64":
      return new ort.Tensor("uint64", typedView(data, BigUint64Array), shape);
    case "BOOL":
      return new ort.Tensor("bool", typedView(data, Uint8Array), shape);
    case "BYTES":
      // onnxruntime-node strings are JS strings: elements must be UTF-8 to round-trip.
      return new ort.Tensor("string", bytesElementTexts(tensor.name, data), shape);
    default:
      throw new OperonError(
        "UNSUPPORTED",
        `input '${tensor.name}': datatype ${tensor.datatype} is not supported by the onnxruntime backend`,
      );
  }
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The BYTES elements as the JS strings onnxruntime-node needs, read in place
 * (no Buffer per element; empty elements share ""). Invalid UTF-8 would turn
 * into U+FFFD and the native binding cuts strings at the first NUL, so both
 * are refused instead of silently handing the model other bytes.
 */
function bytesElementTexts(name: string, data: Buffer): string[] {
  const texts: string[] = [];
  forEachBytesElement(data, name, (start, end, index) => {
    let ascii = true;
    for (let i = start; i < end; i++) {
      const byte = data[i]!;
      if (byte === 0) throw badBytesElement(name, index, "contains a NUL byte");
      if (byte >= 0x80) ascii = false;
    }
    if (start === end) texts.push("");
    else if (ascii) texts.push(data.toString("latin1", start, end));
    else {
      try {
        texts.push(STRICT_UTF8.decode(data.subarray(start, end)));
      } catch {
        throw badBytesElement(name, index, "is not valid UTF-8");
      }
    }
  });
  return texts;
}

function badBytesElement(name: string, index: number, problem: string): OperonError {
  return new OperonError(
    "INVALID_ARG",
    `input '${name}': BYTES element ${index} ${problem}; the onnxruntime backend passes string tensors as UTF-8 text without NUL bytes`,
  );
}

function fromOrtTensor(name: string, value: ort.OnnxValue): Tensor {
  const datatype = value instanceof ort.Tensor ? datatypeOfOrtType(value.type) : undefined;
  if (datatype === undefined) {
    throw new OperonError("UNSUPPORTED", `output '${name}' has a type the onnxruntime backend cannot return`);
  }
  const shape = Array.from(value.dims);
  if (datatype === "BYTES") return { name, datatype, shape, data: encodeBytesElements(value.data as string[]) };
  const typed = value.data as ArrayBufferView;
  return { name, datatype, shape, data: Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength) };
}

/** Triton config `parameters: {key: {string_value}}`, overridden by load parameters. */
function parameterOf(options: BackendInitOptions, key: string): string | undefined {
  const fromLoad = options.parameters[key];
  if (fromLoad !== undefined) return fromLoad;
  const parameters = options.config.parameters as Record<string, { string_value?: unknown } | undefined> | undefined;
  const value = parameters?.[key]?.string_value;
  return typeof value === "string" ? value : undefined;
}

function threadCount(options: BackendInitOptions, key: string): number {
  const text = parameterOf(options, key);
  if (text === undefined) return 1;
  const count = Number(text);
  if (!Number.isInteger(count) || count < 0) {
    throw new OperonError("INVALID_ARG", `parameter '${key}' must be a non-negative integer, got '${text}'`);
  }
  // 0 = let onnxruntime pick (its own default: one thread per core).
  return count;
}

/** Explicit kind wins; otherwise GPU only when every instance group of the config is KIND_GPU. */
function resolveInstanceKind(config: Record<string, unknown>, kind: InstanceKind | undefined): InstanceKind {
  if (kind !== undefined) return kind;
  const groups = Array.isArray(config.instance_group) ? (config.instance_group as Array<{ kind?: unknown }>) : [];
  return groups.length > 0 && groups.every((group) => group.kind === "KIND_GPU") ? "KIND_GPU" : "KIND_CPU";
}

function firstGpuOf(config: Record<string, unknown>): number | undefined {
  const groups = Array.isArray(config.instance_group) ? (config.instance_group as Array<{ gpus?: unknown }>) : [];
  const gpus = groups[0]?.gpus;
  return Array.isArray(gpus) && typeof gpus[0] === "number" ? gpus[0] : undefined;
}

/**
 * Asking onnxruntime for CUDA when its provider library is absent logs a
 * native error and fails late; check up front and say what is missing.
 */
function assertCudaProviderPresent(instanceName: string): void {
  const supported = ort.listSupportedBackends?.() ?? [];
  if (!supported.some((backend) => backend.name === "cuda")) {
    throw new OperonError(
      "UNAVAILABLE",
      `instance '${instanceName}' is KIND_GPU but this onnxruntime-node build has no CUDA execution provider`,
    );
  }
  if (process.platform !== "linux") return;
  const binding = path.join(
    path.dirname(createRequire(import.meta.url).resolve("onnxruntime-node")),
    "..",
    "bin",
    "napi-v6",
    process.platform,
    process.arch,
  );
  const library = path.join(binding, "libonnxruntime_providers_cuda.so");
  if (!existsSync(library)) {
    throw new OperonError(
      "UNAVAILABLE",
      `instance '${instanceName}' is KIND_GPU but the CUDA execution provider cannot load: ${library} is missing ` +
        "(onnxruntime-node was installed without its CUDA binaries); use KIND_CPU or install them",
    );
  }
}

function oneLine(message: string): string {
  return message.replace(/\s+/g, " ").trim();
}

/** Used by the worker's backend registry. */
export function createOnnxRuntimeBackend(): Backend {
  return new OnnxRuntimeBackend();
}
