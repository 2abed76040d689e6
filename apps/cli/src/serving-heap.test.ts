import { describe, expect, it } from "vitest";
import { SERVING_HEAP_GROWING_PERCENT, tuneServingHeap } from "./serving-heap.js";

describe("tuneServingHeap", () => {
  it("sets V8's heap growing factor for the serving process", () => {
    const set: string[] = [];
    expect(tuneServingHeap([], undefined, (flags) => set.push(flags))).toBe(SERVING_HEAP_GROWING_PERCENT);
    expect(set).toEqual([`--heap-growing-percent=${SERVING_HEAP_GROWING_PERCENT}`]);
  });

  it("leaves a factor the operator chose on node's command line or in NODE_OPTIONS", () => {
    const set: string[] = [];
    const record = (flags: string) => set.push(flags);
    expect(tuneServingHeap(["--heap-growing-percent=50"], undefined, record)).toBeUndefined();
    expect(tuneServingHeap(["--heap_growing_percent", "50"], undefined, record)).toBeUndefined();
    expect(tuneServingHeap([], "--max-old-space-size=4096 --heap-growing-percent=20", record)).toBeUndefined();
    expect(set).toEqual([]);
    // A different flag that merely starts the same way is not the operator's choice.
    expect(tuneServingHeap(["--heap-growing-percentage-x"], "", record)).toBe(SERVING_HEAP_GROWING_PERCENT);
  });
});
