"use client";

import { useEffect, useState } from "react";

/** The ranges the charts and the cost report offer, newest data at the right. */
export const TIME_RANGES = [
  { value: "15m", label: "Last 15 minutes", ms: 15 * 60_000 },
  { value: "1h", label: "Last hour", ms: 3_600_000 },
  { value: "6h", label: "Last 6 hours", ms: 6 * 3_600_000 },
  { value: "24h", label: "Last 24 hours", ms: 24 * 3_600_000 },
  { value: "7d", label: "Last 7 days", ms: 7 * 24 * 3_600_000 },
  { value: "30d", label: "Last 30 days", ms: 30 * 24 * 3_600_000 },
] as const;

export type TimeRangeValue = (typeof TIME_RANGES)[number]["value"];

export function rangeMs(value: TimeRangeValue): number {
  return TIME_RANGES.find((range) => range.value === value)?.ms ?? 3_600_000;
}

/**
 * [from, to) ending now, as ISO strings. "Now" moves in steps of `stepMs`
 * (rounded up), so the query key stays put between steps and the data is
 * asked for again once per step.
 */
export function useTimeWindow(value: TimeRangeValue, stepMs: number): { from: string; to: string } {
  const [end, setEnd] = useState(() => roundUp(stepMs));
  useEffect(() => {
    const timer = setInterval(() => setEnd(roundUp(stepMs)), stepMs);
    return () => clearInterval(timer);
  }, [stepMs]);
  return { from: new Date(end - rangeMs(value)).toISOString(), to: new Date(end).toISOString() };
}

function roundUp(stepMs: number): number {
  return Math.ceil(Date.now() / stepMs) * stepMs;
}

export function formatClock(ms: number, spanMs: number): string {
  const date = new Date(ms);
  return spanMs > 36 * 3_600_000
    ? date.toLocaleDateString(undefined, { month: "short", day: "numeric" })
    : date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}
