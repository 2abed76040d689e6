import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/**
 * The one loader of the worker's binding to Operon's libtritonserver.so
 * (build/Release/operon_tritonhost.node, built by this package's install
 * script beside the shared-memory addon; see tritonserver-host.cc). Lazy:
 * nothing loads until the first loadTritonHost(), and the result is kept.
 *
 *   OPERON_NATIVE=0                     kill switch: native backends unavailable
 *   OPERON_TRITONSERVER_LIB=<file>      use that libtritonserver.so
 *
 * There is no fallback: a Triton C++ backend needs the real library. When
 * it cannot load, nativeBackendsUnavailableReason() says why (the build's
 * UNAVAILABLE marker, a missing file, the dlopen error).
 */

/** Where native/scripts/build-tritonserver.mjs leaves its outputs (lib/, backends/, bin/, or an UNAVAILABLE marker). */
export const TRITONSERVER_BUILD_DIR = fileURLToPath(new URL("../build/tritonserver/", import.meta.url)).replace(
  /\/$/,
  "",
);
/** Operon's own backends in Triton's --backend-directory layout: <dir>/<name>/libtriton_<name>.so. The default --backend-directory. */
export const DEFAULT_BACKEND_DIRECTORY = `${TRITONSERVER_BUILD_DIR}/backends`;
export const TRITONSERVER_LIBRARY_PATH = `${TRITONSERVER_BUILD_DIR}/lib/libtritonserver.so`;
export const TRITONHOST_ADDON_PATH = fileURLToPath(new URL("../build/Release/operon_tritonhost.node", import.meta.url));

/** TRITONSERVER_LogLevel as the library reports it. */
export type TritonLogLevel = 0 | 1 | 2 | 3;

/** One event of an instance, in the order the backend made the calls (see tritonserver-host.cc). */
export type TritonHostEvent =
  | ["response", number, TritonHostResponse]
  | ["released", number, { flags: number }]
  | ["statistics", number, TritonHostStatistics]
  | ["drop", number, { buffer: Buffer }];

export interface TritonHostTensor {
  name: string;
  datatype: string;
  shape: number[];
  /** Empty for a tensor on the GPU (`device`). */
  data: Buffer;
}

/** Size of OperonHostDeviceIpcHandle: CUDA's 64-byte IPC handle of a pool region and the tensor's offset in it. */
export const DEVICE_IPC_HANDLE_BYTES = 72;

/** An input in another worker's GPU memory: imported (CUDA IPC) and read in place by the backend. */
export interface TritonHostDeviceInput extends TritonHostTensor {
  device: { gpu: number; handle: Buffer; byteLength: number };
}

/** A response output: `data` may be longer than the output (room given by the host's allocate); its first byteSize bytes are the output. */
export interface TritonHostOutput extends TritonHostTensor {
  byteSize: number;
  /**
   * The output stayed on the GPU (the request listed it in deviceOutputs and
   * the backend asked for GPU memory): `data` is empty, `handle` is for the
   * consuming process, and the region is this process's until releaseDeviceOutput(region).
   */
  device?: { gpu: number; handle: Buffer; region: number };
  /** The output could not be read back from the GPU: the response must fail with this. */
  error?: string;
}

/** This process's pool of one GPU (OperonHostDevicePoolStatistics), plus the GPU outputs JS still holds. */
export interface TritonDevicePoolStatistics {
  liveRegions: number;
  liveBytes: number;
  cachedRegions: number;
  cachedBytes: number;
  importedRegions: number;
  heldOutputs: number;
}

export interface TritonHostResponse {
  outputs: TritonHostOutput[];
  parameters: Record<string, string | number | boolean>;
  /** code: TRITONSERVER_Error_Code. */
  error?: { code: number; message: string };
  final: boolean;
  /** True for a flags-only send (TRITONBACKEND_ResponseFactorySendFlags). */
  empty: boolean;
}

