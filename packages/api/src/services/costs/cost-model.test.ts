import { describe, expect, it } from "vitest";
import { computeCosts, type CostProfile, type CostTotals } from "./cost-model.js";

// One CPU profile at 3.6 USD an hour (0.001 USD a second), and ten minutes of one model: five on the profile,
// five sampled before any profile existed (issue 27 item 10).
const PROFILE: CostProfile = { id: "p1", name: "host", costPerHour: 3.6, currency: "USD", gpuPriceShare: 0 };
const TOTALS: CostTotals = {
  usage: [
    { profileId: "p1", model: "alpha", inferences: 1000, cpuShareSeconds: 150, gpuShareSeconds: 0 },
    { profileId: null, model: "alpha", inferences: 500, cpuShareSeconds: 60, gpuShareSeconds: 0 },
    { profileId: null, model: "beta", inferences: 20, cpuShareSeconds: 30, gpuShareSeconds: 0 },
  ],
  covered: [
    { profileId: "p1", coveredSecs: 300 },
    { profileId: null, coveredSecs: 300 },
  ],
};

describe("computeCosts: samples taken without a hardware profile", () => {
  it("are not costed while no profile is the default: their inferences are listed as unprofiled", () => {
    const report = computeCosts(TOTALS, [PROFILE]);
    expect(report.costedOnDefault).toBeNull();
    expect(report.unprofiled).toEqual([
      { model: "alpha", inferences: 500 },
      { model: "beta", inferences: 20 },
    ]);
    const [profile] = report.profiles;
    expect(profile).toMatchObject({ coveredHours: 300 / 3600, hostCost: 0.3, attributedCost: 0.15, inferences: 1000 });
  });

  it("are costed on the default profile once one exists, in its lines and its host time, and the report says so", () => {
    const report = computeCosts(TOTALS, [PROFILE], "p1");
    expect(report.unprofiled).toEqual([]);
    expect(report.costedOnDefault).toEqual({
      profileId: "p1",
      profileName: "host",
      inferences: 520,
      coveredHours: 300 / 3600,
    });
    const [profile] = report.profiles;
    // 600 s covered at 0.001 USD/s; alpha used 210 CPU-share seconds in all, beta 30.
    expect(profile).toMatchObject({ coveredHours: 600 / 3600, hostCost: 0.6, attributedCost: 0.24, inferences: 1520 });
    expect(profile!.models.map((model) => [model.model, model.inferences, model.cost])).toEqual([
      ["alpha", 1500, 0.21],
      ["beta", 20, 0.03],
    ]);
    expect(profile!.models[0]!.costPer1000Inferences).toBeCloseTo(0.14, 9);
  });

  it("refuses a default profile it was not given", () => {
    expect(() => computeCosts(TOTALS, [PROFILE], "missing")).toThrow(
      "the default hardware profile missing is not among the profiles to cost",
    );
  });
});
