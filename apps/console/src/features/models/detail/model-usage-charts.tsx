"use client";

import { formatMs, formatNumber } from "@/lib/number-format";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import type { ChartRow, ChartSeries } from "@/features/charts/chart-series";
import { TIME_RANGE_OPTIONS, useTimeWindow, type TimeRangeId } from "@/features/charts/time-range";
import { TimeSeriesChart } from "@/features/charts/time-series-chart";
import { useTRPC } from "@/lib/trpc";

const RATE_SERIES: ChartSeries[] = [{ key: "requestsPerSec", label: "Requests/s", color: SERIES_COLORS.primary }];
const LATENCY_SERIES: ChartSeries[] = [
  { key: "latencyP50Ms", label: "p50", color: SERIES_COLORS.p50 },
  { key: "latencyP95Ms", label: "p95", color: SERIES_COLORS.p95 },
  { key: "latencyP99Ms", label: "p99", color: SERIES_COLORS.p99 },
];

/** The model's usage over time from the control plane's samples: throughput and latency quantiles. */
export function ModelUsageCharts({ name }: { name: string }) {
  const trpc = useTRPC();
  const [range, setRange] = useState<TimeRangeId>("1h");
  const timeWindow = useTimeWindow(range, 30_000);
  const series = useQuery({
    ...trpc.metrics.timeSeries.queryOptions({ ...timeWindow, model: name }),
    placeholderData: keepPreviousData,
  });
  return (
    <section className="card" aria-labelledby="usage-title">
      <div className="section-header">
        <h2 id="usage-title">Usage</h2>
        <div className="inline-select">
          <SelectField
            label="Time range"
            name="range"
            options={TIME_RANGE_OPTIONS}
            value={range}
            onChange={(event) => setRange(event.target.value as TimeRangeId)}
          />
        </div>
      </div>
      <QueryView query={series} loadingLabel="Loading usage…">
        {(data) => {
          const points = data.models.find((entry) => entry.model === name)?.points ?? [];
          if (!points.some((point) => point.requestsPerSec !== null)) {
            return (
              <EmptyState title="No usage samples in this range yet">
                <p>
                  The control plane samples the gateway's counters (every 15 s unless{" "}
                  <code>operon serve --usage-sample-secs</code> says otherwise) while the model is loaded.
                </p>
              </EmptyState>
            );
          }
          const rows: ChartRow[] = points.map((point) => ({
            t: new Date(point.at).getTime(),
            requestsPerSec: point.requestsPerSec,
            latencyP50Ms: point.latencyP50Ms,
            latencyP95Ms: point.latencyP95Ms,
            latencyP99Ms: point.latencyP99Ms,
          }));
          const domain: [number, number] = [new Date(data.from).getTime(), new Date(data.to).getTime()];
          return (
            <div className="figure-grid">
              <TimeSeriesChart
                title="Requests per second"
                yLabel="requests/s"
                rows={rows}
                series={RATE_SERIES}
                domain={domain}
                formatValue={(value) => `${formatNumber(value)}/s`}
              />
              <TimeSeriesChart
                title="Latency (ms)"
                yLabel="latency (ms)"
                rows={rows}
                series={LATENCY_SERIES}
                domain={domain}
                formatValue={formatMs}
              />
            </div>
          );
        }}
      </QueryView>
    </section>
  );
}
