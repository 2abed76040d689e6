"use client";

import { byteUnitFor, formatNumber, formatPercent } from "@/lib/number-format";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { formatPercentTick } from "@/features/charts/number-format";
import { TimeSeriesChart } from "@/features/charts/time-series-chart";
import type { UsageSeries } from "./overview-types";
import { maxOf, overallRows, perModelRows } from "./series-rows";

/** The usage charts of one range: traffic and latency overall, then capacity per model. */
export function UsageCharts({ series }: { series: UsageSeries }) {
  const domain: [number, number] = [new Date(series.from).getTime(), new Date(series.to).getTime()];
  const memoryUnit = byteUnitFor(maxOf(series, "memoryBytes"));
  const throughput = perModelRows(series, "requestsPerSec");
  const instances = perModelRows(series, "instances");
  const cpu = perModelRows(series, "cpuUtilization");
  const memory = perModelRows(series, "memoryBytes", memoryUnit.size);
  // GPU charts only where the gateway read GPUs (NVML) in the range: a CPU host has no GPU figures at all.
  const gpu = perModelRows(series, "gpuUtilization");
  const gpuMemoryUnit = byteUnitFor(maxOf(series, "gpuMemoryBytes"));
  const gpuMemory = perModelRows(series, "gpuMemoryBytes", gpuMemoryUnit.size);
  const hasGpu = series.overall.some((point) => point.gpuUtilization !== null);
  const fmt = (value: number) => formatNumber(value);
  return (
    <div className="figure-grid">
      <TimeSeriesChart
        title="Requests per second"
        yLabel="requests/s"
        rows={overallRows(series, ["requestsPerSec"])}
        series={[{ key: "requestsPerSec", label: "Requests/s", color: SERIES_COLORS.primary }]}
        domain={domain}
        formatValue={fmt}
      />
      <TimeSeriesChart
        title="Request latency"
        yLabel="latency (ms)"
        rows={overallRows(series, ["latencyP50Ms", "latencyP95Ms", "latencyP99Ms"])}
        series={[
          { key: "latencyP50Ms", label: "p50", color: SERIES_COLORS.p50 },
          { key: "latencyP95Ms", label: "p95", color: SERIES_COLORS.p95 },
          { key: "latencyP99Ms", label: "p99", color: SERIES_COLORS.p99 },
        ]}
        domain={domain}
        formatValue={fmt}
        note="Each point is the request-weighted mean of the 15-second p50, p95 and p99 samples in its interval (the sampler's period; 15 s by default), not a percentile of all the interval's requests."
      />
      <TimeSeriesChart
        title="Error rate"
        yLabel="errors (% of requests)"
        rows={overallRows(series, ["errorRate"])}
        series={[{ key: "errorRate", label: "Error rate", color: SERIES_COLORS.error }]}
        domain={domain}
        emptyMax={0.01}
        formatValue={(value) => formatPercent(value)}
        formatAxis={formatPercentTick}
      />
      <TimeSeriesChart
        title="Queue time"
        yLabel="queue time (ms)"
        rows={overallRows(series, ["queueMs"])}
        series={[{ key: "queueMs", label: "Queue time", color: SERIES_COLORS.primary }]}
        domain={domain}
        formatValue={fmt}
      />
      <TimeSeriesChart
        title="Throughput per model"
        yLabel="requests/s"
        {...chartData(throughput)}
        domain={domain}
        formatValue={fmt}
      />
      <TimeSeriesChart
        title="Instances per model"
        yLabel="instances"
        curve="stepAfter"
        {...chartData(instances)}
        domain={domain}
        formatValue={fmt}
      />
      <TimeSeriesChart
        title="CPU utilization per model"
        yLabel="CPU (% of host)"
        emptyMax={0.01}
        {...chartData(cpu)}
        domain={domain}
        formatValue={(value) => formatPercent(value)}
        formatAxis={formatPercentTick}
      />
      <TimeSeriesChart
        title="Memory per model"
        yLabel={`memory (${memoryUnit.unit})`}
        {...chartData(memory)}
        domain={domain}
        formatValue={(value) => `${formatNumber(value)} ${memoryUnit.unit}`}
      />
      {hasGpu ? (
        <>
          <TimeSeriesChart
            title="GPU utilization per model"
            yLabel="GPU (% of host)"
            emptyMax={0.01}
            {...chartData(gpu)}
            domain={domain}
            formatValue={(value) => formatPercent(value)}
            formatAxis={formatPercentTick}
            note="Each GPU's utilization, split over the models with instances on it by their instance count there, as a share of all the host's GPUs."
          />
          <TimeSeriesChart
            title="GPU memory per model"
            yLabel={`GPU memory (${gpuMemoryUnit.unit})`}
            {...chartData(gpuMemory)}
            domain={domain}
            formatValue={(value) => `${formatNumber(value)} ${gpuMemoryUnit.unit}`}
          />
        </>
      ) : null}
    </div>
  );
}

/** A per-model chart's rows, lines and note, as TimeSeriesChart takes them. */
function chartData(data: ReturnType<typeof perModelRows>) {
  return { rows: data.rows, series: data.series, ...(data.note ? { note: data.note } : {}) };
}
