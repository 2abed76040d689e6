/**
 * Named shared memory segments (POSIX shm_open + mmap), as the worker
 * transport needs them. Two implementations share this contract: the N-API
 * addon (`kind: "native"`, memory shared across processes) and a pure-TS
 * fallback (`kind: "fallback"`, memory shared only inside this process).
 *
 * Names follow POSIX: "/" then 1 to 254 characters other than "/". Errors
 * are Errors whose message names the call and the segment
 * (`shm_open('/operon-1') failed: File exists (EEXIST)`) and which carry
 * Node-style `code`, `errno`, `syscall` and `path`; a bad argument type is a
 * TypeError, a bad byteLength a RangeError.
 */
export interface SharedMemoryApi {
  readonly kind: "native" | "fallback";
  /**
   * True when another process that opens the segment sees the same bytes.
   * When false, a transport must send the bytes themselves instead.
   */
  readonly shared: boolean;
  /** Creates a segment of byteLength zero bytes and maps it; EEXIST when the name is taken. */
  create(name: string, byteLength: number): ArrayBuffer;
  /** Maps the first byteLength bytes of an existing segment; ENOENT when absent, EINVAL when smaller. */
  open(name: string, byteLength: number): ArrayBuffer;
  /** Removes the name; existing mappings stay valid until closed or collected. ENOENT when absent. */
  unlink(name: string): void;
  /**
   * Unmaps now rather than when the ArrayBuffer is garbage-collected. The
   * buffer is detached first, so every view over it reads as empty instead
   * of touching unmapped memory. A buffer not from create/open, or already
   * closed, is left alone.
   */
  close(buffer: ArrayBuffer): void;
  /**
   * Plain process memory (not shared, not zeroed) that the caller owns like
   * any ArrayBuffer: for copying tensors out of a segment. The addon
   * recycles the memory of collected buffers, still mapped, so the copy
   * does not page-fault its way through fresh pages; the fallback is
   * Buffer.allocUnsafeSlow.
   */
  allocate(byteLength: number): ArrayBuffer;
}

/** The error shape both implementations throw for a failed call. */
export interface SharedMemoryError extends Error {
  code: string;
  errno: number;
  syscall: string;
  path: string;
}
