import { DATATYPES, type DataType } from "./datatypes.js";
import type { ErrorKind } from "./errors.js";
import type { Tensor } from "./tensor.js";
import type { InstanceLoad } from "./instance-load.js";
import type { ExecuteTiming, IoInfo } from "./worker-wire.js";

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
 * An execute and its result describe their tensors as numbers only (a
 * TensorLayout), not ThreadTensor objects, whenever every tensor's name is
 * one the instance declared: postMessage clones strings and nested objects
 * field by field, and that was most of the hop's cost (below).
 *
 * Bump THREAD_WIRE_VERSION on any incompatible change; the thread refuses a
 * load message of another version.
 */
export const THREAD_WIRE_VERSION = 2;

/** One tensor's place in a message's buffer. */
export interface ThreadTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  byteOffset: number;
  byteLength: number;
}

/** The load of the instance this thread serves (the fields both worker wires share: instance-load.ts). */
export interface ThreadLoadMessage extends InstanceLoad {
  type: "load";
  wireVersion: number;
}

export interface ThreadExecuteMessage {
  type: "execute";
  requestId: number;
  buffer: ArrayBuffer;
  /** The inputs as a TensorLayout over the instance's declared inputs (the common case), or as objects. */
  inputs: TensorLayout | ThreadTensor[];
  /** undefined or empty = every output. Indexes into the declared outputs when all are declared ones. */
  outputNames?: string[] | number[];
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
  /** The outputs as a TensorLayout over the instance's declared outputs (the common case), or as objects. */
  outputs: TensorLayout | ThreadTensor[];
  /** computeInputNs, computeInferNs, computeOutputNs (numbers, not an object: see TensorLayout). */
  timing: [number, number, number];
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

/**
 * Buffers their holder may give away: allocateHandOff made them for one
 * use (a batch the scheduler joined), so packTensors may transfer them as
 * they are instead of copying. A WeakSet, so a buffer that is never sent
 * costs nothing to forget.
 */
const handOffBuffers = new WeakSet<ArrayBuffer>();

/**
 * A fresh buffer of `bytes` that packTensors will send without a copy when
 * the tensors it is asked to pack are exactly views of it at aligned
 * offsets. Contract for the caller: nothing reads those tensors after they
 * were handed to an instance (the transfer detaches the buffer here).
 */
export function allocateHandOff(bytes: number): Buffer {
  const data = Buffer.allocUnsafeSlow(bytes);
  handOffBuffers.add(data.buffer as ArrayBuffer);
  return data;
}

/** The 8-byte-aligned offset at or after `offset` (where packed tensors start). */
export function alignedOffset(offset: number): number {
  return aligned(offset);
}

/**
 * Copies tensors into one fresh ArrayBuffer (to be transferred) and
 * describes where each one lies; tensors that all lie in one hand-off
 * buffer (allocateHandOff) travel in it, with no copy.
 */
export function packTensors(tensors: readonly Tensor[]): { buffer: ArrayBuffer; tensors: ThreadTensor[] } {
  const handOff = handOffOf(tensors);
  if (handOff !== undefined) {
    handOffBuffers.delete(handOff);
    return { buffer: handOff, tensors: tensors.map(describeInPlace) };
  }
  let total = 0;
  for (const tensor of tensors) total = aligned(total) + tensor.data.byteLength;
  // Not `new ArrayBuffer` (zero-filled, and fresh pages each time): an uninitialized
  // malloc'd store of its own, which glibc recycles across messages of the same size.
  const bytes = Buffer.allocUnsafeSlow(total);
  return { buffer: bytes.buffer as ArrayBuffer, tensors: writePacked(bytes, tensors) };
}

/**
 * Packs a result into the buffer its execute message brought, which the
 * thread owns once the backend has run (the gateway transferred it away):
 *
 * - outputs that are all views of that buffer, at aligned offsets (an
 *   identity or pass-through model hands its inputs back) travel as they
 *   lie, with no copy at all;
 * - outputs that do not alias it and fit are copied to its start: no fresh
 *   allocation (a classifier's outputs are far smaller than its inputs);
 * - otherwise (larger outputs, or a partial alias) a fresh buffer, as
 *   packTensors.
 *
 * The returned buffer is to be transferred; the received one must not be
 * read again afterwards (it may be the one returned).
 */
export function packTensorsReusing(
  received: ArrayBuffer,
  tensors: readonly Tensor[],
): { buffer: ArrayBuffer; tensors: ThreadTensor[] } {
  let aliasing = 0;
  let total = 0;
  for (const tensor of tensors) {
    if (tensor.data.buffer === received) aliasing += 1;
    total = aligned(total) + tensor.data.byteLength;
  }
  if (
    aliasing === tensors.length &&
    tensors.length > 0 &&
    tensors.every((tensor) => tensor.data.byteOffset % ALIGN === 0)
  ) {
    return {
      buffer: received,
      tensors: tensors.map(describeInPlace),
    };
  }
  if (aliasing > 0 || total > received.byteLength) return packTensors(tensors);
  const bytes = Buffer.from(received, 0, total);
  return { buffer: received, tensors: writePacked(bytes, tensors) };
}

/** Copies the tensors into `bytes` at 8-byte-aligned offsets from 0 and describes where each one lies. */
function writePacked(bytes: Buffer, tensors: readonly Tensor[]): ThreadTensor[] {
  const described: ThreadTensor[] = new Array(tensors.length);
  let offset = 0;
  for (let i = 0; i < tensors.length; i += 1) {
    const tensor = tensors[i]!;
    offset = aligned(offset);
    bytes.set(tensor.data, offset);
    described[i] = {
      name: tensor.name,
      datatype: tensor.datatype,
      shape: tensor.shape,
      byteOffset: offset,
      byteLength: tensor.data.byteLength,
    };
    offset += tensor.data.byteLength;
  }
  return described;
}

/** The hand-off buffer all the tensors are aligned views of, if there is one. */
function handOffOf(tensors: readonly Tensor[]): ArrayBuffer | undefined {
  const first = tensors[0]?.data.buffer;
  if (first === undefined || !handOffBuffers.has(first as ArrayBuffer)) return undefined;
  for (const tensor of tensors)
    if (tensor.data.buffer !== first || tensor.data.byteOffset % ALIGN !== 0) return undefined;
  return first as ArrayBuffer;
}

function describeInPlace(tensor: Tensor): ThreadTensor {
  return {
    name: tensor.name,
    datatype: tensor.datatype,
    shape: tensor.shape,
    byteOffset: tensor.data.byteOffset,
    byteLength: tensor.data.byteLength,
  };
}

/**
 * Tensor descriptions as one array of numbers: `[count, then per tensor: name index, datatype index, rank,
 * ...dims, byteOffset, byteLength]`, names indexing a table both sides hold (the instance's declared inputs for
 * an execute, its declared outputs for a result, from its load) and datatypes indexing DATATYPES.
 *
 * Why: postMessage serializes strings and nested objects one field at a time. A round trip of add_sub's
 * two-tensor execute and result cost 21–29 µs of CPU with ThreadTensor objects and 10 µs with an array of
 * numbers (the buffer transferred either way), on every batch, on both the gateway's thread and the
 * instance's.
 */
export type TensorLayout = number[];

/** A name table for TensorLayout: the names an instance declared, by position. */
export class TensorNames {
  private readonly index = new Map<string, number>();

