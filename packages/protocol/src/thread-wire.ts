import type { DataType } from "./datatypes.js";
import type { ErrorKind } from "./errors.js";
import type { Tensor } from "./tensor.js";
import type { ExecuteTiming, InstanceKind, IoInfo } from "./worker-wire.js";

/**
 * The contract between the gateway and a backend instance that runs on a
 * worker_thread of the gateway process (trusted native backends: ONNX
 * Runtime, echo), as Triton runs its C++ backends on threads of the server.
 *
 * Messages travel with postMessage. The tensors of one execute or result
 * travel in ONE ArrayBuffer, transferred (moved, never cloned): a message
 * costs one allocation and one memcpy per side, whatever the tensor count.
 * Each tensor is a view at an 8-byte-aligned offset, so typed arrays of any
 * element size can be laid over it without another copy.
 *
 * Bump THREAD_WIRE_VERSION on any incompatible change; the thread refuses a
 * load message of another version.
 */
export const THREAD_WIRE_VERSION = 1;

/** One tensor's place in a message's buffer. */
export interface ThreadTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  byteOffset: number;
  byteLength: number;
}

export interface ThreadLoadMessage {
  type: "load";
  wireVersion: number;
  backend: string;
  modelPath: string;
  config: Record<string, unknown>;
  instanceName: string;
  parameters: Record<string, string>;
  instanceKind?: InstanceKind;
  deviceId?: number;
}

export interface ThreadExecuteMessage {
  type: "execute";
  requestId: number;
  buffer: ArrayBuffer;
  inputs: ThreadTensor[];
  /** undefined or empty = every output. */
  outputNames?: string[];
}

/** Finalize the backend, then the thread ends on its own. */
export interface ThreadStopMessage {
  type: "stop";
}

export type ToThreadMessage = ThreadLoadMessage | ThreadExecuteMessage | ThreadStopMessage;

export interface ThreadLoadedMessage {
  type: "loaded";
  /** The thread's Linux thread id (for its CPU time in /proc/<pid>/task/<tid>); absent elsewhere. */
  tid?: number;
  inputs: IoInfo[];
  outputs: IoInfo[];
}

export interface ThreadResultMessage {
  type: "result";
  requestId: number;
  buffer: ArrayBuffer;
  outputs: ThreadTensor[];
  timing: ExecuteTiming;
}

/** requestId 0: the load failed. */
export interface ThreadErrorMessage {
  type: "error";
  requestId: number;
  kind: ErrorKind;
  message: string;
}

export interface ThreadLogMessage {
  type: "log";
  level: "debug" | "info" | "warn" | "error";
  message: string;
  fields?: Record<string, unknown>;
}

export type FromThreadMessage = ThreadLoadedMessage | ThreadResultMessage | ThreadErrorMessage | ThreadLogMessage;

const ALIGN = 8;
const aligned = (offset: number): number => (offset + ALIGN - 1) & ~(ALIGN - 1);

/** Copies tensors into one fresh ArrayBuffer (to be transferred) and describes where each one lies. */
export function packTensors(tensors: readonly Tensor[]): { buffer: ArrayBuffer; tensors: ThreadTensor[] } {
  let total = 0;
  for (const tensor of tensors) total = aligned(total) + tensor.data.byteLength;
  // Not `new ArrayBuffer` (zero-filled, and fresh pages each time): an uninitialized
  // malloc'd store of its own, which glibc recycles across messages of the same size.
  const bytes = Buffer.allocUnsafeSlow(total);
  const buffer = bytes.buffer as ArrayBuffer;
  const described: ThreadTensor[] = new Array(tensors.length);
  let offset = 0;
  for (let i = 0; i < tensors.length; i += 1) {
    const tensor = tensors[i]!;
    offset = aligned(offset);
    bytes.set(tensor.data, offset);
    described[i] = { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape, byteOffset: offset, byteLength: tensor.data.byteLength };
    offset += tensor.data.byteLength;
  }
  return { buffer, tensors: described };
}

/** The tensors of a received message: Buffers viewing its buffer, no copy. */
export function unpackTensors(buffer: ArrayBuffer, tensors: readonly ThreadTensor[]): Tensor[] {
  const out: Tensor[] = new Array(tensors.length);
  for (let i = 0; i < tensors.length; i += 1) {
    const t = tensors[i]!;
    out[i] = { name: t.name, datatype: t.datatype, shape: t.shape, data: Buffer.from(buffer, t.byteOffset, t.byteLength) };
  }
  return out;
}
