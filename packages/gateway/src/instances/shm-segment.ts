import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { type SharedMemoryApi, loadSharedMemory, sharedMemoryUnavailableReason } from "@operon/native";
import { OperonError } from "@operon/protocol/errors";
import { ShmRingAllocator } from "@operon/protocol/shm-ring-allocator";
import { DEFAULT_WORKER_SHM_BYTES, sharedRegionLayout } from "@operon/protocol/worker-wire";

/**
 * The shared-memory segment of one worker process: created and named here,
 * mapped by the worker, unlinked as soon as both sides hold it, swept from
 * /dev/shm when a gateway died before it could unlink it.
 */

/** What createSegment needs of the worker's spawn options. */
export interface SegmentOptions {
  instanceName: string;
  transport?: "auto" | "shm" | "socket";
  sharedMemoryBytes?: number;
}

/**
 * One worker's shared-memory segment, as the gateway holds it. The name is
 * unlinked as soon as the worker has mapped it (or failed to), so a crash of
 * either process leaves nothing in /dev/shm; the mapping is closed when the
 * worker exits.
 */
export interface SharedSegment {
  api: SharedMemoryApi;
  name: string;
  buffer: ArrayBuffer;
  linked: boolean;
  /** gateway -> worker: the inputs this gateway writes. */
  toWorker: Buffer;
  inputRing: ShmRingAllocator;
  /** worker -> gateway: the outputs the worker writes, copied out here. */
  toGateway: Buffer;
}

let reportedNoSharedMemory = false;

/**
 * Names this process created and nobody has unlinked yet: a worker maps its
 * segment (and unlinks the name) while starting, so these are the segments
 * of workers still starting. Unlinked on process exit; after a SIGKILL,
 * the next gateway on the host removes them (sweepOrphanedSegments).
 */
const linkedSegments = new Set<SharedSegment>();
let exitHookInstalled = false;
let swept = false;

/**
 * Creates and maps the segment offered to a new worker: undefined (socket
 * transport) when shared memory is not available, unless "shm" was asked
 * for. Named /operon-<gateway pid>-<instance>-<random>.
 */
export function createSegment(options: SegmentOptions, onLog: (line: string) => void): SharedSegment | undefined {
  const required = options.transport === "shm";
  const byteLength = options.sharedMemoryBytes ?? DEFAULT_WORKER_SHM_BYTES;
  const api = loadSharedMemory();
  if (!api.shared) {
    const reason = sharedMemoryUnavailableReason() ?? "no cross-process shared memory";
    if (required)
      throw new OperonError(
        "UNAVAILABLE",
        `shared-memory transport requested for instance '${options.instanceName}' but unavailable: ${reason}`,
      );
    if (!reportedNoSharedMemory) {
      reportedNoSharedMemory = true;
      onLog(
        JSON.stringify({
          time: new Date().toISOString(),
          level: "info",
          msg: `worker tensors travel over the socket: ${reason}`,
        }),
      );
    }
    return undefined;
  }
  const layout = sharedRegionLayout(byteLength);
  if (!Number.isSafeInteger(byteLength) || layout.toWorker.byteLength < 64) {
    throw new OperonError("INVALID_ARG", `sharedMemoryBytes must be an integer of at least 128, got ${byteLength}`);
  }
  if (!swept) {
    swept = true;
    sweepOrphanedSegments(api);
  }
  const instance = options.instanceName.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 200);
  const name = `/operon-${process.pid}-${instance}-${randomBytes(6).toString("hex")}`;
  let buffer: ArrayBuffer;
  try {
    buffer = api.create(name, byteLength);
  } catch (error) {
    const reason = (error as Error).message;
    if (required)
      throw new OperonError(
        "UNAVAILABLE",
        `cannot create shared memory for instance '${options.instanceName}': ${reason}`,
        { cause: error },
      );
    onLog(
      JSON.stringify({
        time: new Date().toISOString(),
        level: "warn",
        instance: options.instanceName,
        msg: `shared memory not used, tensors travel over the socket: ${reason}`,
      }),
    );
    return undefined;
  }
  const segment = Buffer.from(buffer);
  const toWorker = segment.subarray(layout.toWorker.offset, layout.toWorker.offset + layout.toWorker.byteLength);
  const toGateway = segment.subarray(layout.toGateway.offset, layout.toGateway.offset + layout.toGateway.byteLength);
  const shm: SharedSegment = {
    api,
    name,
    buffer,
    linked: true,
    toWorker,
    inputRing: new ShmRingAllocator(toWorker.length),
    toGateway,
  };
  linkedSegments.add(shm);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const segment of linkedSegments) unlinkSegment(segment);
    });
  }
  return shm;
}

/**
 * Removes /dev/shm/operon-<pid>-* segments whose gateway process is gone
 * (killed while one of its workers was starting, before either side
 * unlinked the name). Best effort, Linux only; run once per gateway process.
 */
function sweepOrphanedSegments(api: SharedMemoryApi): void {
  let entries: string[];
  try {
    entries = readdirSync("/dev/shm");
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = /^operon-(\d+)-/.exec(entry)?.[1];
    if (pid === undefined || Number(pid) === process.pid || processAlive(Number(pid))) continue;
    try {
      api.unlink(`/${entry}`);
    } catch {
      // Gone already, or not ours to remove.
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function unlinkSegment(shm: SharedSegment): void {
  if (!shm.linked) return;
  shm.linked = false;
  linkedSegments.delete(shm);
  try {
    shm.api.unlink(shm.name);
  } catch {
    // ENOENT: the worker unlinked it first, as it does once it has mapped it.
  }
}

/** Unlinks (if still linked) and unmaps now: views over the segment become empty. */
export function dropSegment(shm: SharedSegment | undefined): void {
  if (shm === undefined) return;
  unlinkSegment(shm);
  shm.inputRing.reset();
  shm.api.close(shm.buffer);
}