  constructor(readonly names: readonly string[]) {
    names.forEach((name, i) => this.index.set(name, i));
  }

  /** The layout of `tensors`, or undefined when one of them has a name outside the table. */
  layoutOf(tensors: readonly ThreadTensor[]): TensorLayout | undefined {
    const layout: number[] = [tensors.length];
    for (const tensor of tensors) {
      const name = this.index.get(tensor.name);
      if (name === undefined) return undefined;
      layout.push(name, DATATYPE_INDEX.get(tensor.datatype)!, tensor.shape.length);
      for (const dim of tensor.shape) layout.push(dim);
      layout.push(tensor.byteOffset, tensor.byteLength);
    }
    return layout;
  }

  /** The positions of `names` in the table, or undefined when one is not in it. */
  indexesOf(names: readonly string[]): number[] | undefined {
    const indexes: number[] = new Array(names.length);
    for (let i = 0; i < names.length; i += 1) {
      const at = this.index.get(names[i]!);
      if (at === undefined) return undefined;
      indexes[i] = at;
    }
    return indexes;
  }

  /** The names at `indexes` (what indexesOf encoded); names pass through. */
  namesOf(selection: readonly string[] | readonly number[]): string[] {
    return selection.map((entry) => (typeof entry === "number" ? this.nameAt(entry) : entry));
  }

