"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { TIME_RANGES, useTimeWindow, type TimeRangeValue } from "../time-range";
import { UsageLineChart, type ChartLine } from "./usage-line-chart";

const RATE_LINES: ChartLine[] = [{ key: "requestsPerSec", name: "Requests/s", color: "#1f5fbf" }];
const LATENCY_LINES: ChartLine[] = [
  { key: "latencyP50Ms", name: "p50", color: "#1c6b37" },
  { key: "latencyP95Ms", name: "p95", color: "#b36b00" },
  { key: "latencyP99Ms", name: "p99", color: "#b3261e" },
];

/** The model's usage over time from the control plane's samples: throughput and latency quantiles. */
export function ModelUsageCharts({ name }: { name: string }) {
  const trpc = useTRPC();
  const [range, setRange] = useState<TimeRangeValue>("1h");
  const timeWindow = useTimeWindow(range, 30_000);
  const series = useQuery({ ...trpc.metrics.timeSeries.queryOptions({ ...timeWindow, model: name }), placeholderData: keepPreviousData });
  const spanMs = Date.parse(timeWindow.to) - Date.parse(timeWindow.from);
  return (
    <section className="card" aria-labelledby="usage-title">
      <div className="section-header">
        <h2 id="usage-title">Usage</h2>
        <div className="inline-select">
          <SelectField
            label="Time range"
            name="range"
            options={TIME_RANGES.map(({ value, label }) => ({ value, label }))}
            value={range}
            onChange={(event) => setRange(event.target.value as TimeRangeValue)}
          />
        </div>
      </div>
      <QueryView query={series} loadingLabel="Loading usage…">
        {(data) => {
          const points = (data.models.find((entry) => entry.model === name)?.points ?? []).map((point) => ({ ...point, t: Date.parse(String(point.at)) }));
          if (!points.some((point) => point.requestsPerSec !== null)) {
            return (
              <EmptyState title="No usage samples in this range yet">
                <p>The control plane samples the gateway's counters (every 15 s unless `operon serve --usage-sample-secs` says otherwise) while the model is loaded.</p>
              </EmptyState>
            );
          }
          return (
            <div className="chart-grid">
              <UsageLineChart title="Requests per second" points={points} lines={RATE_LINES} spanMs={spanMs} unit="/s" />
              <UsageLineChart title="Latency (ms)" points={points} lines={LATENCY_LINES} spanMs={spanMs} unit=" ms" />
            </div>
          );
        }}
      </QueryView>
    </section>
  );
}
