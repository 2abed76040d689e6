import type { InstanceLoad } from "./instance-load.js";
import type { DataType } from "./datatypes.js";
import type { ErrorKind } from "./errors.js";

/**
 * The channel between the gateway and a backend worker process: one byte
 * stream (the worker's fd 3), carrying length-prefixed frames whose header
 * is one of the messages below (the frame format and its encoder and
 * decoder: worker-frame-codec.ts).
 *
 * Requests (gateway -> worker) carry a requestId the reply repeats. The
 * worker handles requests one at a time in arrival order, so the gateway may
 * pipeline them. Bump WORKER_WIRE_VERSION on any incompatible change; the
 * worker announces its version in `ready`.
 *
 * Shared memory (optional, negotiated). When gateway and worker share a host
 * and the native addon loads, the gateway creates one shared-memory segment
 * per worker and names it in the worker's environment (WORKER_SHM_NAME_ENV,
 * WORKER_SHM_BYTES_ENV). The worker maps it and says so in `ready.shm`; only
 * then may either side describe a tensor with `shmOffset` instead of sending
 * its bytes: the bytes sit at that offset in the SENDER's half of the
 * segment (see sharedRegionLayout), and the frame carries none of them.
 * Ownership of those bytes:
 *   - gateway -> worker (inputs): the worker may read them, in place, until
 *     it replies to that request (result, error, or its final response); the
 *     gateway reuses the space once that reply arrives.
 *   - worker -> gateway (outputs): the gateway copies them out, then hands
 *     the offsets back, in `execute.release` or a `release` message; the
 *     worker reuses the space only then.
 * A tensor that does not fit in the free space goes inline, as without
 * shared memory, in the same run. A peer that never offered or accepted the
 * segment never sees `shmOffset`, `release` or `ready.shm`, so both sides of
 * version 1 interoperate with or without it.
 *
 * Decoupled models (zero or many responses per request). Such a request is
 * answered by `response` / `response-error` frames instead of one `result`
 * / `error`; exactly one of them carries final=true (a final `response` may
 * carry no tensors: a final flag only), and the request is done only then:
 * its inputs stay readable by the worker until the final frame. Responses of
 * different requests may interleave. The worker takes the next request once
 * the backend's execute returned, even while earlier requests still stream.
 *
 * BLS (a model calling another model). The worker sends `bls-request` with
 * the input tensors (inline or in the worker's half, handed back like
 * outputs) and the gateway answers with one `bls-response` carrying the
 * outputs, always inline: the model may keep them as long as it likes. The
 * worker reads `bls-response` (and `release`) as they arrive, ahead of its
 * request queue, since the execute that waits for them holds that queue.
 * A failed call is `ok: false` with an error kind, never a dropped frame.
 * These frames are additions to version 1: a peer that serves no
 * TypeScript-backend model never sees them.
 *
 * Native backends (Triton C++ API, the worker's `native` backend) add, still
 * within version 1: `load.native` (which library to load), `loaded.config`
 * (the config after the backend's auto-complete), `cancel` (the client gave
 * up on requests the worker holds: the backend may stop early; each request
 * still gets its final frame) and `metrics` (the backend's custom metric
 * families as Prometheus text, sent by the worker after executes that
 * changed them; the gateway shows the latest on its metrics port).
 * Also within version 1: `execute.deviceOutputs`, tensors with `device`
 * (an operator's intermediate left in a worker's GPU memory, read by the
 * next worker through CUDA IPC) and `device-release`; the gateway sends
 * them only to native KIND_GPU instances of an operator it planned so.
 */
/**
 * Tensors smaller than this travel inline in the frame even when shared
 * memory is available: copying a few KiB into the frame costs less than the
 * allocator bookkeeping and the space hand-back that shared memory needs.
 */
export const SHM_MIN_TENSOR_BYTES = 16 * 1024;

export const WORKER_WIRE_VERSION = 1;