  /** The tensors a message describes (TensorLayout or objects): Buffers viewing its buffer, no copy. */
  unpack(buffer: ArrayBuffer, tensors: TensorLayout | readonly ThreadTensor[]): Tensor[] {
    if (tensors.length === 0 || typeof tensors[0] !== "number") {
      return unpackTensors(buffer, tensors as readonly ThreadTensor[]);
    }
    const layout = tensors as TensorLayout;
    const count = layout[0]!;
    const out: Tensor[] = new Array(count);
    let at = 1;
    for (let i = 0; i < count; i += 1) {
      const name = this.nameAt(layout[at]!);
      const datatype = DATATYPES[layout[at + 1]!];
      if (datatype === undefined) throw new Error(`thread wire: datatype index ${layout[at + 1]} is not a datatype`);
      const rank = layout[at + 2]!;
      at += 3;
      const shape = layout.slice(at, at + rank);
      at += rank;
      out[i] = { name, datatype, shape, data: Buffer.from(buffer, layout[at]!, layout[at + 1]!) };
      at += 2;
    }
    return out;
  }

  private nameAt(index: number): string {
    const name = this.names[index];
    if (name === undefined)
      throw new Error(`thread wire: name index ${index} is outside the table of ${this.names.length}`);
    return name;
  }
}

const DATATYPE_INDEX = new Map<string, number>(DATATYPES.map((datatype, i) => [datatype, i]));

/** The tensors of a received message: Buffers viewing its buffer, no copy. */
export function unpackTensors(buffer: ArrayBuffer, tensors: readonly ThreadTensor[]): Tensor[] {
  const out: Tensor[] = new Array(tensors.length);
  for (let i = 0; i < tensors.length; i += 1) {
    const t = tensors[i]!;
    out[i] = {
      name: t.name,
      datatype: t.datatype,
      shape: t.shape,
      data: Buffer.from(buffer, t.byteOffset, t.byteLength),
    };
  }
  return out;
}

/**
 * The in-process contract for an "inline" instance (a model run on the
 * gateway's event loop itself, see the gateway's InlineInstance): the
 * gateway imports @operon/worker's in-process-backend.js by path, as it
 * starts thread-main.js by path, and sees only this shape of it. The same
 * module loads a thread instance's backend, so both run exactly the same
 * backend code.
 */
export interface InProcessBackendModule {
  /** Creates and initializes the backend; throws OperonError (UNSUPPORTED for a backend that may not run in the gateway). */
  loadInProcessBackend(load: InstanceLoad, log: InProcessBackendLog): Promise<InProcessBackend>;
}

export type InProcessBackendLog = (
  level: "debug" | "info" | "warn" | "error",
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface InProcessBackend {
  readonly inputs: IoInfo[];
  readonly outputs: IoInfo[];
  /** Tensors in, tensors out: the caller's buffers are read in place, nothing is copied or transferred. */
  execute(inputs: Tensor[], outputNames?: string[]): Promise<{ outputs: Tensor[]; timing: ExecuteTiming }>;
  finalize(): Promise<void>;
}
