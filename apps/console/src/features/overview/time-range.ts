/** The ranges the overview offers; the charts cover [now − range, now). */
export const TIME_RANGES = [
  { id: "15m", label: "15 min", ms: 15 * 60_000 },
  { id: "1h", label: "1 h", ms: 3_600_000 },
  { id: "6h", label: "6 h", ms: 6 * 3_600_000 },
  { id: "24h", label: "24 h", ms: 24 * 3_600_000 },
  { id: "7d", label: "7 days", ms: 7 * 24 * 3_600_000 },
] as const;

export type TimeRangeId = (typeof TIME_RANGES)[number]["id"];

export const DEFAULT_RANGE: TimeRangeId = "15m";

export function timeRange(id: TimeRangeId): (typeof TIME_RANGES)[number] {
  return TIME_RANGES.find((range) => range.id === id) ?? TIME_RANGES[0];
}

/** The API's input for the range ending now (ISO strings, as the router coerces them). */
export function windowEndingNow(id: TimeRangeId, now = Date.now()): { from: string; to: string } {
  return { from: new Date(now - timeRange(id).ms).toISOString(), to: new Date(now).toISOString() };
}
