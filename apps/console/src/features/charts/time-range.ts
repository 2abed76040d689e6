import { useEffect, useState } from "react";

/**
 * The ranges every chart and cost report offers; a range covers
 * [now − ms, now). `label` is short, for the overview's segmented control and
 * its "Usage over the last …" heading; `longLabel` is for a select.
 */
export const TIME_RANGES = [
  { id: "15m", label: "15 min", longLabel: "Last 15 minutes", ms: 15 * 60_000 },
  { id: "1h", label: "1 h", longLabel: "Last hour", ms: 3_600_000 },
  { id: "6h", label: "6 h", longLabel: "Last 6 hours", ms: 6 * 3_600_000 },
  { id: "24h", label: "24 h", longLabel: "Last 24 hours", ms: 24 * 3_600_000 },
  { id: "7d", label: "7 days", longLabel: "Last 7 days", ms: 7 * 24 * 3_600_000 },
  { id: "30d", label: "30 days", longLabel: "Last 30 days", ms: 30 * 24 * 3_600_000 },
] as const;

export type TimeRangeId = (typeof TIME_RANGES)[number]["id"];

/** The ranges as SelectField options. */
export const TIME_RANGE_OPTIONS = TIME_RANGES.map(({ id, longLabel }) => ({ value: id, label: longLabel }));

export function timeRange(id: TimeRangeId): (typeof TIME_RANGES)[number] {
  return TIME_RANGES.find((range) => range.id === id) ?? TIME_RANGES[0];
}

/** The API's input for the range ending at `now` (ISO strings, as the router coerces them). */
export function windowEndingNow(id: TimeRangeId, now = Date.now()): { from: string; to: string } {
  return { from: new Date(now - timeRange(id).ms).toISOString(), to: new Date(now).toISOString() };
}

/**
 * The window ending now, for a query key. "Now" moves in steps of `stepMs`
 * (rounded up), so the key stays put between steps and the data is asked for
 * again once per step.
 */
export function useTimeWindow(id: TimeRangeId, stepMs: number): { from: string; to: string } {
  const [end, setEnd] = useState(() => roundUp(stepMs));
  useEffect(() => {
    const timer = setInterval(() => setEnd(roundUp(stepMs)), stepMs);
    return () => clearInterval(timer);
  }, [stepMs]);
  return windowEndingNow(id, end);
}

function roundUp(stepMs: number): number {
  return Math.ceil(Date.now() / stepMs) * stepMs;
}
