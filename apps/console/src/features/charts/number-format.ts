// Relative, not "@/": the unit tests beside it run without the console's path alias.
import { formatNumber, formatPercent } from "../../lib/number-format";

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

/**
 * A time-axis tick: the clock (hh:mm) for ranges within a day, the date and the clock beyond. Never the hour alone:
 * "Dec 2 14" read as a day and a number, not as 14:00 (issue 27 item 10).
 */
export function formatTimeTick(value: number, rangeMs: number): string {
  const date = new Date(value);
  const clock = date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
  if (rangeMs <= 36 * 3_600_000) return clock;
  return `${date.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${clock}`;
}

/**
 * A percent axis tick (shares, 0.01 = 1 %) with the fewest decimals that write every tick of the axis exactly, so
 * a small error rate's axis reads 0 %, 0.002 %, 0.004 % rather than "0 %" at every tick.
 */
export function formatPercentTick(share: number, ticks: readonly number[]): string {
  return formatPercent(share, exactDigits(ticks.map((tick) => tick * 100)));
}

/**
 * An axis tick as a plain number (the unit is in the axis label) with the fewest decimals that write every tick of
 * the axis exactly: a cost axis reads 0, 0.002, 0.004 (USD), never "$0.00" or "< $0.01" at each tick.
 */
export function formatExactTick(value: number, ticks: readonly number[]): string {
  return value.toLocaleString(undefined, { maximumFractionDigits: exactDigits(ticks) });
}

/** The fewest decimals (up to 8) that write each value exactly. */
function exactDigits(values: readonly number[]): number {
  let digits = 0;
  const exact = (value: number) => {
    const scaled = value * 10 ** digits;
    return Math.abs(scaled - Math.round(scaled)) < 1e-6;
  };
  while (digits < 8 && !values.every(exact)) digits += 1;
  return digits;
}
