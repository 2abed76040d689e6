"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { TableScroller } from "@/components/table-scroller";
import { TIME_RANGE_OPTIONS, useTimeWindow, type TimeRangeId } from "@/features/charts/time-range";
import { TimeSeriesChart } from "@/features/charts/time-series-chart";
import { formatInteger, formatNumber, formatPercent } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { tenantChartRows, tenantChartSeries, tenantUseRows } from "./tenant-usage-rows";

/** Each tenant's use of the units served against its share, over a chosen range. */
export function TenantUsageSection() {
  const trpc = useTRPC();
  const [range, setRange] = useState<TimeRangeId>("15m");
  const timeWindow = useTimeWindow(range, 10_000);
  const usage = useQuery({ ...trpc.tenants.usage.queryOptions(timeWindow), placeholderData: keepPreviousData });
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const nameOf = (id: string) => tenants.data?.find((tenant) => tenant.id === id)?.name ?? id;
  return (
    <section className="card" aria-labelledby="tenant-usage-title">
      <div className="section-header">
        <h2 id="tenant-usage-title">Use against share</h2>
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
      <QueryView query={usage} loadingLabel="Loading tenant usage…">
        {(data) => {
          const rows = tenantUseRows(data, nameOf);
          if (rows.length === 0) {
            return (
              <EmptyState title="No tenant usage in this range yet">
                <p>
                  The control plane samples the gateway's tenant counters (every 15 s unless{" "}
                  <code>operon serve --usage-sample-secs</code> says otherwise) while at least one tenant exists.
                </p>
              </EmptyState>
            );
          }
          const domain: [number, number] = [new Date(data.from).getTime(), new Date(data.to).getTime()];
          return (
            <>
              <TableScroller label="Use against share">
                <table className="stack-table">
                  <caption className="visually-hidden">Each tenant's use against its share in this range</caption>
                  <thead>
                    <tr>
                      <th scope="col">Tenant</th>
                      <th scope="col">Share</th>
                      <th scope="col">Use</th>
                      <th scope="col">Units</th>
                      <th scope="col">Requests</th>
                      <th scope="col">Refused (429)</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((row) => (
                      <tr key={row.id}>
                        <th scope="row">{row.name}</th>
                        <td data-label="Share">{formatPercent(row.shareOfServed)}</td>
                        <td data-label="Use">{formatPercent(row.use)}</td>
                        <td data-label="Units">{formatNumber(row.units)}</td>
                        <td data-label="Requests">{formatInteger(row.requests)}</td>
                        <td data-label="Refused (429)">{formatInteger(row.throttled)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroller>
              <TimeSeriesChart
                title="Use of the units served, per tenant"
                yLabel="use (%)"
                rows={tenantChartRows(
                  data,
                  rows.map((row) => row.id),
                )}
                series={tenantChartSeries(rows)}
                domain={domain}
                formatValue={(value) => formatPercent(value)}
                formatAxis={(value) => `${Math.round(value * 100)}`}
                note="Share is the tenant's part of the shares of the tenants served in the range; use is its part of the normalized units served (batch items × compute ms per inference). Under contention use follows share; an idle model serves anyone."
              />
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
