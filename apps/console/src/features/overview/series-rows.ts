import { seriesColor } from "@/features/charts/chart-palette";
import type { ChartRow, ChartSeries } from "@/features/charts/chart-series";
import type { SeriesPoint, UsageSeries } from "./overview-types";

export type PointMetric = Exclude<keyof SeriesPoint, "at">;

/** Rows of the overall series: `t` plus the chosen metrics, each scaled (e.g. bytes → MiB). */
export function overallRows(series: UsageSeries, metrics: readonly PointMetric[], scale = 1): ChartRow[] {
  return series.overall.map((point) => {
    const row: ChartRow = { t: new Date(point.at).getTime() };
    for (const metric of metrics) row[metric] = scaled(point[metric], scale);
    return row;
  });
}

/** Lines one chart shows at most; more would only make the legend unreadable. */
export const MAX_MODEL_LINES = 6;

/**
 * One column per model for one metric, and the chart series for them: the
 * MAX_MODEL_LINES models with the highest peak; models without any value in
 * the range (or, for throughput, without traffic) are left out. `note` says
 * what was left out.
 */
export function perModelRows(
  series: UsageSeries,
  metric: PointMetric,
  scale = 1,
): { rows: ChartRow[]; series: ChartSeries[]; note: string | undefined } {
  const peak = (points: SeriesPoint[]) => Math.max(...points.map((point) => point[metric] ?? -1));
  const withData = series.models.filter((model) =>
    model.points.some((point) => point[metric] !== null && (metric !== "requestsPerSec" || (point[metric] ?? 0) > 0)),
  );
  const shown = new Set(
    [...withData]
      .sort((a, b) => peak(b.points) - peak(a.points))
      .slice(0, MAX_MODEL_LINES)
      .map((model) => model.model),
  );
  const models = withData.filter((model) => shown.has(model.model));
  const note =
    withData.length > models.length
      ? `Showing the ${models.length} of ${withData.length} models with the highest values.`
      : undefined;
  const rows = series.overall.map((point, index) => {
    const row: ChartRow = { t: new Date(point.at).getTime() };
    for (const model of models) row[model.model] = scaled(model.points[index]?.[metric] ?? null, scale);
    return row;
  });
  return {
    rows,
    series: models.map((model, index) => ({ key: model.model, label: model.model, color: seriesColor(index) })),
    note,
  };
}

/** The largest value of a metric over all models, to choose a display unit. */
export function maxOf(series: UsageSeries, metric: PointMetric): number {
  let max = 0;
  for (const model of series.models) for (const point of model.points) max = Math.max(max, point[metric] ?? 0);
  return max;
}

function scaled(value: number | null, scale: number): number | null {
  return value === null ? null : value / scale;
}

/** Whether the sampler stored anything in the range. */
export function hasSamples(series: UsageSeries): boolean {
  return series.models.length > 0;
}
