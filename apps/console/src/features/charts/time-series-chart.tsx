"use client";

import { CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import { ChartFigure } from "./chart-figure";
import { hasAnyValue, numericValues, summarizeSeries, type ChartRow, type ChartSeries } from "./chart-series";
import { niceTicks } from "./nice-ticks";
import { formatClock, formatTick, formatTimeTick } from "./number-format";

/** Few enough points to mark each one (a lone sample would otherwise draw nothing). */
const DOTS_UP_TO = 40;

/**
 * Lines over time. Rows carry `t` (epoch ms, the bucket's start); a null
 * value is a gap (no sample), not a zero.
 */
export function TimeSeriesChart({
  title,
  yLabel,
  rows,
  series,
  domain,
  formatValue,
  formatAxis = formatTick,
  emptyMax = 1,
  curve = "monotone",
  note,
}: {
  title: string;
  /** The quantity and its unit, e.g. "requests/s" or "latency (ms)". */
  yLabel: string;
  rows: readonly ChartRow[];
  series: readonly ChartSeries[];
  /** [from, to] in epoch ms. */
  domain: [number, number];
  formatValue: (value: number) => string;
  /** The y axis' ticks, given all of them (to pick one precision); default short numbers (the unit is in the axis label). */
  formatAxis?: (value: number, ticks: readonly number[]) => string;
  /** The top of the y axis while every value is 0 (e.g. 0.01 for a 1 % error rate). */
  emptyMax?: number;
  /** "stepAfter" for counts that jump and hold (instances): a smooth curve would draw 1.5 instances between samples. */
  curve?: "monotone" | "stepAfter";
  /** Appended to the text summary (e.g. which series were left out). */
  note?: string;
}) {
  const range = domain[1] - domain[0];
  const dots = Math.max(...series.map((entry) => numericValues(rows, entry.key).length), 0) <= DOTS_UP_TO;
  const dataMax = Math.max(0, ...series.flatMap((entry) => numericValues(rows, entry.key)));
  const yTicks = niceTicks(dataMax > 0 ? dataMax : emptyMax);
  return (
    <ChartFigure
      title={title}
      summary={`${summarizeSeries(rows, series, formatValue)}${note ? ` ${note}` : ""}`}
      hasData={hasAnyValue(rows, series)}
      {...(series.length > 3 ? { plotHeight: 300 } : {})}
    >
      <LineChart
        responsive
        data={rows as ChartRow[]}
        style={{ width: "100%", height: "100%" }}
        margin={{ top: 8, right: 16, bottom: 24, left: 8 }}
      >
        <CartesianGrid stroke="#e3e6ea" />
        <XAxis
          dataKey="t"
          type="number"
          tick={{ fontSize: 12 }}
          scale="time"
          domain={domain}
          tickFormatter={(value: number) => formatTimeTick(value, range)}
          label={{ value: "time", position: "insideBottom", offset: -16 }}
          minTickGap={24}
        />
        <YAxis
          width={84}
          tick={{ fontSize: 12 }}
          domain={[0, yTicks[yTicks.length - 1]!]}
          ticks={yTicks}
          interval={0}
          tickFormatter={(value: number) => formatAxis(value, yTicks)}
          label={{ value: yLabel, angle: -90, position: "insideLeft", style: { textAnchor: "middle" } }}
        />
        <Tooltip
          labelFormatter={(value) => (typeof value === "number" ? formatClock(value) : String(value))}
          formatter={(value) => (typeof value === "number" ? formatValue(value) : String(value))}
        />
        {series.length > 1 ? <Legend verticalAlign="top" /> : null}
        {series.map((entry) => (
          <Line
            key={entry.key}
            type={curve}
            dataKey={entry.key}
            name={entry.label}
            stroke={entry.color}
            strokeWidth={2}
            dot={dots ? { r: 2.5, fill: entry.color } : false}
            connectNulls={false}
            isAnimationActive={false}
          />
        ))}
      </LineChart>
    </ChartFigure>
  );
}
