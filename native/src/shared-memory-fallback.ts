import type { SharedMemoryApi, SharedMemoryError } from "./shared-memory-api.js";

/**
 * The pure-TS SharedMemoryApi: JavaScript cannot map memory, so a
 * "segment" is an ArrayBuffer in a registry of this process. Every mapping
 * of a segment is the same ArrayBuffer (so in-process semantics match the
 * addon's: what one writes, another reads), and `shared` is false: another
 * process sees nothing, and the transport sends tensor bytes inline instead.
 *
 * One difference from the addon: open() returns the whole segment's buffer
 * even when asked for fewer bytes.
 */

const ERRNO: Readonly<Record<string, [number, string]>> = {
  EEXIST: [17, "File exists"],
  ENOENT: [2, "No such file or directory"],
  EINVAL: [22, "Invalid argument"],
};

function fail(syscall: string, name: string, code: keyof typeof ERRNO, detail?: string): never {
  const [errno, text] = ERRNO[code]!;
  const error = new Error(`${syscall}('${name}') failed: ${detail ?? text} (${code})`) as SharedMemoryError;
  error.code = code;
  error.errno = -errno;
  error.syscall = syscall;
  error.path = name;
  throw error;
}

function checkName(fn: string, name: unknown): string {
  if (typeof name !== "string") throw new TypeError(`${fn}: name must be a string`);
  if (
    name.length < 2 ||
    name[0] !== "/" ||
    name.includes("/", 1) ||
    Buffer.byteLength(name) > 255 ||
    name.includes("\0")
  ) {
    fail(fn, name, "EINVAL", "a segment name is '/' followed by 1 to 254 characters other than '/'");
  }
  return name;
}

function checkLength(fn: string, name: string, byteLength: unknown): number {
  if (typeof byteLength !== "number") throw new TypeError(`${fn}('${name}'): byteLength must be a number`);
  if (!Number.isSafeInteger(byteLength) || byteLength < 1) {
    throw new RangeError(`${fn}('${name}'): byteLength must be a positive integer, got ${String(byteLength)}`);
  }
  return byteLength;
}

export function createFallbackSharedMemory(): SharedMemoryApi {
  const segments = new Map<string, ArrayBuffer>();
  /** Buffers create/open handed out: close() leaves any other ArrayBuffer alone, as the addon does. */
  const mappings = new WeakSet<ArrayBuffer>();
  return {
    kind: "fallback",
    shared: false,
    create(name, byteLength) {
      checkName("create", name);
      const length = checkLength("create", name, byteLength);
      if (segments.has(name)) fail("shm_open", name, "EEXIST");
      const buffer = new ArrayBuffer(length);
      segments.set(name, buffer);
      mappings.add(buffer);
      return buffer;
    },
    open(name, byteLength) {
      checkName("open", name);
      const length = checkLength("open", name, byteLength);
      const buffer = segments.get(name);
      if (buffer === undefined) return fail("shm_open", name, "ENOENT");
      if (buffer.byteLength < length)
        fail("open", name, "EINVAL", `segment is ${buffer.byteLength} bytes, cannot map ${length}`);
      return buffer;
    },
    unlink(name) {
      checkName("unlink", name);
      if (!segments.delete(name)) fail("shm_unlink", name, "ENOENT");
    },
    close(buffer) {
      if (!(buffer instanceof ArrayBuffer))
        throw new TypeError("close: expected an ArrayBuffer from create() or open()");
      if (!mappings.has(buffer) || buffer.byteLength === 0) return;
      mappings.delete(buffer);
      // The segment outlives its mappings, as a shm file does: keep a copy of
      // its bytes for later open() calls before detaching this buffer.
      for (const [name, mapped] of segments) {
        if (mapped !== buffer) continue;
        const copy = buffer.slice(0);
        segments.set(name, copy);
        mappings.add(copy);
      }
      structuredClone(buffer, { transfer: [buffer] });
    },
    allocate(byteLength) {
      if (typeof byteLength !== "number") throw new TypeError("allocate: byteLength must be a number");
      if (!Number.isSafeInteger(byteLength) || byteLength < 1)
        throw new RangeError(`allocate: byteLength must be a positive integer, got ${String(byteLength)}`);
      // A Buffer this large never comes from Node's shared pool: the ArrayBuffer is exactly its own.
      return Buffer.allocUnsafeSlow(byteLength).buffer as ArrayBuffer;
    },
  };
}

/** The process-wide fallback instance the loader hands out. */
export const fallbackSharedMemory: SharedMemoryApi = createFallbackSharedMemory();
