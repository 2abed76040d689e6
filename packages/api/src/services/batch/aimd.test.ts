import { describe, expect, it } from "vitest";
import { AimdLimiter } from "./aimd.js";

describe("AIMD concurrency of a batch job", () => {
  it("adds one request in flight per window within the budget, halves over it, stays within min and max", () => {
    const limiter = new AimdLimiter({ budgetMs: 10, initial: 2, max: 5, windowRequests: 4 });
    const window = (latencyMs: number) => {
      for (let i = 0; i < Math.max(4, limiter.limit); i += 1) limiter.record(latencyMs);
    };
    window(5);
    expect(limiter.limit).toBe(3);
    window(5);
    window(5);
    window(5);
    expect(limiter.limit).toBe(5);
    window(50);
    expect(limiter.limit).toBe(2);
    window(50);
    window(50);
    expect(limiter.limit).toBe(1);
  });

  it("backs off when the gateway refuses a request as overloaded, however fast the others were", () => {
    const limiter = new AimdLimiter({ budgetMs: 10, initial: 8, windowRequests: 8 });
    for (let i = 0; i < 7; i += 1) limiter.record(1);
    limiter.record(1, true);
    expect(limiter.limit).toBe(4);
  });

  it("judges a window by its p90, so one slow request does not cut the limit", () => {
    const limiter = new AimdLimiter({ budgetMs: 10, initial: 4, windowRequests: 10 });
    for (let i = 0; i < 9; i += 1) limiter.record(2);
    limiter.record(500);
    expect(limiter.limit).toBe(5);
  });
});
