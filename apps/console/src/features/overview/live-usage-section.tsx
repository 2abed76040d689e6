"use client";

import type { UseQueryResult } from "@tanstack/react-query";
import { QueryView } from "@/components/states/query-view";
import { LiveModelsTable } from "./live-models-table";
import type { CurrentUsage } from "./overview-types";
import { UsageTiles } from "./usage-tiles";
import { usageTotals } from "./usage-totals";

/** Live numbers from the gateway (metrics.current): totals, then one row per model version. */
export function LiveUsageSection({ query }: { query: UseQueryResult<CurrentUsage, unknown> }) {
  return (
    <section className="card" aria-labelledby="live-title">
      <h2 id="live-title">Live</h2>
      <QueryView
        query={query}
        loadingLabel="Reading the gateway's numbers…"
        isEmpty={(usage) => usage.models.length === 0}
        empty={{
          title: "No models are served",
          body: <p>Load a model (Models page, or start the server with --load-model) and its numbers appear here.</p>,
        }}
      >
        {(usage) => (
          <>
            {usage.unavailable.length > 0 ? (
              <p className="notice" role="status">
                Some live numbers are missing: {usage.unavailable.join("; ")}.
              </p>
            ) : null}
            <UsageTiles totals={usageTotals(usage.models, usage.gateway?.rssBytes ?? null)} />
            <p className="muted small">
              Requests and errors count since each version was loaded; p50 and p99 are the gateway&apos;s recent request
              latency; req/s and CPU come from the last usage sample.
            </p>
            <LiveModelsTable models={usage.models} />
          </>
        )}
      </QueryView>
    </section>
  );
}
