"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { TIME_RANGE_OPTIONS, useTimeWindow, type TimeRangeId } from "@/features/charts/time-range";
import { TimeSeriesChart } from "@/features/charts/time-series-chart";
import { formatInteger, formatNumber, formatPercent } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { tenantChartRows, tenantChartSeries, tenantUseRows } from "./tenant-usage-rows";

type TenantUseRow = ReturnType<typeof tenantUseRows>[number];

const TENANT_USE_COLUMNS: DataColumn<TenantUseRow>[] = [
  {
    id: "tenant",
    header: "Tenant",
    rowHeader: true,
    sortValue: (row) => row.name,
    cell: (row) => <TruncatedText text={row.name} />,
  },
  {
    id: "share",
    header: "Share",
    numeric: true,
    sortValue: (row) => row.shareOfServed,
    cell: (row) => formatPercent(row.shareOfServed),
  },
  { id: "use", header: "Use", numeric: true, sortValue: (row) => row.use, cell: (row) => formatPercent(row.use) },
  {
    id: "units",
    header: "Units",
    numeric: true,
    sortValue: (row) => row.units,
    cell: (row) => formatNumber(row.units),
  },
  {
    id: "requests",
    header: "Requests",
    numeric: true,
    sortValue: (row) => row.requests,
    cell: (row) => formatInteger(row.requests),
  },
  {
    id: "throttled",
    header: "Refused (429)",
    numeric: true,
    sortValue: (row) => row.throttled,
    cell: (row) => formatInteger(row.throttled),
  },
];

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
              <DataTable
                label="Use against share"
                caption="Each tenant's use against its share in this range"
                columns={TENANT_USE_COLUMNS}
                rows={rows}
                rowKey={(row) => row.id}
              />
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
