import { OperonError } from "@operon/protocol/errors";
import { describe, expect, it } from "vitest";
import { GrpcMessageBudget } from "./grpc-message-budget.js";

describe("GrpcMessageBudget", () => {
  it("holds messages up to its limit, refuses the one that would pass it, and takes more once one is released", () => {
    const budget = new GrpcMessageBudget(100);
    const first = budget.hold(60);
    const second = budget.hold(40);
    expect(budget.usedBytes).toBe(100);
    let refusal: unknown;
    try {
      budget.hold(1);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(OperonError);
    expect((refusal as OperonError).kind).toBe("RESOURCE_EXHAUSTED");
    expect((refusal as OperonError).message).toBe(
      "the server holds 100 bytes of gRPC inference messages already; this one's 1 more would pass its limit of 100 (--grpc-max-inflight-message-bytes): retry shortly",
    );
    first();
    first(); // a second release gives nothing back twice
    expect(budget.usedBytes).toBe(40);
    budget.hold(60)();
    second();
    expect(budget.usedBytes).toBe(0);
  });

  it("refuses a single message larger than the whole budget", () => {
    expect(() => new GrpcMessageBudget(10).hold(11)).toThrow(/limit of 10/);
  });
});
