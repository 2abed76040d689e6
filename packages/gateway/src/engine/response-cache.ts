import { createHash } from "node:crypto";
import type { Tensor } from "@operon/protocol/tensor";

/**
 * Triton's response cache (`--cache-config local,size=<bytes>`): whole
 * inference responses kept by a hash of everything that decides them, so a
 * repeated request is answered without running the model.
 *
 * - Bounded by bytes, not entries: an entry costs its output bytes plus an
 *   estimate of its bookkeeping (see entryBytes). Inserting evicts least
 *   recently used entries until the new one fits; an entry larger than the
 *   whole budget is not cached at all (and evicts nothing).
 * - Keys are SHA-256 digests (node:crypto). Triton uses a 64-bit hash and
 *   accepts the collision risk; a collision here would silently answer a
 *   request with another request's outputs, so a 256-bit cryptographic hash
 *   (collisions infeasible, even for adversarial inputs) is worth its few µs.
 * - Entries own their bytes: `set` copies every output once into one fresh
 *   allocation, because the buffers a worker hands back may be views over a
 *   reused shared-memory region or a socket frame. `get` hands out new
 *   Tensor objects (own shape arrays) over those stored bytes without
 *   copying; response buffers are read-only by contract (the frontends only
 *   serialize them), so a hit costs no copy.
 *
 * Not thread-safe in any sense that matters for Node: one event loop.
 */
export interface CachedResponse {
  outputs: Tensor[];
}

/** What a cache key is made of. */
export interface ResponseCacheKeyParts {
  model: string;
  version: string;
  /**
   * Anything else that must separate entries, e.g. a load generation so a
   * reloaded model (new files, same version) never sees the old model's
   * responses. Optional; "" when absent.
   */
  scope?: string;
  inputs: ReadonlyArray<Pick<Tensor, "name" | "datatype" | "shape" | "data">>;
  /** Requested output names in request order (the response follows that order); undefined = all outputs. */
  outputs: readonly string[] | undefined;
}

export interface ResponseCacheStats {
  bytes: number;
  entries: number;
  capacityBytes: number;
}

/** Per-entry bookkeeping estimate (Map slot, entry object, key string header), in bytes. */
export const ENTRY_OVERHEAD_BYTES = 128;
/** Per-output bookkeeping estimate on top of its name, datatype and shape. */
export const TENSOR_OVERHEAD_BYTES = 64;

const KEY_DOMAIN = "operon-response-cache-v1";

/**
 * The cache key: hex SHA-256 over an unambiguous (length-prefixed)
 * encoding of the model name, version, scope, every input's name, datatype,
 * shape and bytes (sorted by input name, so input order does not matter),
 * then the requested output names (in request order, or "all").
 * Request parameters are not part of it: workers never see them, so they
 * cannot change the outputs.
 */
export function responseCacheKey(parts: ResponseCacheKeyParts): string {
  const hash = createHash("sha256");
  const header = Buffer.alloc(8);
  const writeCount = (value: number): void => {
    header.writeDoubleLE(value, 0);
    hash.update(header);
  };
  const writeString = (value: string): void => {
    const bytes = Buffer.from(value, "utf8");
    writeCount(bytes.length);
    hash.update(bytes);
  };
  writeString(KEY_DOMAIN);
  writeString(parts.model);
  writeString(parts.version);
  writeString(parts.scope ?? "");
  const inputs = [...parts.inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  writeCount(inputs.length);
  for (const input of inputs) {
    writeString(input.name);
    writeString(input.datatype);
    writeCount(input.shape.length);
    for (const dim of input.shape) writeCount(dim);
    writeCount(input.data.length);
    hash.update(input.data);
  }
  if (parts.outputs === undefined) {
    writeCount(-1);
  } else {
    writeCount(parts.outputs.length);
    for (const name of parts.outputs) writeString(name);
  }
  return hash.digest("hex");
}

interface Entry {
  outputs: Tensor[];
  bytes: number;
}

export class ResponseCache {
  /** Map iteration order is insertion order: first = least recently used. */
  private readonly entries = new Map<string, Entry>();
  private usedBytes = 0;

  constructor(readonly capacityBytes: number) {
    if (!Number.isSafeInteger(capacityBytes) || capacityBytes <= 0) {
      throw new RangeError(`response cache size must be a positive integer number of bytes, got ${capacityBytes}`);
    }
  }

  get bytes(): number {
    return this.usedBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  stats(): ResponseCacheStats {
    return { bytes: this.usedBytes, entries: this.entries.size, capacityBytes: this.capacityBytes };
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The cached response, which becomes the most recently used entry; undefined on a miss. */
  get(key: string): CachedResponse | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return { outputs: entry.outputs.map((tensor) => ({ ...tensor, shape: [...tensor.shape] })) };
  }

  /**
   * Caches a response under key (replacing any entry there), evicting least
   * recently used entries until it fits. Returns false, caching nothing,
   * when the entry alone is larger than the whole cache.
   */
  set(key: string, response: CachedResponse): boolean {
    this.delete(key);
    const bytes = entryBytes(key, response.outputs);
    if (bytes > this.capacityBytes) return false;
    while (this.usedBytes + bytes > this.capacityBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.delete(oldest.value);
    }
    this.entries.set(key, { outputs: copyOutputs(response.outputs), bytes });
    this.usedBytes += bytes;
    return true;
  }

  delete(key: string): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.entries.delete(key);
    this.usedBytes -= entry.bytes;
    return true;
  }

  clear(): void {
    this.entries.clear();
    this.usedBytes = 0;
  }

  /** Keys from least to most recently used (for tests and debugging). */
  keys(): string[] {
    return [...this.entries.keys()];
  }
}

/** What one entry counts against the budget: output bytes, their metadata, the key and fixed overhead. */
export function entryBytes(key: string, outputs: readonly Tensor[]): number {
  let bytes = ENTRY_OVERHEAD_BYTES + key.length;
  for (const tensor of outputs) {
    bytes +=
      tensor.data.length +
      TENSOR_OVERHEAD_BYTES +
      tensor.name.length +
      tensor.datatype.length +
      8 * tensor.shape.length;
  }
  return bytes;
}

/** One allocation for all outputs (not Buffer's shared pool, which would pin unrelated memory), each output a view into it. */
function copyOutputs(outputs: readonly Tensor[]): Tensor[] {
  const total = outputs.reduce((sum, tensor) => sum + tensor.data.length, 0);
  const storage = Buffer.allocUnsafeSlow(total);
  let offset = 0;
  return outputs.map((tensor) => {
    tensor.data.copy(storage, offset);
    const data = storage.subarray(offset, offset + tensor.data.length);
    offset += tensor.data.length;
    return { name: tensor.name, datatype: tensor.datatype, shape: [...tensor.shape], data };
  });
}
