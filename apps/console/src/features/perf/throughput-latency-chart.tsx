"use client";

import { formatLatencyValue, formatNumber } from "@/lib/number-format";
import { useState } from "react";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { XyLineChart } from "@/features/charts/xy-line-chart";
import { throughputLatencyRows, type LatencyPercentile } from "./perf-chart-rows";
import { PERF_LATENCY_UNIT } from "./perf-latency-unit";
import type { PerfSample } from "./perf-types";

/** The classic perf_analyzer curve: what throughput costs in tail latency, one point per concurrency step. */
export function ThroughputLatencyChart({ samples }: { samples: readonly PerfSample[] }) {
  const [percentile, setPercentile] = useState<LatencyPercentile>("p95");
  const unit = PERF_LATENCY_UNIT;
  const rows = throughputLatencyRows(samples, percentile, unit);
  const summary =
    rows.length > 0
      ? `${rows.length} ${rows.length === 1 ? "step" : "steps"}: ${rows.map((row) => `${String(row["c"])} ${formatNumber(row["throughput"] as number)} infer/s at ${formatLatencyValue(row["latency"] as number)} ${unit.symbol}`).join("; ")}.`
      : "No step had a successful request.";
  return (
    <XyLineChart
      title={`Throughput vs ${percentile} latency`}
      xKey="latency"
      xLabel={`${percentile} latency (${unit.symbol})`}
      yLabel="inferences/s"
      rows={rows}
      series={[{ key: "throughput", label: "Inferences/s", color: SERIES_COLORS.primary }]}
      formatX={(value) => formatNumber(value)}
      formatY={(value) => formatNumber(value)}
      pointLabelKey="c"
      summary={summary}
      actions={
        <fieldset className="segmented segmented-small">
          <legend className="visually-hidden">Latency percentile</legend>
          <div className="segmented-options">
            {(["p95", "p99"] as const).map((option) => (
              <label key={option} className="segmented-option">
                <input
                  type="radio"
                  name="throughput-latency-percentile"
                  value={option}
                  checked={percentile === option}
                  onChange={() => setPercentile(option)}
                />
                <span>{option}</span>
              </label>
            ))}
          </div>
        </fieldset>
      }
    />
  );
}
