import { constants, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { elementByteSize, elementCount } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { InferInput, InferRequest, InferResponse } from "@operon/protocol/inference";
import type { Parameters, ParameterValue, Tensor } from "@operon/protocol/tensor";

/**
 * Triton's system shared-memory extension (extension_shared_memory.md): a
 * client creates a POSIX shared-memory object (shm_open), registers a
 * window of it by name, and then names that region in a tensor's
 * parameters instead of sending the bytes.
 *
 * The region is not mapped into the gateway. Each tensor is copied with
 * pread/pwrite on a file descriptor of the object held since registration:
 * a mapping would turn a client that truncates its object into a SIGBUS
 * that kills the gateway, while a short read is just an error for that
 * request. Before every use the descriptor is checked (fstat): an object its
 * owner unlinked (st_nlink 0) or shrank below the region fails the request
 * UNAVAILABLE, naming the region. Every window is checked against the
 * region in exact integers first: no bytes outside [offset, offset +
 * byte_size) are ever read or written, whatever the request's numbers.
 *
 * Regions belong to whoever registered them: with API keys on, a key sees,
 * uses and unregisters only its own (Triton has one global namespace;
 * scoping by key keeps one tenant from reading another's tensors).
 */

/** Where Linux exposes shm_open objects: `shm_open("/x")` is the file /dev/shm/x. */
export const DEFAULT_SHM_DIR = "/dev/shm";
/** Regions held at once (each holds a file descriptor). */
export const DEFAULT_MAX_REGIONS = 1024;
/** Bytes of shared-memory tensors one request may read or write (each is copied through a buffer of its size). */
export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024 * 1024;

/** The tensor parameters that name a region. */
export const REGION_PARAMETER = "shared_memory_region";
const BYTE_SIZE_PARAMETER = "shared_memory_byte_size";
const OFFSET_PARAMETER = "shared_memory_offset";

/** Segments Operon creates for its own worker processes (instances/shm-segment.ts): never registrable. */
const OWN_SEGMENT_PREFIX = "operon-";

export interface SystemSharedMemoryOptions {
  shmDir?: string;
  maxRegions?: number;
  maxRequestBytes?: number;
}

/** One entry of the status answer, as Triton spells it. */
export interface RegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

/** Who asks: the API key id, or null when anonymous (no access policy, or a route without a key). */
export type RegionOwner = string | null;

interface Region {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
  owner: RegionOwner;
  handle: FileHandle;
  /** Requests reading or writing it now; the descriptor is closed when the last one ends after an unregister. */
  users: number;
  removed: boolean;
}

/** Where one requested output goes. */
interface OutputTarget {
  region: Region;
  offset: number;
  byteSize: number;
}

/**
 * What resolve() holds for a request until release(): the regions it uses
 * (pinned against a concurrent unregister) and its shared-memory outputs.
 */
export interface SharedMemoryUse {
  readonly outputs: ReadonlyMap<string, OutputTarget>;
  readonly regions: readonly Region[];
}

export class SystemSharedMemory {
  private readonly regions = new Map<string, Region>();
  private readonly shmDir: string;
  private readonly maxRegions: number;
  private readonly maxRequestBytes: number;
  /** Names being registered now: two concurrent registrations of one name cannot both win. */
  private readonly registering = new Set<string>();

  constructor(options: SystemSharedMemoryOptions = {}) {
    this.shmDir = options.shmDir ?? DEFAULT_SHM_DIR;
    this.maxRegions = options.maxRegions ?? DEFAULT_MAX_REGIONS;
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  }

  /** POST v2/systemsharedmemory/region/<name>/register {key, offset, byte_size}. */
  async register(name: string, key: unknown, offset: unknown, byteSize: unknown, owner: RegionOwner): Promise<void> {
    checkRegionName(name);
    const file = objectFileName(key);
    const start = nonNegativeInteger(offset, `region '${name}': offset`);
    const size = nonNegativeInteger(byteSize, `region '${name}': byte_size`);
    if (size === 0) throw new OperonError("INVALID_ARG", `region '${name}': byte_size must be greater than 0`);
    if (this.regions.has(name) || this.registering.has(name)) {
      throw new OperonError(
        "ALREADY_EXISTS",
        `shared memory region '${name}' is already registered; unregister it first`,
      );
    }
    if (this.regions.size + this.registering.size >= this.maxRegions) {
      throw new OperonError(
        "UNAVAILABLE",
        `${this.maxRegions} shared memory regions are registered already (the limit); unregister some first`,
      );
    }
    const keyText = key as string;
    this.registering.add(name);
    try {
      let handle: FileHandle;
      try {
        // O_NOFOLLOW: a symlink planted in /dev/shm cannot point the region at another file.
        handle = await open(join(this.shmDir, file), constants.O_RDWR | constants.O_NOFOLLOW);
      } catch (error) {
        throw new OperonError(
          "INVALID_ARG",
          `unable to open shared memory region '${name}': key '${keyText}' ${openFailure(error)}`,
          { cause: error },
        );
      }
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) throw new OperonError("INVALID_ARG", `key '${keyText}' is not a shared memory object`);
        if (start + size > stats.size) {
          throw new OperonError(
            "INVALID_ARG",
            `region '${name}': offset ${start} + byte_size ${size} exceeds the ${stats.size} bytes of shared memory object '${keyText}'`,
          );
        }
      } catch (error) {
        await handle.close();
        throw error;
      }
      this.regions.set(name, {
        name,
        key: keyText,
        offset: start,
        byteSize: size,
        owner,
        handle,
        users: 0,
        removed: false,
      });
    } finally {
      this.registering.delete(name);
    }
  }

  /** GET v2/systemsharedmemory[/region/<name>]/status: NOT_FOUND for a name this caller has not registered. */
  status(name: string | undefined, owner: RegionOwner): RegionStatus[] {
    const regions = name === undefined ? [...this.regions.values()].filter(ownedBy(owner)) : [this.lookup(name, owner)];
    return regions.map((region) => ({
      name: region.name,
      key: region.key,
      offset: region.offset,
      byte_size: region.byteSize,
    }));
  }

  /**
   * POST v2/systemsharedmemory[/region/<name>]/unregister: one region, or
   * every region of this caller. Requests using a region finish first; new
   * ones fail NOT_FOUND at once.
   */
  async unregister(name: string | undefined, owner: RegionOwner): Promise<void> {
    // Triton answers success for a name that is not registered; so does this.
    const regions =
      name === undefined
        ? [...this.regions.values()].filter(ownedBy(owner))
        : [this.regions.get(name)].filter((r): r is Region => r !== undefined && ownedBy(owner)(r));
    await Promise.all(regions.map((region) => this.remove(region)));
  }

  /** Closes every region (server stop). */
  async close(): Promise<void> {
    await Promise.all([...this.regions.values()].map((region) => this.remove(region)));
  }

  get size(): number {
    return this.regions.size;
  }

  /**
   * Reads the request's shared-memory inputs into their `data` (the
   * parameters naming the region are removed, so the engine sees a plain
   * tensor) and checks its shared-memory outputs. Call release(use) when
   * the response is written (or the request failed).
   */
  async resolve(request: InferRequest, owner: RegionOwner): Promise<SharedMemoryUse> {
    const pinned: Region[] = [];
    const pin = (region: Region): Region => {
      if (!pinned.includes(region)) {
        region.users += 1;
        pinned.push(region);
      }
      return region;
    };
    const use: SharedMemoryUse = { outputs: new Map(), regions: pinned };
    try {
      let total = 0;
      const reads: Array<{ input: InferInput; region: Region; offset: number; byteSize: number }> = [];
      for (const input of request.inputs) {
        const window = this.windowOf(input.parameters, `input '${input.name}'`, owner);
        if (window === undefined) continue;
        const expected = fixedByteSize(input);
        if (expected !== undefined && expected !== window.byteSize) {
          throw new OperonError(
            "INVALID_ARG",
            `input '${input.name}': shared_memory_byte_size is ${window.byteSize} but shape [${input.shape.join(",")}] of ${input.datatype} needs ${expected} bytes`,
          );
        }
        total += window.byteSize;
        reads.push({ input, ...window, region: pin(window.region) });
      }
      const outputs = use.outputs as Map<string, OutputTarget>;
      for (const output of request.outputs ?? []) {
        const window = this.windowOf(output.parameters, `output '${output.name}'`, owner);
        if (window === undefined) continue;
        total += window.byteSize;
        outputs.set(output.name, { ...window, region: pin(window.region) });
      }
      if (total > this.maxRequestBytes) {
        throw new OperonError(
          "INVALID_ARG",
          `the request's shared memory tensors span ${total} bytes; at most ${this.maxRequestBytes} are served per request`,
        );
      }
      await Promise.all(
        reads.map(async ({ input, region, offset, byteSize }) => {
          input.data = await readWindow(region, offset, byteSize, input.name);
          stripRegionParameters(input);
        }),
      );
      return use;
    } catch (error) {
      this.release(use);
      throw error;
    }
  }

  /**
   * Writes the response's shared-memory outputs into their regions and
   * returns the response the frontends encode: those outputs keep name,
   * datatype and shape with empty data (as Triton sends them: no bytes).
   */
  async writeOutputs(use: SharedMemoryUse, response: InferResponse): Promise<InferResponse> {
    if (use.outputs.size === 0) return response;
    const outputs = await Promise.all(
      response.outputs.map(async (output): Promise<Tensor> => {
        const target = use.outputs.get(output.name);
        if (target === undefined) return output;
        if (output.data.length > target.byteSize) {
          throw new OperonError(
            "INVALID_ARG",
            `output '${output.name}' is ${output.data.length} bytes but its shared_memory_byte_size is ${target.byteSize}`,
          );
        }
        await writeWindow(target.region, target.offset, output.data, output.name);
        return { ...output, data: EMPTY };
      }),
    );
    return { ...response, outputs };
  }

  /** Ends a request's use of its regions: an unregistered one is closed when its last user is done. */
  release(use: SharedMemoryUse): void {
    for (const region of use.regions) {
      region.users -= 1;
      if (region.removed && region.users === 0) void region.handle.close().catch(() => {});
    }
    (use.regions as Region[]).length = 0;
  }

  private lookup(name: string, owner: RegionOwner): Region {
    const region = this.regions.get(name);
    // Another key's region answers as absent: its name is not this caller's business.
    if (region === undefined || !ownedBy(owner)(region)) {
      throw new OperonError("NOT_FOUND", `unable to find system shared memory region: '${name}'`);
    }
    return region;
  }

  private windowOf(
    parameters: Parameters | undefined,
    what: string,
    owner: RegionOwner,
  ): { region: Region; offset: number; byteSize: number } | undefined {
    const named = parameters?.[REGION_PARAMETER];
    if (named === undefined) return undefined;
    if (typeof named !== "string" || named === "") {
      throw new OperonError("INVALID_ARG", `${what}: ${REGION_PARAMETER} must be a region name (a string)`);
    }
    const region = this.lookup(named, owner);
    const rawSize = parameters?.[BYTE_SIZE_PARAMETER];
    if (rawSize === undefined) {
      throw new OperonError("INVALID_ARG", `${what}: ${BYTE_SIZE_PARAMETER} must be given with ${REGION_PARAMETER}`);
    }
    const byteSize = nonNegativeInteger(rawSize, `${what}: ${BYTE_SIZE_PARAMETER}`);
    const rawOffset = parameters?.[OFFSET_PARAMETER];
    const offset = rawOffset === undefined ? 0 : nonNegativeInteger(rawOffset, `${what}: ${OFFSET_PARAMETER}`);
    // Both are safe integers, so the sum is exact: no wrap-around can bring a window back inside.
    if (offset + byteSize > region.byteSize) {
      throw new OperonError(
        "INVALID_ARG",
        `${what}: ${OFFSET_PARAMETER} ${offset} + ${BYTE_SIZE_PARAMETER} ${byteSize} exceeds the ${region.byteSize} bytes of shared memory region '${region.name}'`,
      );
    }
    return { region, offset, byteSize };
  }

  private async remove(region: Region): Promise<void> {
    if (region.removed) return;
    region.removed = true;
    this.regions.delete(region.name);
    if (region.users === 0) await region.handle.close().catch(() => {});
  }
}

