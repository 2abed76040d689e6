/**
 * Allocates byte ranges of one shared-memory half (see worker-wire's
 * shared-memory layout) as a ring: allocations advance through the region
 * and wrap to its start; a released range becomes reusable once every range
 * allocated before it has been released too. Releases may come in any
 * order; the transport's mostly-FIFO lifetimes (requests answered in order)
 * are the case it is fast for. Every offset is a multiple of `align` (64:
 * a cache line, and natural alignment for every tensor element type).
 *
 * Offsets are relative to the region's start; the allocator never touches
 * the memory itself. Pure bookkeeping, O(1) amortized per call.
 */
export const SHM_ALIGN = 64;

interface Block {
  size: number;
  released: boolean;
}

export class ShmRingAllocator {
  /** Usable bytes: the region's length rounded down to the alignment. */
  readonly capacity: number;
  readonly align: number;
  /** Live blocks by offset, in allocation order (Map keeps insertion order); the first is the ring's tail. */
  private readonly blocks = new Map<number, Block>();
  /** Where the next allocation starts, unless it has to wrap. */
  private head = 0;
  private reserved = 0;

  constructor(byteLength: number, align: number = SHM_ALIGN) {
    if (!Number.isSafeInteger(align) || align < 1 || (align & (align - 1)) !== 0)
      throw new RangeError(`align must be a power of two, got ${align}`);
    if (!Number.isSafeInteger(byteLength) || byteLength < 0)
      throw new RangeError(`byteLength must be a non-negative integer, got ${byteLength}`);
    this.align = align;
    this.capacity = byteLength - (byteLength % align);
  }

  /** Ranges allocated and not yet reusable (released ones waiting for older ones included). */
  get liveCount(): number {
    return this.blocks.size;
  }

  /** Bytes held by those ranges (each rounded up to the alignment). */
  get bytesInUse(): number {
    return this.reserved;
  }

  /** Returns the offset of byteLength free bytes, or undefined when no contiguous room is free now. */
  allocate(byteLength: number): number | undefined {
    if (!Number.isSafeInteger(byteLength) || byteLength < 1)
      throw new RangeError(`allocation size must be a positive integer, got ${byteLength}`);
    const size = byteLength + ((this.align - (byteLength % this.align)) % this.align);
    if (size > this.capacity) return undefined;
    let offset: number | undefined;
    const tail = this.tail();
    if (tail === undefined) {
      offset = 0;
    } else if (this.head > tail) {
      // In use: [tail, head). Free: [head, capacity) then, wrapping, [0, tail).
      if (this.head + size <= this.capacity) offset = this.head;
      else if (size <= tail) offset = 0;
    } else if (this.head + size <= tail) {
      // Wrapped: in use [tail, capacity) and [0, head); free [head, tail).
      offset = this.head;
    }
    if (offset === undefined) return undefined;
    this.blocks.set(offset, { size, released: false });
    this.head = offset + size;
    this.reserved += size;
    return offset;
  }

  /** Gives a range back. Throws RangeError for an offset that is not allocated (or released twice). */
  release(offset: number): void {
    const block = this.blocks.get(offset);
    if (block === undefined || block.released) throw new RangeError(`shared-memory offset ${offset} is not allocated`);
    block.released = true;
    // Reclaim from the tail while the oldest ranges are released.
    for (const [first, oldest] of this.blocks) {
      if (!oldest.released) break;
      this.blocks.delete(first);
      this.reserved -= oldest.size;
    }
    if (this.blocks.size === 0) this.head = 0;
  }

  /** Forgets every allocation (the peer is gone). */
  reset(): void {
    this.blocks.clear();
    this.head = 0;
    this.reserved = 0;
  }

  private tail(): number | undefined {
    for (const offset of this.blocks.keys()) return offset;
    return undefined;
  }
}
