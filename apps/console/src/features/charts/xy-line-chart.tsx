"use client";

import type { ReactNode } from "react";
import { CartesianGrid, LabelList, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import { ChartFigure } from "./chart-figure";
import { hasAnyValue, summarizeSeries, type ChartRow, type ChartSeries } from "./chart-series";
import { formatTick } from "./number-format";

/**
 * Lines over a numeric x axis, every point marked; points join in row order
 * (so a throughput–latency curve follows the concurrency steps even when
 * latency does not grow monotonically).
 */
export function XyLineChart({
  title,
  xKey,
  xLabel,
  yLabel,
  rows,
  series,
  formatX,
  formatY,
  pointLabelKey,
  actions,
  summary,
  integerX = false,
}: {
  title: string;
  xKey: string;
  xLabel: string;
  yLabel: string;
  rows: readonly ChartRow[];
  series: readonly ChartSeries[];
  formatX: (value: number) => string;
  formatY: (value: number) => string;
  /** A row key printed beside every point (e.g. "c" → "c=4"). */
  pointLabelKey?: string;
  actions?: ReactNode;
  /** Overrides the generated text summary. */
  summary?: string;
  /** x is a count (concurrency): whole-number ticks over the data's span, not from 0. */
  integerX?: boolean;
}) {
  return (
    <ChartFigure
      title={title}
      summary={summary ?? summarizeSeries(rows, series, formatY)}
      hasData={hasAnyValue(rows, series)}
      actions={actions}
    >
      <LineChart
        responsive
        data={rows as ChartRow[]}
        style={{ width: "100%", height: "100%" }}
        margin={{ top: 16, right: 24, bottom: 24, left: 8 }}
      >
        <CartesianGrid stroke="#e3e6ea" />
        <XAxis
          dataKey={xKey}
          type="number"
          tick={{ fontSize: 12 }}
          domain={integerX ? ["dataMin", "dataMax"] : [0, "auto"]}
          allowDecimals={!integerX}
          padding={integerX ? { left: 16, right: 16 } : { left: 0, right: 0 }}
          tickFormatter={(value: number) => formatX(value)}
          label={{ value: xLabel, position: "insideBottom", offset: -16 }}
        />
        <YAxis
          width={84}
          tick={{ fontSize: 12 }}
          domain={[0, "auto"]}
          tickFormatter={(value: number) => formatTick(value)}
          label={{ value: yLabel, angle: -90, position: "insideLeft", style: { textAnchor: "middle" } }}
        />
        <Tooltip
          labelFormatter={(value) => (typeof value === "number" ? `${xLabel}: ${formatX(value)}` : String(value))}
          formatter={(value) => (typeof value === "number" ? formatY(value) : String(value))}
        />
        {series.length > 1 ? <Legend verticalAlign="top" /> : null}
        {series.map((entry) => (
          <Line
            key={entry.key}
            type="linear"
            dataKey={entry.key}
            name={entry.label}
            stroke={entry.color}
            strokeWidth={2}
            dot={{ r: 4, fill: entry.color }}
            isAnimationActive={false}
          >
            {pointLabelKey ? <LabelList dataKey={pointLabelKey} position="top" className="chart-point-label" /> : null}
          </Line>
        ))}
      </LineChart>
    </ChartFigure>
  );
}
