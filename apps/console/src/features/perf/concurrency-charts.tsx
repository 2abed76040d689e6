"use client";

import { formatNumber } from "@/lib/number-format";
import { CategoryBarChart } from "@/features/charts/category-bar-chart";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { XyLineChart } from "@/features/charts/xy-line-chart";
import { batchSizes, byBatchSizeRows, byConcurrencyRows } from "./perf-chart-rows";
import { PERF_LATENCY_UNIT } from "./perf-latency-unit";
import type { PerfSample } from "./perf-types";

/** Throughput and latency as concurrency grows, and, when the report has several, by batch size. */
export function ConcurrencyCharts({ samples }: { samples: readonly PerfSample[] }) {
  const unit = PERF_LATENCY_UNIT;
  const rows = byConcurrencyRows(samples, unit);
  const fmt = (value: number) => formatNumber(value);
  return (
    <>
      <XyLineChart
        title="Throughput by concurrency"
        xKey="concurrency"
        xLabel="concurrency"
        yLabel="inferences/s"
        rows={rows}
        series={[{ key: "throughput", label: "Inferences/s", color: SERIES_COLORS.primary }]}
        formatX={fmt}
        formatY={fmt}
        integerX
      />
      <XyLineChart
        title="Latency by concurrency"
        xKey="concurrency"
        xLabel="concurrency"
        yLabel={`latency (${unit.symbol})`}
        rows={rows}
        series={[
          { key: "p50", label: "p50", color: SERIES_COLORS.p50 },
          { key: "p90", label: "p90", color: SERIES_COLORS.p90 },
          { key: "p95", label: "p95", color: SERIES_COLORS.p95 },
          { key: "p99", label: "p99", color: SERIES_COLORS.p99 },
        ]}
        formatX={fmt}
        formatY={fmt}
        integerX
      />
      {batchSizes(samples).length > 1 ? (
        <CategoryBarChart
          title="Best throughput by batch size"
          categoryLabel="batch size"
          valueLabel="inferences/s"
          rows={byBatchSizeRows(samples)}
          series={[{ key: "throughput", label: "Inferences/s", color: SERIES_COLORS.p90 }]}
          formatValue={fmt}
        />
      ) : null}
    </>
  );
}
