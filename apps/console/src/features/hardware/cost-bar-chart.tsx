"use client";

import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { formatMoney } from "./money";

export interface CostBar {
  label: string;
  value: number;
}

/** One cost figure per model as bars, captioned (the table below has the same numbers). */
export function CostBarChart({ title, bars, currency, color, empty }: { title: string; bars: readonly CostBar[]; currency: string; color: string; empty: string }) {
  if (bars.length === 0) {
    return (
      <figure className="chart">
        <figcaption>{title}</figcaption>
        <p className="muted">{empty}</p>
      </figure>
    );
  }
  // Room for the longest model name, within reason (longer ones are cut by the axis).
  const labelWidth = Math.min(220, 16 + 7 * Math.max(...bars.map((bar) => bar.label.length)));
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={Math.max(140, 48 + bars.length * 36)}>
        <BarChart data={bars as CostBar[]} layout="vertical" margin={{ top: 4, right: 24, bottom: 4, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="#d5d9e0" horizontal={false} />
          <XAxis type="number" fontSize={12} tickFormatter={(value: number) => formatMoney(value, currency)} />
          <YAxis type="category" dataKey="label" width={labelWidth} fontSize={12} interval={0} />
          <Tooltip formatter={(value) => formatMoney(Number(value), currency)} />
          <Bar dataKey="value" name={title} fill={color} isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}
