import type { InstanceLoad } from "./instance-load.js";
import { type DataType, isDataType } from "./datatypes.js";
import { type ErrorKind, OperonError } from "./errors.js";
import type { Tensor } from "./tensor.js";

/**
 * The channel between the gateway and a backend worker process: one byte
 * stream (the worker's fd 3), carrying length-prefixed frames.
 *
 *   [u32 LE frameLength][u32 LE headerLength][header JSON, utf8][tensor bytes...]
 *
 * frameLength counts every byte after the frameLength field itself
 * (4 + headerLength + sum of tensor byteLengths). The header is one of the
 * messages below plus `tensors: WireTensor[]`, which describes the raw tensor
 * bytes that follow, concatenated in order, with no per-element encoding.
 * The header JSON is padded with spaces so that the first tensor starts at a
 * multiple of 8 from the frame start: a decoder that joins a large frame into
 * a fresh allocation can hand out naturally aligned views.
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
  | CancelMessage;
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

const MESSAGE_TYPES: ReadonlySet<string> = new Set([
  "load",
  "execute",
  "release",
  "shutdown",
  "bls-response",
  "cancel",
  "ready",
  "loaded",
  "result",
  "error",
  "response",
  "response-error",
  "executed",
  "bls-request",
  "metrics",
]);

export interface DecodedFrame {
  header: WorkerMessage;
  /**
   * Views, no copies: into the frame's memory (byteOffset may be unaligned),
   * or for a shared-memory tensor into the sender's half of the segment
   * (64-byte aligned; valid only until its space is handed back).
   */
  tensors: Tensor[];
  /** Per tensor, its offset in the sender's shared-memory half; undefined = its bytes came in the frame. */
  shmOffsets: Array<number | undefined>;
}

const PREFIX_BYTES = 8;
const ALIGN = 8;

/**
 * Encodes one frame as a list of buffers: the prefix+header, then each
 * inline tensor's data as is (not copied). Write them in one go (see
 * writeFrame). shmOffsets[i], when defined, says tensor i's bytes were
 * already placed at that offset of the sender's shared-memory half: only
 * its descriptor goes into the frame.
 */
export function encodeFrame(
  header: WorkerMessage,
  tensors: readonly Tensor[] = [],
  shmOffsets: ReadonlyArray<number | undefined> = [],
): Buffer[] {
  const descriptors: WireTensor[] = tensors.map((tensor, i) => {
    const descriptor: WireTensor = {
      name: tensor.name,
      datatype: tensor.datatype,
      shape: tensor.shape,
      byteLength: tensor.data.length,
    };
    const shmOffset = shmOffsets[i];
    if (shmOffset !== undefined) descriptor.shmOffset = shmOffset;
    return descriptor;
  });
  const json = Buffer.from(JSON.stringify({ ...header, tensors: descriptors }), "utf8");
  const headerLength = json.length + ((ALIGN - ((PREFIX_BYTES + json.length) % ALIGN)) % ALIGN);
  let tensorBytes = 0;
  tensors.forEach((tensor, i) => {
    if (shmOffsets[i] === undefined) tensorBytes += tensor.data.length;
  });
  const frameLength = 4 + headerLength + tensorBytes;
  if (frameLength > MAX_FRAME_BYTES) {
    throw new OperonError(
      "INVALID_ARG",
      `frame of ${frameLength} bytes exceeds the worker channel limit of ${MAX_FRAME_BYTES} bytes`,
    );
  }
  const head = Buffer.allocUnsafe(PREFIX_BYTES + headerLength);
  head.writeUInt32LE(frameLength, 0);
  head.writeUInt32LE(headerLength, 4);
  json.copy(head, PREFIX_BYTES);
  head.fill(0x20, PREFIX_BYTES + json.length);
  const out: Buffer[] = [head];
  tensors.forEach((tensor, i) => {
    if (shmOffsets[i] === undefined && tensor.data.length > 0) out.push(tensor.data);
  });
  return out;
}

/** The corkable part of a net.Socket / stream.Writable that writeFrame needs. */
export interface FrameSink {
  cork(): void;
  uncork(): void;
  write(chunk: Buffer): boolean;
}

/**
 * Writes one frame as a gathered write (cork + uncork lets the socket use
 * writev): tensor bytes are never copied into a staging buffer. Returns
 * write()'s backpressure signal for the last piece.
 */
export function writeFrame(
  sink: FrameSink,
  header: WorkerMessage,
  tensors: readonly Tensor[] = [],
  shmOffsets: ReadonlyArray<number | undefined> = [],
): boolean {
  const pieces = encodeFrame(header, tensors, shmOffsets);
  sink.cork();
  let ok = true;
  try {
    for (const piece of pieces) ok = sink.write(piece);
  } finally {
    sink.uncork();
  }
  return ok;
}

/**
 * Incremental frame decoder: push stream chunks, get complete frames back.
 * Chunks are collected and joined once per frame (a frame inside one chunk
 * is a view, not a copy), so a large frame costs one copy, not a quadratic
 * re-concatenation. A malformed frame throws OperonError INTERNAL; the
 * stream is then unusable.
 *
 * `sharedMemory` is the peer's half of the shared segment (where tensors
 * with a shmOffset lie); without it such a tensor is a malformed frame.
 */
export class FrameDecoder {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  /** Total bytes of the frame being collected, prefix included; undefined until known. */
  private needed: number | undefined;
  private readonly maxFrameBytes: number;
  private readonly sharedMemory: Buffer | undefined;

