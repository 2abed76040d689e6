import { describe, expect, it } from "vitest";
import { checkResourceLimits, defaultResourceLimits, instanceCountOf } from "./resource-limits.js";

const limits = { maxInstancesPerModel: 4, maxThreadsPerInstance: 2, maxInstancesPerHost: 6 };

describe("resource limits", () => {
  it("defaults from the core count", () => {
    expect(defaultResourceLimits(8)).toEqual({
      maxInstancesPerModel: 16,
      maxThreadsPerInstance: 8,
      maxInstancesPerHost: 64,
    });
  });

  it("counts instances over the instance groups", () => {
    expect(instanceCountOf({})).toBe(1);
    expect(instanceCountOf({ instance_group: [{ count: 3 }, {}] })).toBe(4);
  });

  it.each([
    [
      { instance_group: [{ count: 12 }] },
      0,
      /asks for 12 instances; this server allows at most 4 per model \(--max-instances-per-model\)/,
    ],
    [{ instance_group: [{ count: 3 }] }, 4, /would make 7 on this server, over the limit of 6 \(--max-instances\)/],
    [
      { parameters: { intra_op_thread_count: { string_value: "64" } } },
      0,
      /'intra_op_thread_count' asks for 64 threads per instance; this server allows at most 2 \(--max-threads-per-instance\)/,
    ],
    [
      { parameters: { inter_op_thread_count: { string_value: "0" } } },
      0,
      /'inter_op_thread_count' asks for 16 threads/,
    ],
    [{ parameters: { intra_op_thread_count: { string_value: "-1" } } }, 0, /must be a non-negative integer/],
  ])("refuses %j with %i instances elsewhere", (config, elsewhere, message) => {
    expect(() => checkResourceLimits("m", config, limits, elsewhere, 16)).toThrow(message);
  });

  it("accepts what fits", () => {
    expect(() =>
      checkResourceLimits(
        "m",
        { instance_group: [{ count: 2 }], parameters: { intra_op_thread_count: { string_value: "2" } } },
        limits,
        4,
        16,
      ),
    ).not.toThrow();
  });
});
