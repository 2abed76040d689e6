import { describe, expect, it } from "vitest";
import { clusterDemand, gatewayDemand, type GatewayReading } from "./cluster-demand.js";

function reading(
  gatewayHost: string | null,
  at: number,
  models: Record<string, [requests: number, queueMs: number]>,
  cpuSeconds?: number,
): GatewayReading {
  return {
    gatewayHost,
    at,
    models: new Map(
      Object.entries(models).map(([name, [requests, queueMs]]) => [
        name,
        { requests, queueNs: queueMs * 1e6, queueCount: requests },
      ]),
    ),
    workers: cpuSeconds === undefined ? undefined : new Map([["m\u00001\u00000", { pid: 7, cpuSeconds }]]),
  };
}

describe("cluster demand: per gateway and summed", () => {
  it("sums rates and busy cores, weights queue times by requests and keeps each model's busiest gateway", () => {
    const a = gatewayDemand(reading("a:1", 0, { m: [0, 0] }, 10), reading("a:1", 10_000, { m: [50, 50 * 2] }, 15));
    const b = gatewayDemand(reading("b:1", 0, { m: [0, 0] }, 3), reading("b:1", 10_000, { m: [150, 150 * 10] }, 18));
    expect(a).toMatchObject({ requestsPerSecond: 5, queueTimeMs: 2, busyCores: 0.5 });
    const sum = clusterDemand([a, b]);
    expect(sum.requestsPerSecond).toBe(20);
    expect(sum.busyCores).toBe(2);
    // (5 × 2 + 15 × 10) / 20 = 8 ms.
    expect(sum.queueTimeMs).toBe(8);
    expect(sum.models.get("m")).toEqual({ rps: 20, busiestRps: 15, queueTimeMs: 8 });
  });

  it("counts nothing at a gateway's first reading, and from 0 after a counter went down", () => {
    expect(gatewayDemand(undefined, reading(null, 5000, { m: [40, 1] })).models.get("m")).toEqual({
      rps: 0,
      queueTimeMs: null,
    });
    const reloaded = gatewayDemand(reading(null, 0, { m: [100, 1] }), reading(null, 2000, { m: [6, 1] }));
    expect(reloaded.models.get("m")?.rps).toBe(3);
  });

  it("has no busy cores where a gateway's workers could not be read, and sums the others'", () => {
    const unknown = gatewayDemand(reading("a:1", 0, {}), reading("a:1", 1000, {}));
    expect(unknown.busyCores).toBeNull();
    expect(clusterDemand([unknown]).busyCores).toBeNull();
    const known = gatewayDemand(reading("b:1", 0, {}, 1), reading("b:1", 1000, {}, 1.5));
    expect(clusterDemand([unknown, known]).busyCores).toBe(0.5);
  });
});
