"use client";

import type { UseQueryResult } from "@tanstack/react-query";
import { QueryView } from "@/components/states/query-view";
import { timeRange, type TimeRangeId } from "@/features/charts/time-range";
import type { UsageSeries } from "./overview-types";
import { hasSamples } from "./series-rows";
import { UsageCharts } from "./usage-charts";

/** The charts over the chosen range, or what to do when the sampler has stored nothing yet. */
export function UsageTrendsSection({
  query,
  range,
}: {
  query: UseQueryResult<UsageSeries, unknown>;
  range: TimeRangeId;
}) {
  return (
    <section className="card" aria-labelledby="trends-title">
      <h2 id="trends-title">Usage over the last {timeRange(range).label}</h2>
      <QueryView
        query={query}
        loadingLabel="Loading the usage charts…"
        isEmpty={(series) => !hasSamples(series)}
        empty={{
          title: "No usage samples in this range yet",
          body: (
            <p>
              The control plane samples the gateway every <code>--usage-sample-secs</code> seconds (15 by default) and
              the charts draw those samples. Send some inferences to a model, wait for the next sample, or pick a longer
              range.
            </p>
          ),
        }}
      >
        {(series) => (
          <>
            <p className="muted small">
              One point per {formatBucket(series.bucketSecs)}; a gap means no sample in that interval.
            </p>
            <UsageCharts series={series} />
          </>
        )}
      </QueryView>
    </section>
  );
}

function formatBucket(seconds: number): string {
  if (seconds % 86_400 === 0) return seconds === 86_400 ? "day" : `${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return seconds === 3600 ? "hour" : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? "minute" : `${seconds / 60} minutes`;
  return seconds === 1 ? "second" : `${seconds} seconds`;
}
