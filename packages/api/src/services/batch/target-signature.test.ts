import { describe, expect, it } from "vitest";
import { instancesOf } from "./target-signature.js";

describe("a job target's instances, from its served config", () => {
  it("sums the instance_group counts (a group without a count is one), and says nothing without groups", () => {
    expect(instancesOf([{ count: 2, kind: "KIND_CPU" }, { kind: "KIND_GPU" }])).toBe(3);
    expect(instancesOf([{ count: 1 }])).toBe(1);
    expect(instancesOf([])).toBeUndefined();
    expect(instancesOf(undefined)).toBeUndefined();
  });
});
