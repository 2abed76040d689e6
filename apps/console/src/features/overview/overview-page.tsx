"use client";

import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import type { TimeRangeId } from "@/features/charts/time-range";
import { roleLabel } from "@/lib/roles";
import { CostsSection } from "./costs-section";
import { LiveUsageSection } from "./live-usage-section";
import { RefreshStatus } from "./refresh-status";
import { TimeRangePicker } from "./time-range-picker";
import { useOverviewData } from "./use-overview-data";
import { UsageTrendsSection } from "./usage-trends-section";

/** The home page: live numbers, usage charts and costs, refreshing by themselves. */
export function OverviewPage() {
  const user = useSignedInUser();
  const [range, setRange] = useState<TimeRangeId>("15m");
  const [autoRefresh, setAutoRefresh] = useState(true);
  const data = useOverviewData(range, autoRefresh);
  return (
    <>
      <PageHeader title="Overview">
        <p>
          Welcome, {user.name ?? user.email}. Your role is <strong>{roleLabel(user.role).toLowerCase()}</strong>. This
          overview shows what the platform serves now, how it was used and what that cost.
        </p>
      </PageHeader>
      <div className="overview-toolbar">
        <TimeRangePicker value={range} onChange={setRange} />
        <RefreshStatus
          updatedAt={data.updatedAt}
          fetching={data.isFetching}
          autoRefresh={autoRefresh}
          onAutoRefreshChange={setAutoRefresh}
          onRefresh={() => void data.refreshNow()}
        />
      </div>
      <LiveUsageSection query={data.current} />
      <UsageTrendsSection query={data.series} range={range} />
      <CostsSection query={data.costs} />
    </>
  );
}
