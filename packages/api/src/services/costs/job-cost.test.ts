import { describe, expect, it } from "vitest";
import type { CostProfile } from "./cost-model.js";
import { attributeJobCost, type TargetUsageInterval } from "./job-cost.js";

const CPU: CostProfile = { id: "cpu", name: "cpu host", costPerHour: 3.6, currency: "USD", gpuPriceShare: 0 };
const GPU: CostProfile = { id: "gpu", name: "gpu host", costPerHour: 36, currency: "USD", gpuPriceShare: 0.5 };
const T0 = Date.UTC(2026, 11, 5, 12, 0, 0);

function usage(offsetSecs: number, seconds: number, fields: Partial<TargetUsageInterval> = {}): TargetUsageInterval {
  return {
    at: new Date(T0 + offsetSecs * 1000),
    intervalSeconds: seconds,
    profileId: "cpu",
    requests: 100,
    cpuShareSeconds: seconds * 0.5,
    gpuShareSeconds: 0,
    ...fields,
  };
}

function job(offsetSecs: number, seconds: number, requests: number) {
  return { at: new Date(T0 + offsetSecs * 1000), intervalMs: seconds * 1000, requests };
}

describe("attributeJobCost", () => {
  it("charges the job its share of the target's requests in each sample", () => {
    // 10 s at half the CPU of a 3.6/h host: 3.6 × 0.5 × 10 / 3600 = 0.005; the job sent 40 of 100 requests.
    const cost = attributeJobCost([usage(0, 10)], [job(0, 10, 40)], [CPU], null);
    expect(cost.lines).toEqual([
      { profileId: "cpu", profileName: "cpu host", currency: "USD", requests: 40, targetRequests: 100, cost: 0.002 },
    ]);
    expect(cost.total).toBe(0.002);
    expect(cost.currency).toBe("USD");
    expect(cost.unsampledRequests).toBe(0);
  });

  it("spreads a job sample over the usage samples it overlaps, by time", () => {
    // One 4 s job sample of 80 requests over four 1 s usage samples of 40 requests each: half of each.
    const samples = [0, 1, 2, 3].map((s) => usage(s, 1, { requests: 40 }));
    const cost = attributeJobCost(samples, [job(0, 4, 80)], [CPU], null);
    // Each: 3.6 × 0.5 × 1 / 3600 × 0.5 = 0.00025; four of them.
    expect(cost.total).toBeCloseTo(0.001, 9);
    expect(cost.lines[0]?.requests).toBe(80);
  });

  it("caps the share at the whole sample, and a sample without requests costs the job nothing", () => {
    const cost = attributeJobCost(
      [usage(0, 10, { requests: 10 }), usage(10, 10, { requests: 0 })],
      [job(0, 10, 50), job(10, 10, 5)],
      [CPU],
      null,
    );
    // The first sample wholly (0.005), the second not at all.
    expect(cost.total).toBe(0.005);
  });

  it("weights the GPU part of a GPU profile's price by GPU share", () => {
    // 36/h, half for the GPUs: (0.5 × 5 + 0.5 × 2) CPU/GPU share-seconds × 36 / 3600 = 0.035, all of it the job's.
    const cost = attributeJobCost(
      [usage(0, 10, { profileId: "gpu", cpuShareSeconds: 5, gpuShareSeconds: 2, requests: 20 })],
      [job(0, 10, 20)],
      [GPU],
      null,
    );
    expect(cost.total).toBe(0.035);
  });

  it("costs samples without a profile on the default one, and leaves them uncosted without a default", () => {
    const unprofiled = [usage(0, 10, { profileId: null, requests: 40 })];
    expect(attributeJobCost(unprofiled, [job(0, 10, 40)], [CPU], "cpu").total).toBe(0.005);
    const none = attributeJobCost(unprofiled, [job(0, 10, 40)], [CPU], null);
    expect(none.total).toBeNull();
    expect(none.lines).toEqual([]);
    expect(none.unsampledRequests).toBe(40);
  });

  it("reports the job's requests no usage sample covered as unsampled", () => {
    // The job ran 0..20 s; the sampler covered 0..10 s only.
    const cost = attributeJobCost([usage(0, 10)], [job(0, 20, 60)], [CPU], null);
    expect(cost.lines[0]?.requests).toBe(30);
    expect(cost.unsampledRequests).toBe(30);
    expect(cost.total).toBeCloseTo(0.0015, 9);
  });

  it("gives no total across currencies, but a line per profile", () => {
    const eur: CostProfile = { ...CPU, id: "eur", name: "eur host", currency: "EUR" };
    const cost = attributeJobCost(
      [usage(0, 10), usage(10, 10, { profileId: "eur" })],
      [job(0, 20, 80)],
      [CPU, eur],
      null,
    );
    expect(cost.total).toBeNull();
    expect(cost.currency).toBeNull();
    expect(cost.lines.map((line) => line.currency).sort()).toEqual(["EUR", "USD"]);
  });
});
