"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { windowEndingNow, type TimeRangeId } from "@/features/charts/time-range";
import { useTRPC, useTRPCClient } from "@/lib/trpc";

/** How often the overview asks again while automatic refresh is on. */
export const REFRESH_INTERVAL_MS = 10_000;

/**
 * The overview's three queries. The charts' window ends "now" at each fetch,
 * so the range is computed in the query function (react-query refetches it
 * on its interval) rather than frozen in the query key.
 */
export function useOverviewData(range: TimeRangeId, autoRefresh: boolean) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const refetchInterval = autoRefresh ? REFRESH_INTERVAL_MS : false;
  const current = useQuery({ ...trpc.metrics.current.queryOptions(), refetchInterval });
  const series = useQuery({
    queryKey: ["overview", "timeSeries", range],
    queryFn: ({ signal }) => client.metrics.timeSeries.query(windowEndingNow(range), { signal }),
    refetchInterval,
    placeholderData: keepPreviousData,
  });
  const costs = useQuery({
    queryKey: ["overview", "costs", range],
    queryFn: ({ signal }) => client.metrics.costs.query(windowEndingNow(range), { signal }),
    refetchInterval,
    placeholderData: keepPreviousData,
  });
  const updatedAt = Math.max(current.dataUpdatedAt, series.dataUpdatedAt, costs.dataUpdatedAt);
  return {
    current,
    series,
    costs,
    /** When the newest answer arrived (epoch ms); 0 before any. */
    updatedAt,
    isFetching: current.isFetching || series.isFetching || costs.isFetching,
    refreshNow: () => Promise.all([current.refetch(), series.refetch(), costs.refetch()]),
  };
}

export type OverviewData = ReturnType<typeof useOverviewData>;