/** Largest frame the u32 length field can describe (bytes after the length field). */
export const MAX_FRAME_BYTES = 0xffff_ffff;

/** Worker environment: the shared-memory segment's name, when the gateway offers one. */
export const WORKER_SHM_NAME_ENV = "OPERON_WORKER_SHM";
/** Worker environment: the segment's size in bytes (both halves). */
export const WORKER_SHM_BYTES_ENV = "OPERON_WORKER_SHM_BYTES";
/** Default size of a worker's shared-memory segment: 64 MiB, half each way. */
export const DEFAULT_WORKER_SHM_BYTES = 64 * 1024 * 1024;

/** Where each direction's half lies inside a segment of a given size (64-byte aligned halves). */
export interface SharedRegionLayout {
  /** gateway -> worker: input tensors, allocated by the gateway. */
  toWorker: { offset: number; byteLength: number };
  /** worker -> gateway: output tensors, allocated by the worker. */
  toGateway: { offset: number; byteLength: number };
}

export function sharedRegionLayout(byteLength: number): SharedRegionLayout {
  const half = Math.floor(byteLength / 2 / 64) * 64;
  return { toWorker: { offset: 0, byteLength: half }, toGateway: { offset: half, byteLength: half } };
}

/** A model input or output as the backend reports it; -1 = dynamic dimension. */
export interface IoInfo {
  name: string;
  /** undefined when the backend's type has no Operon datatype (e.g. a non-tensor value). */
  datatype: DataType | undefined;
  shape: number[];
}

/** Per-tensor descriptor inside a frame header. */
export interface WireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  byteLength: number;
  /** Present: the bytes are at this offset of the sender's shared-memory half, not in the frame. */
  shmOffset?: number;
  /**
   * Present: the tensor is in a worker's GPU memory (Tensor.device, without
   * `release`; the handle in base64) and the frame carries none of its bytes
   * (byteLength 0).
   */
  device?: { gpu: number; handle: string; byteLength: number; region: number };
}

