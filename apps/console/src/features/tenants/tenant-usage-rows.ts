// Relative imports: unit-tested outside Next (no "@/" alias there).
import type { ChartRow, ChartSeries } from "../charts/chart-series";
import { seriesColor } from "../charts/chart-palette";

/** What tenants.usage answers (dates as ISO strings). */
export interface TenantUsageSeries {
  from: string;
  to: string;
  shareOf: Record<string, number>;
  points: Array<{
    at: string;
    tenants: Record<string, { units: number; requests: number; throttled: number; use: number }>;
  }>;
}

export interface TenantUseRow {
  id: string;
  name: string;
  /** The tenant's part of the shares of the tenants served in the range (0..1). */
  shareOfServed: number;
  /** Its part of all units served in the range (0..1). */
  use: number;
  units: number;
  requests: number;
  throttled: number;
}

/** Per tenant over the whole range: use against share, most units first. */
export function tenantUseRows(series: TenantUsageSeries, nameOf: (id: string) => string): TenantUseRow[] {
  const totals = new Map<string, { units: number; requests: number; throttled: number }>();
  for (const point of series.points) {
    for (const [id, entry] of Object.entries(point.tenants)) {
      const total = totals.get(id) ?? { units: 0, requests: 0, throttled: 0 };
      total.units += entry.units;
      total.requests += entry.requests;
      total.throttled += entry.throttled;
      totals.set(id, total);
    }
  }
  const all = [...totals.values()].reduce((sum, total) => sum + total.units, 0);
  return [...totals]
    .map(([id, total]) => ({
      id,
      name: nameOf(id),
      shareOfServed: series.shareOf[id] ?? 0,
      use: all > 0 ? total.units / all : 0,
      ...total,
    }))
    .sort((a, b) => b.units - a.units);
}

/** Chart rows: per bucket, each tenant's use (0..1) of the units served; a tenant without units in a bucket is a gap. */
export function tenantChartRows(series: TenantUsageSeries, tenantIds: readonly string[]): ChartRow[] {
  return series.points.map((point) => {
    const row: ChartRow = { t: new Date(point.at).getTime() };
    for (const id of tenantIds) row[id] = point.tenants[id]?.use ?? null;
    return row;
  });
}

export function tenantChartSeries(rows: readonly TenantUseRow[]): ChartSeries[] {
  return rows.map((row, index) => ({
    key: row.id,
    label: `${row.name} (share ${Math.round(row.shareOfServed * 100)} %)`,
    color: seriesColor(index),
  }));
}
