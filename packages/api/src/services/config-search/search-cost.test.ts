import { describe, expect, it } from "vitest";
import { costPer1000Inferences, hostShare } from "./search-cost.js";

const cpu8 = { kind: "CPU" as const, cpuCores: 8, gpuCount: 0, costPerHour: 3.6 };

describe("cost per 1,000 inferences", () => {
  it("charges the share of the host the instances reserve", () => {
    // 3.6/h × 2/8 = 0.9/h; 100 inf/s = 360,000 inf/h → 0.0025 per 1,000.
    expect(costPer1000Inferences(100, 2, cpu8)).toBeCloseTo(0.0025, 9);
    expect(hostShare(2, cpu8)).toBe(0.25);
  });

  it("caps the share at the whole host and counts GPUs on a GPU profile", () => {
    expect(hostShare(16, cpu8)).toBe(1);
    expect(hostShare(1, { kind: "GPU", cpuCores: 32, gpuCount: 4, costPerHour: 10 })).toBe(0.25);
  });

  it("charges the whole host when the profile does not say its size", () => {
    expect(hostShare(1, { kind: "CPU", cpuCores: null, gpuCount: 0, costPerHour: 1 })).toBe(1);
  });

  it("has no cost per inference without throughput", () => {
    expect(costPer1000Inferences(0, 1, cpu8)).toBeNull();
  });

  it("makes more instances dearer per inference unless throughput grows as much", () => {
    const one = costPer1000Inferences(100, 1, cpu8)!;
    const four = costPer1000Inferences(110, 4, cpu8)!;
    expect(four).toBeGreaterThan(one);
  });
});
