import { ShmRingAllocator } from "@operon/protocol/shm-ring-allocator";
import type { Tensor } from "@operon/protocol/tensor";
import { type SharedMemoryStatus, SHM_MIN_TENSOR_BYTES, sharedRegionLayout } from "@operon/protocol/worker-wire";
import type { BackendLog } from "@operon/backend-api/backend";

/**
 * The shared-memory segment the gateway offered (see worker-wire): mapped
 * (the whole segment; the server splits it into its two halves), or the
 * reason it could not be, which the gateway learns in `ready`.
 */
export type WorkerSharedMemory = { mapped: true; segment: Buffer } | { mapped: false; reason: string };

/**
 * The worker's side of the shared-memory transport. Input tensors are views
 * into the gateway's half (the frame decoder reads them there, no copy);
 * each output is copied once into this worker's half, or written there in
 * place by the backend (allocateOutput), and the gateway hands its space
 * back (`release`) after copying it out. An output that does not fit goes
 * inline.
 */
export class WorkerShmOutputs {
  /** What the frame decoder needs to read inputs in the gateway's half. */
  readonly decoderOptions: { sharedMemory?: Buffer };
  /** What `ready` tells the gateway of its offer; undefined when it offered none. */
  readonly status: SharedMemoryStatus | undefined;
  /** The worker -> gateway half and its allocator, when shared memory is mapped. */
  private readonly outputs: { half: Buffer; ring: ShmRingAllocator } | undefined;
  /** Offsets of this worker's half handed to the backend by allocateOutput and not yet sent or freed, with their sizes. */
  private readonly backendOutputs = new Map<number, number>();

  constructor(
    sharedMemory: WorkerSharedMemory | undefined,
    private readonly log: BackendLog,
    private readonly isExited: () => boolean,
  ) {
    if (sharedMemory?.mapped === true) {
      const layout = sharedRegionLayout(sharedMemory.segment.length);
      const toWorker = sharedMemory.segment.subarray(
        layout.toWorker.offset,
        layout.toWorker.offset + layout.toWorker.byteLength,
      );
      const toGateway = sharedMemory.segment.subarray(
        layout.toGateway.offset,
        layout.toGateway.offset + layout.toGateway.byteLength,
      );
      this.decoderOptions = { sharedMemory: toWorker };
      this.outputs = { half: toGateway, ring: new ShmRingAllocator(toGateway.length) };
      this.status = { status: "mapped", byteLength: sharedMemory.segment.length };
    } else {
      this.decoderOptions = {};
      this.outputs = undefined;
      this.status = sharedMemory !== undefined ? { status: "unavailable", reason: sharedMemory.reason } : undefined;
    }
  }

  /** BackendHost.allocateOutput: room in this worker's half that the backend writes an output into (no copy later). */
  allocateOutput(byteLength: number): Buffer | undefined {
    const shm = this.outputs;
    if (shm === undefined || this.isExited() || byteLength < SHM_MIN_TENSOR_BYTES) return undefined;
    const offset = shm.ring.allocate(byteLength);
    if (offset === undefined) return undefined;
    this.backendOutputs.set(offset, byteLength);
    return shm.half.subarray(offset, offset + byteLength);
  }

  /** BackendHost.freeOutput: a Buffer from allocateOutput the backend did not send. */
  freeOutput(buffer: Buffer): void {
    const offset = this.backendOutputOffset(buffer);
    if (offset === undefined) return;
    this.backendOutputs.delete(offset);
    this.outputs?.ring.release(offset);
  }

  /**
   * Copies each output that fits into this worker's shared half (one copy;
   * the gateway copies it out and releases it). Undefined entries go inline.
   */
  placeOutputs(outputs: readonly Tensor[]): Array<number | undefined> {
    const shm = this.outputs;
    if (shm === undefined || this.isExited()) return [];
    return outputs.map((output) => {
      // Written in place by the backend (allocateOutput): the gateway owns that range from now on.
      const inPlace = this.backendOutputOffset(output.data);
      if (inPlace !== undefined) {
        this.backendOutputs.delete(inPlace);
        return inPlace;
      }
      if (output.data.length < SHM_MIN_TENSOR_BYTES) return undefined;
      const offset = shm.ring.allocate(output.data.length);
      if (offset !== undefined) shm.half.set(output.data, offset);
      return offset;
    });
  }

  /** Offsets placed for a frame that could not be sent: the gateway never learns of them, so they are free again. */
  takeBack(shmOffsets: ReadonlyArray<number | undefined>): void {
    for (const offset of shmOffsets) if (offset !== undefined) this.outputs?.ring.release(offset);
  }

  /** The gateway's `release` (or an execute's piggybacked one): that output space is free. */
  releaseOutputs(offsets: unknown): void {
    if (!Array.isArray(offsets)) {
      this.log("error", "ignoring a malformed shared-memory release from the gateway", { offsets });
      return;
    }
    for (const offset of offsets as number[]) {
      try {
        if (this.outputs === undefined) throw new RangeError("no shared memory is mapped");
        this.outputs.ring.release(offset);
      } catch (error) {
        // The gateway's bookkeeping and ours disagree: that space stays in use, everything else goes on.
        this.log("error", "ignoring a bad shared-memory release from the gateway", {
          offset,
          reason: (error as Error).message,
        });
      }
    }
  }

  /** The offset in this worker's half of a Buffer from allocateOutput (undefined for any other Buffer). */
  private backendOutputOffset(data: Buffer): number | undefined {
    const shm = this.outputs;
    if (shm === undefined || data.buffer !== shm.half.buffer) return undefined;
    const offset = data.byteOffset - shm.half.byteOffset;
    const size = this.backendOutputs.get(offset);
    return size !== undefined && data.length <= size ? offset : undefined;
  }
}
