import { describe, expect, it } from "vitest";
import { sharedRegionLayout } from "./worker-wire.js";

describe("worker wire shared memory", () => {
  it("splits a segment into two 64-byte aligned halves", () => {
    expect(sharedRegionLayout(64 * 1024 * 1024)).toEqual({
      toWorker: { offset: 0, byteLength: 32 * 1024 * 1024 },
      toGateway: { offset: 32 * 1024 * 1024, byteLength: 32 * 1024 * 1024 },
    });
    expect(sharedRegionLayout(1000)).toEqual({
      toWorker: { offset: 0, byteLength: 448 },
      toGateway: { offset: 448, byteLength: 448 },
    });
  });
});
