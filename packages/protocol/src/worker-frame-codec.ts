import { isDataType } from "./datatypes.js";
import { OperonError } from "./errors.js";
import type { Tensor } from "./tensor.js";
import { MAX_FRAME_BYTES, type WireTensor, type WorkerMessage } from "./worker-wire.js";

/**
 * The frames of the worker channel (worker-wire.ts holds the messages they
 * carry, the shared-memory contract and the wire version):
 *
 *   [u32 LE frameLength][u32 LE headerLength][header JSON, utf8][tensor bytes...]
 *
 * frameLength counts every byte after the frameLength field itself
 * (4 + headerLength + sum of tensor byteLengths). The header is one of the
 * messages plus `tensors: WireTensor[]`, which describes the raw tensor
 * bytes that follow, concatenated in order, with no per-element encoding.
 * The header JSON is padded with spaces so that the first tensor starts at a
 * multiple of 8 from the frame start: a decoder that joins a large frame into
 * a fresh allocation can hand out naturally aligned views.
 */

const MESSAGE_TYPES: ReadonlySet<string> = new Set([
  "load",
  "execute",
  "release",
  "shutdown",
  "bls-response",
  "cancel",
  "device-release",
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
  /** True when a tensor is on a GPU (`device`): the receiver checks only then, so other frames cost nothing more. */
  device?: true;
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
    const device = tensor.device;
    if (device !== undefined) {
      descriptor.device = {
        gpu: device.gpu,
        handle: device.handle.toString("base64"),
        byteLength: device.byteLength,
        region: device.region,
      };
    }
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
  let device = false;
  let offset = PREFIX_BYTES + headerLength;
  for (const descriptor of descriptors as unknown[]) {
    const wire = checkDescriptor(descriptor);
    if (wire.device !== undefined) {
      // On a GPU: the frame carries none of its bytes (the encoder sends a device tensor's empty data).
      const { gpu, handle, byteLength, region } = wire.device;
      device = true;
      tensors.push({
        name: wire.name,
        datatype: wire.datatype,
        shape: wire.shape,
        data: Buffer.alloc(0),
        device: { gpu, handle: Buffer.from(handle, "base64"), byteLength, region },
      });
      shmOffsets.push(undefined);
      continue;
    }
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
  const decoded: DecodedFrame = { header: header as WorkerMessage, tensors, shmOffsets };
  if (device) decoded.device = true;
  return decoded;
}

/** A device tensor's descriptor: non-negative integers, a base64 handle, and no bytes in the frame. */
function isDeviceDescriptor(device: unknown, frameBytes: number): boolean {
  const d = device as Partial<NonNullable<WireTensor["device"]>> | null;
  return (
    typeof d === "object" &&
    d !== null &&
    frameBytes === 0 &&
    Number.isSafeInteger(d.gpu) &&
    (d.gpu as number) >= 0 &&
    Number.isSafeInteger(d.byteLength) &&
    (d.byteLength as number) >= 0 &&
    Number.isSafeInteger(d.region) &&
    typeof d.handle === "string" &&
    /^[A-Za-z0-9+/]*={0,2}$/.test(d.handle)
  );
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
    (d.shmOffset !== undefined && (!Number.isSafeInteger(d.shmOffset) || d.shmOffset < 0)) ||
    (d.device !== undefined && !isDeviceDescriptor(d.device, d.byteLength as number))
  ) {
    throw new OperonError("INTERNAL", `worker channel: malformed tensor descriptor ${JSON.stringify(value)}`);
  }
  return d as WireTensor;
}
