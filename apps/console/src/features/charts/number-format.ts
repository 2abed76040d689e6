import { formatNumber } from "@/lib/number-format";

/** What only charts need: short axis ticks, clock times, tidy axis tops. Other numbers: @/lib/number-format. */

const COMPACT = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/** Axis ticks: short ("1.4K"), so they leave room for the axis label. */
export function formatTick(value: number): string {
  return Math.abs(value) >= 1000 ? COMPACT.format(value) : formatNumber(value);
}

/** hh:mm:ss in 24-hour form, for "updated at" and short time axes. */
export function formatClock(value: number | Date): string {
  return new Date(value).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/** A time-axis tick: the clock for ranges within a day, the date and hour beyond. */
export function formatTimeTick(value: number, rangeMs: number): string {
  const date = new Date(value);
  if (rangeMs <= 36 * 3_600_000) return date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
  return date.toLocaleDateString(undefined, { month: "short", day: "numeric" }) + " " + date.toLocaleTimeString(undefined, { hour: "2-digit", hour12: false });
}

/** The next "round" number at or above `value` (1, 2, 2.5, 5 × 10^n): a tidy top for an axis. */
export function niceCeil(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((factor) => factor * magnitude >= value * (1 - 1e-9)) ?? 10;
  return step * magnitude;
}