const EMPTY = Buffer.alloc(0);

/** True when the request names a shared-memory region in any input or requested output. */
export function usesSharedMemory(request: InferRequest): boolean {
  return (
    request.inputs.some((input) => input.parameters?.[REGION_PARAMETER] !== undefined) ||
    (request.outputs ?? []).some((output) => output.parameters?.[REGION_PARAMETER] !== undefined)
  );
}

function ownedBy(owner: RegionOwner): (region: Region) => boolean {
  return (region) => region.owner === owner;
}

function checkRegionName(name: string): void {
  if (name === "" || name.length > 256) {
    throw new OperonError("INVALID_ARG", "a shared memory region name must be 1 to 256 characters");
  }
}

/**
 * The file under /dev/shm that shm_open(key) names. Keys are "/name" (the
 * leading slash is optional here); anything else that could leave the
 * directory, and Operon's own worker segments, is refused.
 */
function objectFileName(key: unknown): string {
  if (typeof key !== "string") throw new OperonError("INVALID_ARG", "'key' must be a string such as '/my_region'");
  const file = key.startsWith("/") ? key.slice(1) : key;
  if (file === "" || file === "." || file === ".." || file.length > 255 || /[/\0]/.test(file)) {
    throw new OperonError(
      "INVALID_ARG",
      `key '${key}' is not a shared memory object name: expected '/name' with no other '/' (at most 255 characters)`,
    );
  }
  if (file.startsWith(OWN_SEGMENT_PREFIX)) {
    throw new OperonError("INVALID_ARG", `key '${key}' names one of Operon's own segments; it cannot be registered`);
  }
  return file;
}

