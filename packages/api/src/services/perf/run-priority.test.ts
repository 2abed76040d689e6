import { describe, expect, it } from "vitest";
import { lowestPriorityOf } from "./run-priority.js";

describe("lowestPriorityOf", () => {
  it("is the model's lowest priority level (the highest number) where it has levels", () => {
    expect(lowestPriorityOf({ dynamic_batching: { priority_levels: 3, default_priority_level: 2 } })).toBe(3);
    // Triton's JSON config writes 64-bit fields as strings.
    expect(lowestPriorityOf({ dynamic_batching: { priority_levels: "4" } })).toBe(4);
  });
  it("is none for a model without priority levels or without dynamic batching", () => {
    expect(lowestPriorityOf({ dynamic_batching: { priority_levels: 0 } })).toBeUndefined();
    expect(lowestPriorityOf({ dynamic_batching: {} })).toBeUndefined();
    expect(lowestPriorityOf({ max_batch_size: 8 })).toBeUndefined();
  });
});
