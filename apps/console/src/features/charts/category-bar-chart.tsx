"use client";

import { Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from "recharts";
import { ChartFigure } from "./chart-figure";
import { hasAnyValue, numericValues, summarizeSeries, type ChartRow, type ChartSeries } from "./chart-series";
import { niceTicks } from "./nice-ticks";

const ROW_HEIGHT = 32;

/**
 * Horizontal bars, one row per category (model, "model on profile", batch
 * size): long names stay readable at narrow widths.
 */
export function CategoryBarChart({
  title,
  categoryLabel,
  valueLabel,
  rows,
  series,
  formatValue,
  formatAxis = (value) => formatValue(value),
  emptyText,
}: {
  title: string;
  /** What the rows are, e.g. "model" (the axis' name, and the summary's). */
  categoryLabel: string;
  /** The quantity and its unit, e.g. "cost per hour (USD)". */
  valueLabel: string;
  /** Each row has `category` (its name) and one number per series key. */
  rows: readonly ChartRow[];
  series: readonly ChartSeries[];
  formatValue: (value: number) => string;
  /** The value axis' ticks, given all of them (to pick one precision); default formatValue. */
  formatAxis?: (value: number, ticks: readonly number[]) => string;
  emptyText?: string;
}) {
  const dataMax = Math.max(0, ...series.flatMap((entry) => numericValues(rows, entry.key)));
  const ticks = niceTicks(dataMax > 0 ? dataMax : 1);
  const height = Math.max(140, rows.length * ROW_HEIGHT * Math.max(1, series.length * 0.7) + 72);
  return (
    <ChartFigure
      title={title}
      summary={summarizeCategories(rows, series, formatValue, categoryLabel)}
      hasData={hasAnyValue(rows, series)}
      plotHeight={height}
      {...(emptyText ? { emptyText } : {})}
    >
      <BarChart
        responsive
        layout="vertical"
        data={rows as ChartRow[]}
        style={{ width: "100%", height: "100%" }}
        margin={{ top: 8, right: 24, bottom: 24, left: 8 }}
      >
        <CartesianGrid stroke="#e3e6ea" horizontal={false} />
        <XAxis
          type="number"
          domain={[0, ticks[ticks.length - 1]!]}
          ticks={ticks}
          interval={0}
          tickFormatter={(value: number) => formatAxis(value, ticks)}
          label={{ value: valueLabel, position: "insideBottom", offset: -16 }}
        />
        <YAxis type="category" dataKey="category" width={170} name={categoryLabel} tick={{ fontSize: 13 }} />
        <Tooltip formatter={(value) => (typeof value === "number" ? formatValue(value) : String(value))} />
        {series.length > 1 ? <Legend verticalAlign="top" /> : null}
        {series.map((entry) => (
          <Bar
            key={entry.key}
            dataKey={entry.key}
            name={entry.label}
            fill={entry.color}
            isAnimationActive={false}
            maxBarSize={22}
          />
        ))}
      </BarChart>
    </ChartFigure>
  );
}

function summarizeCategories(
  rows: readonly ChartRow[],
  series: readonly ChartSeries[],
  format: (value: number) => string,
  categoryLabel: string,
): string {
  if (!hasAnyValue(rows, series)) return "No data in this range.";
  if (series.length !== 1) return summarizeSeries(rows, series, format);
  const key = series[0]!.key;
  const parts = rows.flatMap((row) =>
    typeof row[key] === "number" ? [`${String(row["category"])} ${format(row[key])}`] : [],
  );
  return `${series[0]!.label} by ${categoryLabel}: ${parts.join(", ")}.`;
}