/** Backend compute time of one execute, in nanoseconds (Triton's compute_input/infer/output). */
export interface ExecuteTiming {
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

export type { InstanceKind, NativeLoadSpec } from "./instance-load.js";

// ---- gateway -> worker ----

/** The load of the instance this worker serves (the fields both worker wires share: instance-load.ts). */
export interface LoadMessage extends InstanceLoad {
  type: "load";
  requestId: number;
}

/** JSON-safe request parameters (KServe `parameters`; int64 values beyond 2^53 travel as strings). */
export type WireParameters = Record<string, string | number | boolean>;

/** Input tensors travel in the frame or in shared memory. outputNames undefined or empty = all outputs. */
export interface ExecuteMessage {
  type: "execute";
  requestId: number;
  outputNames?: string[];
  /** Offsets of earlier outputs in the worker's half that the gateway is done with (piggybacked release). */
  release?: number[];
  /** The client's request id, for backends that show it to the model (TypeScript backend). */
  id?: string;
  /**
   * The log ids (X-Request-Id) of the client requests this execute serves:
   * one, or several when the gateway batched them into one execute. The
   * worker's log lines written while it runs carry them.
   */
  logIds?: string[];
  /** The request's parameters, for backends that show them to the model. */
  parameters?: WireParameters;
  /**
   * Outputs to keep in the instance's GPU memory when its backend asks for
   * GPU memory (native backends): they come back with `device` instead of
   * bytes, and the worker holds each region until a `device-release`.
   */
  deviceOutputs?: string[];
}

/** GPU outputs (their `device.region`) the gateway is done with: the worker gives them back to its pool. No reply. */
export interface DeviceReleaseMessage {
  type: "device-release";
  regions: number[];
}

/** Output offsets in the worker's shared-memory half the gateway is done with. No reply. */
export interface ReleaseMessage {
  type: "release";
  offsets: number[];
}

/** Finish everything received so far, finalize the backend, exit 0. */
export interface ShutdownMessage {
  type: "shutdown";
}

/** The client gave up on these requests (no reply of its own; the requests still end with their final frames). */
export interface CancelMessage {
  type: "cancel";
  requestIds: number[];
}

/** The gateway's answer to a `bls-request`: ok with the output tensors (always inline), or the failure. */
export type BlsResponseMessage =
  | { type: "bls-response"; blsId: number; ok: true }
  | { type: "bls-response"; blsId: number; ok: false; kind: ErrorKind; message: string };

// ---- worker -> gateway ----

/** The worker's answer to a shared-memory offer: mapped, or why not. */
export type SharedMemoryStatus = { status: "mapped"; byteLength: number } | { status: "unavailable"; reason: string };

/** First frame a worker sends once its channel is open. */
export interface ReadyMessage {
  type: "ready";
  pid: number;
  wireVersion: number;
  backendApiVersion: number;
  /** Present when the gateway offered a segment (see the shared-memory notes above). */
  shm?: SharedMemoryStatus;
}

export interface LoadedMessage {
  type: "loaded";
  requestId: number;
  inputs: IoInfo[];
  outputs: IoInfo[];
  /** The model config as the backend completed it (native backends: TRITONBACKEND_ModelSetConfig); absent = unchanged. */
  config?: Record<string, unknown>;
}

/** The backend's custom metric families now, as Prometheus text exposition lines (the whole set, replacing earlier ones). */
export interface MetricsMessage {
  type: "metrics";
  text: string;
}

/** Output tensors travel in the frame. */
export interface ResultMessage {
  type: "result";
  requestId: number;
  timing: ExecuteTiming;
  /** Response parameters the backend set (native backends: TRITONBACKEND_ResponseSet*Parameter); absent = none. */
  parameters?: WireParameters;
}

/** The request failed; requestId 0 = a failure not tied to a request (e.g. a corrupt frame). */
export interface ErrorMessage {
  type: "error";
  requestId: number;
  kind: ErrorKind;
  message: string;
}

/** One response of a decoupled request; output tensors travel as in `result`, zero tensors allowed. */
export interface ResponseMessage {
  type: "response";
  requestId: number;
  /** The last frame for this request. */
  final: boolean;
  /** Response parameters the backend set; absent = none. */
  parameters?: WireParameters;
}

/** A failed response of a decoupled request; with final=false the request goes on streaming. */
export interface ResponseErrorMessage {
  type: "response-error";
  requestId: number;
  final: boolean;
  kind: ErrorKind;
  message: string;
}

/**
 * A decoupled model's execute returned for these requests (their responses
 * may still flow): the instance is free for the next requests, as a Triton
 * instance is once execute returns. Sent only for request-level backends
 * serving a decoupled model, after their execute call returned.
 */
export interface ExecutedMessage {
  type: "executed";
  requestIds: number[];
}

/**
 * A model asks for an inference on another model (BLS); input tensors
 * follow. version undefined = the version policy's choice; outputNames
 * undefined = all outputs. blsId is the worker's own counter, repeated by
 * the `bls-response`.
 */
export interface BlsRequestMessage {
  type: "bls-request";
  blsId: number;
  model: string;
  version?: string;
  outputNames?: string[];
  parameters?: WireParameters;
}

/** gateway -> worker. */
export type WorkerRequestMessage =
  | LoadMessage
  | ExecuteMessage
  | ReleaseMessage
  | ShutdownMessage
  | BlsResponseMessage
  | CancelMessage
  | DeviceReleaseMessage;
/** worker -> gateway. */
export type WorkerReplyMessage =
  | ReadyMessage
  | LoadedMessage
  | ResultMessage
  | ErrorMessage
  | ResponseMessage
  | ResponseErrorMessage
  | ExecutedMessage
  | BlsRequestMessage
  | MetricsMessage;
export type WorkerMessage = WorkerRequestMessage | WorkerReplyMessage;
