"use client";

import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { formatClock } from "../time-range";

export interface ChartLine {
  key: string;
  name: string;
  color: string;
}

function formatValue(value: unknown, unit: string): string {
  return typeof value === "number" ? `${value.toFixed(value < 10 ? 2 : 1)}${unit}` : "—";
}

/** One time-series chart (gaps where the sampler had no data), captioned so it is named for screen readers. */
export function UsageLineChart({
  title,
  points,
  lines,
  spanMs,
  unit,
}: {
  title: string;
  points: Array<Record<string, unknown> & { t: number }>;
  lines: readonly ChartLine[];
  spanMs: number;
  unit: string;
}) {
  const last = [...points].reverse().find((point) => lines.some((line) => typeof point[line.key] === "number"));
  if (last === undefined) {
    return (
      <figure className="chart">
        <figcaption>{title}</figcaption>
        <p className="muted">No requests in this range.</p>
      </figure>
    );
  }
  const summary = lines.map((line) => `${line.name} ${formatValue(last[line.key], unit)}`).join(", ");
  return (
    <figure className="chart">
      <figcaption>
        {title}
        <span className="visually-hidden">. Latest: {summary}.</span>
      </figcaption>
      <ResponsiveContainer width="100%" height={220}>
        <LineChart data={points} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="#d5d9e0" />
          <XAxis dataKey="t" type="number" scale="time" domain={["dataMin", "dataMax"]} tickFormatter={(ms: number) => formatClock(ms, spanMs)} fontSize={12} />
          <YAxis fontSize={12} width={48} />
          <Tooltip labelFormatter={(ms) => new Date(Number(ms)).toLocaleString()} formatter={(value) => formatValue(value, unit)} />
          <Legend />
          {lines.map((line) => (
            <Line key={line.key} type="monotone" dataKey={line.key} name={line.name} stroke={line.color} strokeWidth={2} dot={false} isAnimationActive={false} />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}
