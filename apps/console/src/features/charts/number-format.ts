import { formatNumber } from "@/lib/number-format";

/** What only charts need: short axis ticks, clock times, tidy axis tops. Other numbers: @/lib/number-format. */

const COMPACT = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/** Axis ticks: short ("1.4K"), so they leave room for the axis label. */
export function formatTick(value: number): string {
  return Math.abs(value) >= 1000 ? COMPACT.format(value) : formatNumber(value);
}

/** hh:mm:ss in 24-hour form, for "updated at" and short time axes. */
export function formatClock(value: number | Date): string {
  return new Date(value).toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hour12: false,
  });
}

/** A time-axis tick: the clock for ranges within a day, the date and hour beyond. */
export function formatTimeTick(value: number, rangeMs: number): string {
  const date = new Date(value);
  if (rangeMs <= 36 * 3_600_000)
    return date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
  return (
    date.toLocaleDateString(undefined, { month: "short", day: "numeric" }) +
    " " +
    date.toLocaleTimeString(undefined, { hour: "2-digit", hour12: false })
  );
}