export interface TritonHostStatistics {
  kind: "request" | "batch" | "response";
  success: boolean;
  batchSize: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

export interface TritonHostRequest {
  /** The host's number for the request; events carry it. */
  token: number;
  id: string;
  inputs: Array<TritonHostTensor | TritonHostDeviceInput>;
  outputNames: string[];
  /** Outputs to keep on the GPU when the backend asks for GPU memory (see TritonHostOutput.device). */
  deviceOutputs?: string[];
  parameters: Array<{ name: string; value: string | number | boolean; type?: "int" | "double" }>;
}

export interface TritonHostModelStatistics {
  successCount: number;
  failureCount: number;
  executionCount: number;
  inferenceCount: number;
  computeInferNs: number;
  responseCount: number;
}

declare const handle: unique symbol;
/** Opaque handles (napi externals). */
export type TritonBackendHandle = { readonly [handle]: "backend" };
export type TritonModelHandle = { readonly [handle]: "model" };
export type TritonInstanceHandle = { readonly [handle]: "instance" };

/** The addon's functions; errors are Errors with `tritonCode` (TRITONSERVER_Error_Code). */
export interface TritonHostBinding {
  loadBackend(name: string, libraryPath: string, backendConfigJson: string): TritonBackendHandle;
  unloadBackend(backend: TritonBackendHandle): void;
  createModel(
    backend: TritonBackendHandle,
    name: string,
    version: number,
    repositoryPath: string,
    configJson: string,
    autoComplete: boolean,
  ): TritonModelHandle;
  modelConfig(model: TritonModelHandle): string;
  modelStatistics(model: TritonModelHandle): TritonHostModelStatistics;
  destroyModel(model: TritonModelHandle): void;
  createInstance(
    model: TritonModelHandle,
    name: string,
    kind: number,
    deviceId: number,
    allocate: ((byteLength: number) => Buffer | undefined) | undefined,
    onEvent: (...event: TritonHostEvent) => void,
  ): TritonInstanceHandle;
  destroyInstance(instance: TritonInstanceHandle): void;
  execute(instance: TritonInstanceHandle, requests: TritonHostRequest[]): void;
  cancel(instance: TritonInstanceHandle, token: number): boolean;
  metricsText(): string;
  /** Gives a GPU output's region back to the pool; false when it was not held. */
  releaseDeviceOutput(region: number): boolean;
  devicePoolStatistics(gpu: number): TritonDevicePoolStatistics;
  /** Closes the regions other processes exported that this one opened on GPU `gpu`. */
  deviceImportsClose(gpu: number): void;
}

interface RawBinding extends TritonHostBinding {
  open(
    libraryPath: string,
    onLog: (level: TritonLogLevel, file: string, line: number, message: string) => void,
    verboseLevel: number,
  ): void;
}

/** Triton's TRITONSERVER_Error_Code names, by value. */
export const TRITON_ERROR_CODES = [
  "UNKNOWN",
  "INTERNAL",
  "NOT_FOUND",
  "INVALID_ARG",
  "UNAVAILABLE",
  "UNSUPPORTED",
  "ALREADY_EXISTS",
  "CANCELLED",
] as const;
export type TritonErrorCode = (typeof TRITON_ERROR_CODES)[number];

/** The error code an addon call threw with (INTERNAL for anything else). */
export function tritonErrorCodeOf(error: unknown): TritonErrorCode {
  const code = (error as { tritonCode?: unknown } | undefined)?.tritonCode;
  return typeof code === "number" && TRITON_ERROR_CODES[code] !== undefined ? TRITON_ERROR_CODES[code]! : "INTERNAL";
}

/**
 * Why native backends cannot run in this process, without loading anything
 * (undefined = they may: the files exist; loading can still fail).
 */
export function nativeBackendsUnavailableReason(): string | undefined {
  if (process.env.OPERON_NATIVE === "0") return "native backends are disabled by OPERON_NATIVE=0";
  const marker = `${TRITONSERVER_BUILD_DIR}/UNAVAILABLE`;
  if (existsSync(marker)) {
    let reason = "";
    try {
      reason = readFileSync(marker, "utf8").trim();
    } catch {
      // The marker's presence says enough.
    }
    return `native backends are unavailable: libtritonserver.so was not built (${reason || "see the npm install output"})`;
  }
  const library = libraryPath();
  if (!existsSync(library))
    return `native backends are unavailable: ${library} does not exist (run npm install to build it)`;
  if (!existsSync(TRITONHOST_ADDON_PATH))
    return `native backends are unavailable: the worker's addon ${TRITONHOST_ADDON_PATH} was not built (see native/build/node-gyp.log; run npm install)`;
  return undefined;
}

function libraryPath(): string {
  const override = process.env.OPERON_TRITONSERVER_LIB;
  return override !== undefined && override !== "" ? override : TRITONSERVER_LIBRARY_PATH;
}

let loaded: TritonHostBinding | undefined;
let failure: Error | undefined;

/**
 * Loads the addon and opens libtritonserver.so (once per process); log
 * records of every backend go to onLog from then on. Throws an Error whose
 * message says why native backends are unavailable.
 */
export function loadTritonHost(
  onLog: (level: TritonLogLevel, file: string, line: number, message: string) => void,
  verboseLevel = 0,
): TritonHostBinding {
  if (loaded !== undefined) return loaded;
  if (failure !== undefined) throw failure;
  const reason = nativeBackendsUnavailableReason();
  if (reason !== undefined) {
    failure = new Error(reason);
    throw failure;
  }
  try {
    const binding = createRequire(import.meta.url)(TRITONHOST_ADDON_PATH) as Partial<RawBinding>;
    if (typeof binding.open !== "function" || typeof binding.execute !== "function")
      throw new Error(`${TRITONHOST_ADDON_PATH} is not Operon's tritonserver addon`);
    binding.open(libraryPath(), onLog, verboseLevel);
    loaded = binding as RawBinding;
    return loaded;
  } catch (error) {
    failure = new Error(`native backends are unavailable: ${(error as Error).message.split("\n")[0]}`, {
      cause: error,
    });
    throw failure;
  }
}
