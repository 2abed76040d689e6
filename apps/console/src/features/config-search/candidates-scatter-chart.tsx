"use client";

import { CartesianGrid, Legend, ReferenceLine, Scatter, ScatterChart, Tooltip, XAxis, YAxis } from "recharts";
import { ChartFigure } from "@/features/charts/chart-figure";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { formatTick } from "@/features/charts/number-format";
import { formatLatencyValue, formatNumber } from "@/lib/number-format";
import { scatterPoints, scatterSummary, type CandidateShape } from "./search-view-model";

const FRONT_COLOR = "#047857";
const RECOMMENDED_COLOR = "#c2410c";

/**
 * Throughput against p99 latency, one point per measured candidate: the
 * Pareto front (no candidate is both faster and lower-latency) joined by a
 * line, the recommended candidate drawn larger in its own colour, and the
 * p99 budget as a dashed vertical line when it lies within twice the
 * highest p99 measured (the caption always states it).
 */
export function CandidatesScatterChart({
  candidates,
  recommendedIndex,
  p99BudgetMs,
}: {
  candidates: readonly CandidateShape[];
  recommendedIndex: number | null;
  p99BudgetMs: number;
}) {
  const points = scatterPoints(candidates, recommendedIndex);
  // The budget line is drawn when it lies near the points; a budget far above them would squeeze them into a corner.
  const highest = Math.max(0, ...points.all.map((point) => point.p99Ms));
  const showBudget = p99BudgetMs <= highest * 2;
  const xMax = (showBudget ? Math.max(highest, p99BudgetMs) : highest) * 1.1;
  return (
    <ChartFigure
      title="Throughput vs p99 latency"
      summary={scatterSummary(points, p99BudgetMs, (value) => formatNumber(value), formatLatencyValue)}
      hasData={points.all.length > 0}
      emptyText="No candidate measured yet."
    >
      <ScatterChart
        responsive
        style={{ width: "100%", height: "100%" }}
        margin={{ top: 16, right: 24, bottom: 24, left: 8 }}
      >
        <CartesianGrid stroke="#e3e6ea" />
        <XAxis
          dataKey="p99Ms"
          type="number"
          name="p99 latency"
          unit=" ms"
          tick={{ fontSize: 12 }}
          domain={[0, xMax]}
          tickFormatter={(value: number) => formatTick(value)}
          label={{ value: "p99 latency (ms)", position: "insideBottom", offset: -16 }}
        />
        <YAxis
          dataKey="throughput"
          type="number"
          name="inferences/s"
          width={84}
          tick={{ fontSize: 12 }}
          domain={[0, "auto"]}
          tickFormatter={(value: number) => formatTick(value)}
          label={{ value: "inferences/s", angle: -90, position: "insideLeft", style: { textAnchor: "middle" } }}
        />
        <Tooltip formatter={(value) => (typeof value === "number" ? formatNumber(value) : String(value))} />
        <Legend verticalAlign="top" />
        {showBudget ? (
          <ReferenceLine
            x={p99BudgetMs}
            stroke={SERIES_COLORS.p99}
            strokeDasharray="6 4"
            label={{ value: "p99 budget", position: "insideTopRight", fontSize: 12 }}
          />
        ) : null}
        <Scatter
          name="Candidates"
          data={points.all}
          fill={SERIES_COLORS.primary}
          isAnimationActive={false}
          className="search-candidates"
        />
        <Scatter
          name="Pareto front"
          data={points.front}
          fill={FRONT_COLOR}
          line={{ stroke: FRONT_COLOR, strokeWidth: 2 }}
          lineType="joint"
          isAnimationActive={false}
          className="search-pareto-front"
        />
        {points.recommended ? (
          <Scatter
            name="Recommended"
            data={[points.recommended]}
            fill={RECOMMENDED_COLOR}
            shape="star"
            legendType="star"
            isAnimationActive={false}
            className="search-recommended"
          />
        ) : null}
      </ScatterChart>
    </ChartFigure>
  );
}
