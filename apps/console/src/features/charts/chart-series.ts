/** One line or bar group of a chart: the row key it reads, its legend label, its colour. */
export interface ChartSeries {
  key: string;
  label: string;
  color: string;
}

/** A chart row: the x value and one number (or null: a gap) per series key. */
export type ChartRow = Record<string, number | string | null>;

export function numericValues(rows: readonly ChartRow[], key: string): number[] {
  return rows
    .map((row) => row[key])
    .filter((value): value is number => typeof value === "number" && Number.isFinite(value));
}

export function hasAnyValue(rows: readonly ChartRow[], series: readonly ChartSeries[]): boolean {
  return series.some((entry) => numericValues(rows, entry.key).length > 0);
}

/**
 * The chart in words, for screen readers and for anyone skimming: per
 * series its number of points, latest and highest value.
 */
export function summarizeSeries(
  rows: readonly ChartRow[],
  series: readonly ChartSeries[],
  format: (value: number) => string,
): string {
  const parts = series.flatMap((entry) => {
    const values = numericValues(rows, entry.key);
    if (values.length === 0) return [];
    const latest = values[values.length - 1]!;
    const peak = Math.max(...values);
    const points = values.length === 1 ? "1 point" : `${values.length} points`;
    return [`${entry.label}: ${points}, latest ${format(latest)}, highest ${format(peak)}`];
  });
  return parts.length > 0 ? `${parts.join("; ")}.` : "No data in this range.";
}