function nonNegativeInteger(value: ParameterValue | unknown, what: string): number {
  if (typeof value === "bigint") {
    if (value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  } else if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
    return value;
  }
  throw new OperonError(
    "INVALID_ARG",
    `${what} must be a non-negative integer of at most ${Number.MAX_SAFE_INTEGER}, got ${String(value)}`,
  );
}

function fixedByteSize(input: InferInput): number | undefined {
  const size = elementByteSize(input.datatype);
  return size === undefined ? undefined : elementCount(input.shape) * size;
}

function openFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "does not exist (create it with shm_open first)";
  if (code === "ELOOP") return "is a symbolic link";
  if (code === "EACCES" || code === "EPERM") return "cannot be opened for reading and writing by the server";
  return `cannot be opened (${code ?? String(error)})`;
}

/** The object is still the client's: linked, and as large as the region says. */
async function checkAlive(region: Region): Promise<void> {
  let stats: Stats;
  try {
    stats = await region.handle.stat();
  } catch (error) {
    throw new OperonError("UNAVAILABLE", `shared memory region '${region.name}' cannot be read`, { cause: error });
  }
  if (stats.nlink === 0) {
    throw new OperonError(
      "UNAVAILABLE",
      `shared memory region '${region.name}': its object '${region.key}' was unlinked by its owner; register it again`,
    );
  }
  if (stats.size < region.offset + region.byteSize) {
    throw new OperonError(
      "UNAVAILABLE",
      `shared memory region '${region.name}': its object '${region.key}' shrank to ${stats.size} bytes, below the registered region`,
    );
  }
}

