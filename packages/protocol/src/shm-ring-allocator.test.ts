import { describe, expect, it } from "vitest";
import { SHM_ALIGN, ShmRingAllocator } from "./shm-ring-allocator.js";

describe("ShmRingAllocator", () => {
  it("hands out 64-byte aligned offsets in order and rounds sizes up", () => {
    const ring = new ShmRingAllocator(1000);
    expect(ring.capacity).toBe(960);
    expect(ring.allocate(1)).toBe(0);
    expect(ring.allocate(64)).toBe(64);
    expect(ring.allocate(65)).toBe(128);
    expect(ring.allocate(100)).toBe(256);
    expect(ring.liveCount).toBe(4);
    expect(ring.bytesInUse).toBe(64 + 64 + 128 + 128);
    for (const offset of [0, 64, 128, 256]) expect(offset % SHM_ALIGN).toBe(0);
  });

  it("returns undefined when full or too large, and room again after release", () => {
    const ring = new ShmRingAllocator(256);
    expect(ring.allocate(257)).toBeUndefined();
    expect(ring.allocate(256)).toBe(0);
    expect(ring.allocate(1)).toBeUndefined();
    ring.release(0);
    expect(ring.liveCount).toBe(0);
    expect(ring.allocate(129)).toBe(0); // rounds up to 192
    expect(ring.allocate(65)).toBeUndefined(); // rounds up to 128; 64 are left
    expect(ring.allocate(64)).toBe(192);
  });

  it("rejects sizes that are not positive integers and bad releases", () => {
    const ring = new ShmRingAllocator(1024);
    expect(() => ring.allocate(0)).toThrow(RangeError);
    expect(() => ring.allocate(1.5)).toThrow(RangeError);
    expect(() => ring.release(0)).toThrow("shared-memory offset 0 is not allocated");
    const a = ring.allocate(10)!;
    const b = ring.allocate(10)!;
    ring.release(b); // out of order: b waits for a
    expect(() => ring.release(b)).toThrow(RangeError);
    ring.release(a);
    expect(ring.liveCount).toBe(0);
    expect(() => ring.release(a)).toThrow(RangeError);
  });

  it("reuses space only once everything older is released (any release order)", () => {
    const ring = new ShmRingAllocator(4 * 64);
    const [a, b, c, d] = [ring.allocate(64)!, ring.allocate(64)!, ring.allocate(64)!, ring.allocate(64)!];
    expect([a, b, c, d]).toEqual([0, 64, 128, 192]);
    ring.release(c);
    ring.release(b);
    expect(ring.allocate(1)).toBeUndefined(); // a still holds the tail
    ring.release(a);
    expect(ring.liveCount).toBe(1); // a, b, c reclaimed; d live
    expect(ring.allocate(3 * 64)).toBe(0); // wraps to the start
    expect(ring.allocate(1)).toBeUndefined();
    ring.release(d);
    ring.release(0);
    expect(ring.liveCount).toBe(0);
    expect(ring.bytesInUse).toBe(0);
  });

  it("wraps around, skipping a tail gap too small for the request", () => {
    const ring = new ShmRingAllocator(10 * 64);
    const first = ring.allocate(4 * 64)!;
    const second = ring.allocate(4 * 64)!; // [256, 512): 128 bytes left at the end
    ring.release(first);
    expect(ring.allocate(3 * 64)).toBe(0); // does not fit in [512, 640): goes to [0, 192)
    expect(ring.allocate(64)).toBe(192); // wrapped: free is [192, 256)
    expect(ring.allocate(64)).toBeUndefined();
    ring.release(second);
    // Now in use: [0, 256). Free: [256, 640).
    expect(ring.allocate(6 * 64)).toBe(256);
  });

  it("never hands out overlapping ranges (random workload against a byte map)", () => {
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const capacity = 64 * 1024;
    const ring = new ShmRingAllocator(capacity);
    const owner = new Int32Array(capacity).fill(-1);
    const live = new Map<number, number>(); // offset -> byteLength
    let allocated = 0;
    let refused = 0;
    for (let step = 0; step < 20_000; step += 1) {
      if (live.size > 0 && random() < 0.45) {
        // Release a random live range (any order), mostly the oldest.
        const offsets = [...live.keys()];
        const offset = random() < 0.7 ? offsets[0]! : offsets[Math.floor(random() * offsets.length)]!;
        const length = live.get(offset)!;
        owner.fill(-1, offset, offset + length);
        live.delete(offset);
        ring.release(offset);
      } else {
        const length = 1 + Math.floor(random() * (random() < 0.1 ? capacity / 2 : 4096));
        const offset = ring.allocate(length);
        if (offset === undefined) {
          refused += 1;
          continue;
        }
        allocated += 1;
        expect(offset % 64).toBe(0);
        expect(offset + length).toBeLessThanOrEqual(capacity);
        for (let i = offset; i < offset + length; i += 1) {
          if (owner[i] !== -1)
            throw new Error(`step ${step}: [${offset}, ${offset + length}) overlaps a live range at ${i}`);
        }
        owner.fill(step, offset, offset + length);
        live.set(offset, length);
      }
    }
    expect(allocated).toBeGreaterThan(5000);
    expect(refused).toBeGreaterThan(0);
    for (const offset of live.keys()) ring.release(offset);
    expect(ring.liveCount).toBe(0);
    expect(ring.allocate(capacity)).toBe(0);
  });

  it("reset forgets every allocation", () => {
    const ring = new ShmRingAllocator(128);
    ring.allocate(100);
    ring.reset();
    expect(ring.allocate(128)).toBe(0);
  });
});
