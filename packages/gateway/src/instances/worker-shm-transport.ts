import { asOperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import { SHM_MIN_TENSOR_BYTES, type WorkerRequestMessage } from "@operon/protocol/worker-wire";
import { type SharedSegment, dropSegment, unlinkSegment } from "./shm-segment.js";

/** Longest a copied-out output's space waits to be handed back when no execute frame carries it. */
const RELEASE_FLUSH_MS = 2;

/** Outputs at least this large are copied out of shared memory into the addon's recycled memory. */
const LARGE_COPY_BYTES = 64 * 1024;

/** What the transport needs of the worker handle it serves. */
export interface ShmTransportHost {
  /** Writes a control frame to the worker (no tensors). */
  send(message: WorkerRequestMessage): void;
  isExited(): boolean;
  log(message: string, level?: "warn" | "error"): void;
}

/**
 * The shared-memory side of one worker's transport (transportKind "shm"):
 * each input is copied once into the gateway -> worker half, where the
 * worker reads it in place; its space is reused when the request's reply
 * arrives. Outputs come back in the worker -> gateway half; once copied out,
 * their offsets go back to the worker on the next execute frame, or in a
 * `release` frame when no execute has carried them within RELEASE_FLUSH_MS
 * (a write is costly; under load the next execute always comes first). A
 * tensor that does not fit in the free space, or is smaller than
 * SHM_MIN_TENSOR_BYTES, travels in the frame, as with the socket transport.
 */
export class WorkerShmTransport {
  /** The segment while offered or in use; undefined on the socket transport and after exit. */
  private segment: SharedSegment | undefined;
  private mapped = false;
  /** Why the worker did not take up the segment, once it said so. */
  declined: string | undefined;
  /** Output offsets copied out and not yet handed back to the worker. */
  private outputReleases: number[] = [];
  private releaseScheduled = false;

  constructor(
    segment: SharedSegment | undefined,
    private readonly host: ShmTransportHost,
  ) {
    this.segment = segment;
  }

  /** The worker -> gateway half, where received frames' shared-memory tensors lie; undefined on the socket transport. */
  get toGateway(): Buffer | undefined {
    return this.segment?.toGateway;
  }

  /** "shm" once the worker has mapped the shared segment; "socket" otherwise (and after exit, if it was). */
  get kind(): "shm" | "socket" {
    return this.mapped ? "shm" : "socket";
  }

  /** Copies each input that fits into the gateway -> worker half; undefined entries travel in the frame. */
  placeInputs(tensors: readonly Tensor[]): Array<number | undefined> {
    const shm = this.segment;
    if (shm === undefined || !this.mapped || tensors.length === 0) return [];
    return tensors.map((tensor) => {
      if (tensor.data.length < SHM_MIN_TENSOR_BYTES) return undefined;
      const offset = shm.inputRing.allocate(tensor.data.length);
      if (offset !== undefined) shm.toWorker.set(tensor.data, offset);
      return offset;
    });
  }

  /** The worker is done with these inputs (it sent its final reply, or the request never left). */
  releaseInputs(offsets: readonly number[]): void {
    for (const offset of offsets) this.segment?.inputRing.release(offset);
  }

  /** Copies shared-memory outputs out into fresh Buffers and queues their offsets for release. */
  takeOutputs(tensors: Tensor[], shmOffsets: Array<number | undefined>): Tensor[] {
    if (!shmOffsets.some((offset) => offset !== undefined)) return tensors;
    return tensors.map((tensor, i) => {
      const offset = shmOffsets[i];
      if (offset === undefined) return tensor;
      const data = this.freshBuffer(tensor.data.length);
      tensor.data.copy(data);
      this.outputReleases.push(offset);
      return { ...tensor, data };
    });
  }

  /** The output offsets to hand back now (an execute frame carries them); empty = none. */
  takeOutputReleases(): number[] {
    if (this.outputReleases.length === 0) return [];
    const releases = this.outputReleases;
    this.outputReleases = [];
    return releases;
  }

  /** Offsets taken for a frame that could not be sent: they go back first in line. */
  returnOutputReleases(releases: number[]): void {
    this.outputReleases.unshift(...releases);
    if (releases.length > 0) this.scheduleReleaseFlush();
  }

  /** Hands released output space back soon, unless an execute frame carries it first. */
  scheduleReleaseFlush(): void {
    if (this.releaseScheduled || this.outputReleases.length === 0) return;
    this.releaseScheduled = true;
    setTimeout(() => {
      this.releaseScheduled = false;
      const offsets = this.takeOutputReleases();
      if (offsets.length === 0 || this.host.isExited()) return;
      try {
        this.host.send({ type: "release", offsets });
      } catch (error) {
        this.host.log(`cannot hand shared memory back to the worker: ${asOperonError(error).message}`);
      }
    }, RELEASE_FLUSH_MS).unref();
  }

  /** The worker's answer to the shared-memory offer; either way the name can go now. */
  onReady(
    status: { status: "mapped"; byteLength: number } | { status: "unavailable"; reason: string } | undefined,
  ): void {
    const shm = this.segment;
    if (shm === undefined) return;
    unlinkSegment(shm);
    if (status?.status === "mapped" && status.byteLength === shm.buffer.byteLength) {
      this.mapped = true;
      return;
    }
    this.declined =
      status === undefined
        ? "the worker did not take up the shared-memory offer"
        : status.status === "unavailable"
          ? status.reason
          : `the worker mapped ${status.byteLength} bytes, the gateway created ${shm.buffer.byteLength}`;
    this.host.log(`shared memory not used, tensors travel over the socket: ${this.declined}`, "warn");
    dropSegment(shm);
    this.segment = undefined;
  }

  /** The worker exited: every output was copied out as it arrived, so nothing refers to the segment any more. */
  drop(): void {
    dropSegment(this.segment);
    this.segment = undefined;
    this.outputReleases = [];
  }

  /**
   * Memory for a copy out of the segment. Large ones come from the addon's
   * recycling allocator: a fresh malloc of that size would page-fault on
   * every page during the copy, costing more than the copy itself.
   */
  private freshBuffer(byteLength: number): Buffer {
    if (byteLength < LARGE_COPY_BYTES || this.segment === undefined) return Buffer.allocUnsafe(byteLength);
    return Buffer.from(this.segment.api.allocate(byteLength));
  }
}