  constructor(options: { maxFrameBytes?: number; sharedMemory?: Buffer } = {}) {
    this.maxFrameBytes = Math.min(options.maxFrameBytes ?? MAX_FRAME_BYTES, MAX_FRAME_BYTES);
    this.sharedMemory = options.sharedMemory;
  }

  /** Bytes received but not yet emitted as a frame. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  push(chunk: Buffer): DecodedFrame[] {
    const frames: DecodedFrame[] = [];
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    for (;;) {
      if (this.needed === undefined) {
        if (this.buffered < 4) break;
        const frameLength = this.peekUInt32();
        if (frameLength < 4 || frameLength > this.maxFrameBytes) {
          throw new OperonError("INTERNAL", `worker channel: invalid frame length ${frameLength}`);
        }
        this.needed = 4 + frameLength;
      }
      if (this.buffered < this.needed) break;
      const frame = this.take(this.needed);
      this.needed = undefined;
      frames.push(parseFrame(frame, this.sharedMemory));
    }
    return frames;
  }

  private peekUInt32(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readUInt32LE(0);
    const bytes = Buffer.allocUnsafe(4);
    let filled = 0;
    for (const chunk of this.chunks) {
      filled += chunk.copy(bytes, filled, 0, Math.min(chunk.length, 4 - filled));
      if (filled === 4) break;
    }
    return bytes.readUInt32LE(0);
  }

  /** Removes and returns the first n buffered bytes (a view when they sit in one chunk). */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const pieces: Buffer[] = [];
    let remaining = n;
    let used = 0;
    for (const chunk of this.chunks) {
      if (chunk.length <= remaining) {
        pieces.push(chunk);
        remaining -= chunk.length;
        used += 1;
        if (remaining === 0) break;
      } else {
        pieces.push(chunk.subarray(0, remaining));
        this.chunks[used] = chunk.subarray(remaining);
        remaining = 0;
        break;
      }
    }
    this.chunks.splice(0, used);
    return Buffer.concat(pieces, n);
  }
}

function parseFrame(frame: Buffer, sharedMemory: Buffer | undefined): DecodedFrame {
  const headerLength = frame.readUInt32LE(4);
  if (PREFIX_BYTES + headerLength > frame.length) {
    throw new OperonError(
      "INTERNAL",
      `worker channel: header length ${headerLength} exceeds frame of ${frame.length} bytes`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(frame.toString("utf8", PREFIX_BYTES, PREFIX_BYTES + headerLength));
  } catch (error) {
    throw new OperonError("INTERNAL", `worker channel: frame header is not JSON: ${(error as Error).message}`);
  }
  if (
    typeof parsed !== "object" ||
    parsed === null ||
    !MESSAGE_TYPES.has((parsed as { type?: unknown }).type as string)
  ) {
    throw new OperonError("INTERNAL", "worker channel: frame header has no known message type");
  }
  const { tensors: descriptors = [], ...header } = parsed as { tensors?: unknown };
  if (!Array.isArray(descriptors))
    throw new OperonError("INTERNAL", "worker channel: frame header 'tensors' is not a list");
  const tensors: Tensor[] = [];
  const shmOffsets: Array<number | undefined> = [];
  let offset = PREFIX_BYTES + headerLength;
  for (const descriptor of descriptors as unknown[]) {
    const wire = checkDescriptor(descriptor);
    if (wire.shmOffset !== undefined) {
      const shmEnd = wire.shmOffset + wire.byteLength;
      if (sharedMemory === undefined) {
        throw new OperonError(
          "INTERNAL",
          `worker channel: tensor '${wire.name}' is in shared memory, but no shared segment is mapped`,
        );
      }
      if (shmEnd > sharedMemory.length) {
        throw new OperonError(
          "INTERNAL",
          `worker channel: tensor '${wire.name}' runs past the end of the shared-memory half (${shmEnd} > ${sharedMemory.length})`,
        );
      }
      tensors.push({
        name: wire.name,
        datatype: wire.datatype,
        shape: wire.shape,
        data: sharedMemory.subarray(wire.shmOffset, shmEnd),
      });
      shmOffsets.push(wire.shmOffset);
      continue;
    }
    const end = offset + wire.byteLength;
    if (end > frame.length) {
      throw new OperonError("INTERNAL", `worker channel: tensor '${wire.name}' runs past the end of the frame`);
    }
    tensors.push({ name: wire.name, datatype: wire.datatype, shape: wire.shape, data: frame.subarray(offset, end) });
    shmOffsets.push(undefined);
    offset = end;
  }
  if (offset !== frame.length) {
    throw new OperonError(
      "INTERNAL",
      `worker channel: ${frame.length - offset} bytes after the last tensor of a frame`,
    );
  }
  return { header: header as WorkerMessage, tensors, shmOffsets };
}

function checkDescriptor(value: unknown): WireTensor {
  const d = value as Partial<WireTensor> | null;
  if (
    typeof d !== "object" ||
    d === null ||
    typeof d.name !== "string" ||
    typeof d.datatype !== "string" ||
    !isDataType(d.datatype) ||
    !Array.isArray(d.shape) ||
    !d.shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0) ||
    !Number.isSafeInteger(d.byteLength) ||
    (d.byteLength as number) < 0 ||
    (d.shmOffset !== undefined && (!Number.isSafeInteger(d.shmOffset) || d.shmOffset < 0))
  ) {
    throw new OperonError("INTERNAL", `worker channel: malformed tensor descriptor ${JSON.stringify(value)}`);
  }
  return d as WireTensor;
}