async function readWindow(region: Region, offset: number, byteSize: number, tensor: string): Promise<Buffer> {
  await checkAlive(region);
  const data = Buffer.allocUnsafe(byteSize);
  let done = 0;
  while (done < byteSize) {
    const { bytesRead } = await region.handle.read(data, done, byteSize - done, region.offset + offset + done);
    // A short read: the owner truncated the object meanwhile. The buffer's rest is never sent anywhere.
    if (bytesRead === 0) {
      throw new OperonError(
        "UNAVAILABLE",
        `input '${tensor}': shared memory region '${region.name}' shrank while it was read`,
      );
    }
    done += bytesRead;
  }
  return data;
}

async function writeWindow(region: Region, offset: number, data: Buffer, tensor: string): Promise<void> {
  await checkAlive(region);
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await region.handle.write(data, done, data.length - done, region.offset + offset + done);
    if (bytesWritten === 0) {
      throw new OperonError("UNAVAILABLE", `output '${tensor}': shared memory region '${region.name}' took no bytes`);
    }
    done += bytesWritten;
  }
}

/** Removes the region parameters from a tensor resolved from shared memory. */
function stripRegionParameters(input: InferInput): void {
  const parameters = input.parameters;
  if (parameters === undefined) return;
  delete parameters[REGION_PARAMETER];
  delete parameters[BYTE_SIZE_PARAMETER];
  delete parameters[OFFSET_PARAMETER];
  if (Object.keys(parameters).length === 0) delete input.parameters;
}
