"use client";

import { formatClock } from "@/features/charts/number-format";
import { REFRESH_INTERVAL_MS } from "./use-overview-data";

/** When the numbers were read, whether they refresh by themselves, and a way to refresh now. */
export function RefreshStatus({
  updatedAt,
  fetching,
  autoRefresh,
  onAutoRefreshChange,
  onRefresh,
}: {
  updatedAt: number;
  fetching: boolean;
  autoRefresh: boolean;
  onAutoRefreshChange: (on: boolean) => void;
  onRefresh: () => void;
}) {
  return (
    <div className="refresh-status">
      <p className="refresh-updated">
        {updatedAt > 0 ? (
          <>
            Updated <time dateTime={new Date(updatedAt).toISOString()}>{formatClock(updatedAt)}</time>
          </>
        ) : (
          "Not loaded yet"
        )}
        {fetching ? <span className="muted"> · refreshing…</span> : null}
      </p>
      <label className="checkbox">
        <input
          type="checkbox"
          checked={autoRefresh}
          onChange={(event) => onAutoRefreshChange(event.currentTarget.checked)}
        />
        <span>Refresh every {REFRESH_INTERVAL_MS / 1000} s</span>
      </label>
      <button type="button" className="button" onClick={onRefresh} disabled={fetching}>
        Refresh now
      </button>
    </div>
  );
}
