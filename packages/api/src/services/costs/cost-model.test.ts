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

describe("computeCosts: operators (issue 27 item 10)", () => {
  // Ten minutes on the profile: step "pre" served only the operator, "cls" served it half the time.
  const totals: CostTotals = {
    usage: [
      { profileId: "p1", model: "pre", inferences: 600, cpuShareSeconds: 120, gpuShareSeconds: 0 },
      { profileId: "p1", model: "cls", inferences: 1200, cpuShareSeconds: 60, gpuShareSeconds: 0 },
    ],
    covered: [{ profileId: "p1", coveredSecs: 600 }],
    operatorUsage: [{ profileId: "p1", model: "pipe", inferences: 600, cpuShareSeconds: 150, gpuShareSeconds: 0 }],
  };

  it("lists each operator with the cost of its share of its steps, costed like a model", () => {
    const report = computeCosts(totals, [PROFILE]);
    expect(report.operators).toHaveLength(1);
    expect(report.operators[0]).toMatchObject({
      operator: "pipe",
      profileName: "host",
      inferences: 600,
      cost: 0.15,
      costPerHour: 0.9,
    });
    expect(report.operators[0]!.costPer1000Inferences).toBeCloseTo(0.25, 9);
    expect(report.profiles[0]!.operators).toEqual(report.operators);
  });

  it("never adds an operator to a total: the profile's attributed cost is its models' alone", () => {
    const report = computeCosts(totals, [PROFILE]);
    const [profile] = report.profiles;
    const models = profile!.models.reduce((sum, model) => sum + model.cost, 0);
    expect(profile!.attributedCost).toBeCloseTo(models, 9);
    expect(profile!.attributedCost).toBeCloseTo(0.18, 9);
    expect(profile!.unattributedCost).toBeCloseTo(0.6 - 0.18, 9);
    expect(profile!.inferences).toBe(1800);
    expect(report.models.map((model) => model.model)).toEqual(["pre", "cls"]);
  });

  it("costs an operator's samples without a profile on the default one, and drops them while there is none", () => {
    const unprofiled: CostTotals = {
      ...totals,
      usage: totals.usage.map((usage) => ({ ...usage, profileId: null })),
      covered: [{ profileId: null, coveredSecs: 600 }],
      operatorUsage: totals.operatorUsage!.map((usage) => ({ ...usage, profileId: null })),
    };
    expect(computeCosts(unprofiled, [PROFILE], "p1").operators.map((line) => [line.operator, line.cost])).toEqual([
      ["pipe", 0.15],
    ]);
    expect(computeCosts(unprofiled, [PROFILE]).operators).toEqual([]);
  });
});

describe("computeCosts: a cluster's gateways (issue 23)", () => {
  // Ten minutes on two gateways of the profile: 1200 host-seconds over 600 s of time; alpha used 150 CPU-share
  // seconds on one and 90 on the other.
  const totals: CostTotals = {
    usage: [{ profileId: "p1", model: "alpha", inferences: 3000, cpuShareSeconds: 240, gpuShareSeconds: 0 }],
    covered: [{ profileId: "p1", coveredSecs: 1200, wallSecs: 600 }],
  };

  it("costs every gateway's host, and a model's cost per hour per hour of time", () => {
    const [profile] = computeCosts(totals, [PROFILE]).profiles;
    expect(profile).toMatchObject({ coveredHours: 1200 / 3600, hostCost: 1.2, attributedCost: 0.24 });
    expect(profile!.unattributedCost).toBeCloseTo(0.96, 9);
    // 0.24 USD over 10 minutes: 1.44 USD an hour, not half of it (the host-hours are two per hour).
    expect(profile!.models[0]!.costPerHour).toBeCloseTo(1.44, 9);
  });

  it("without wall time (one gateway), the covered seconds are the time", () => {
    const [profile] = computeCosts({ ...totals, covered: [{ profileId: "p1", coveredSecs: 600 }] }, [PROFILE]).profiles;
    expect(profile!.models[0]!.costPerHour).toBeCloseTo(1.44, 9);
    expect(profile).toMatchObject({ coveredHours: 600 / 3600, hostCost: 0.6 });
  });
});
