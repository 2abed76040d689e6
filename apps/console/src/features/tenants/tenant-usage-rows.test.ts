import { describe, expect, it } from "vitest";
import { tenantChartRows, tenantChartSeries, tenantUseRows, type TenantUsageSeries } from "./tenant-usage-rows";

const series: TenantUsageSeries = {
  from: "2026-12-01T10:00:00.000Z",
  to: "2026-12-01T10:01:00.000Z",
  shareOf: { gold: 2 / 3, bronze: 1 / 3 },
  points: [
    {
      at: "2026-12-01T10:00:00.000Z",
      tenants: {
        gold: { units: 20, requests: 10, throttled: 0, use: 2 / 3 },
        bronze: { units: 10, requests: 5, throttled: 2, use: 1 / 3 },
      },
    },
    { at: "2026-12-01T10:00:15.000Z", tenants: { gold: { units: 40, requests: 20, throttled: 0, use: 1 } } },
  ],
};

describe("tenant usage rows", () => {
  it("sums each tenant's use over the range next to its share, most units first", () => {
    const rows = tenantUseRows(series, (id) => id.toUpperCase());
    expect(rows).toEqual([
      { id: "gold", name: "GOLD", shareOfServed: 2 / 3, use: 60 / 70, units: 60, requests: 30, throttled: 0 },
      { id: "bronze", name: "BRONZE", shareOfServed: 1 / 3, use: 10 / 70, units: 10, requests: 5, throttled: 2 },
    ]);
    expect(tenantChartSeries(rows).map((entry) => entry.label)).toEqual(["GOLD (share 67 %)", "BRONZE (share 33 %)"]);
  });

  it("charts each tenant's use per bucket, a gap where it had none", () => {
    expect(tenantChartRows(series, ["gold", "bronze"])).toEqual([
      { t: Date.parse("2026-12-01T10:00:00.000Z"), gold: 2 / 3, bronze: 1 / 3 },
      { t: Date.parse("2026-12-01T10:00:15.000Z"), gold: 1, bronze: null },
    ]);
  });
});
