/**
 * How numbers read on the charts, tables and tiles: units always named,
 * digits fitted to the size of the value.
 */
const EMPTY = "—";

export function formatNumber(value: number | null | undefined, maximumFractionDigits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return EMPTY;
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? Math.min(1, maximumFractionDigits) : maximumFractionDigits;
  return value.toLocaleString(undefined, { maximumFractionDigits: digits });
}

const COMPACT = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/** Axis ticks: short ("1.4K"), so they leave room for the axis label. */
export function formatTick(value: number): string {
  return Math.abs(value) >= 1000 ? COMPACT.format(value) : formatNumber(value);
}

export function formatInteger(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return EMPTY;
  return Math.round(value).toLocaleString();
}

export function formatMs(value: number | null | undefined): string {
  return value === null || value === undefined ? EMPTY : `${formatNumber(value)} ms`;
}

/** Microseconds as milliseconds (the API measures latency in µs; people read ms). */
export function usToMs(value: number | null | undefined): number | null {
  return value === null || value === undefined ? null : value / 1000;
}

/** A 0..1 share as a percentage. */
export function formatPercent(share: number | null | undefined, digits?: number): string {
  if (share === null || share === undefined || !Number.isFinite(share)) return EMPTY;
  const percent = share * 100;
  const fraction = digits ?? (percent !== 0 && Math.abs(percent) < 1 ? 2 : 1);
  return `${percent.toLocaleString(undefined, { maximumFractionDigits: fraction })} %`;
}

const BYTE_UNITS = [
  { unit: "GiB", size: 1024 ** 3 },
  { unit: "MiB", size: 1024 ** 2 },
  { unit: "KiB", size: 1024 },
] as const;

/** The unit that keeps `maxBytes` readable, for a whole chart axis. */
export function byteUnitFor(maxBytes: number): { unit: string; size: number } {
  return BYTE_UNITS.find((entry) => maxBytes >= entry.size) ?? { unit: "B", size: 1 };
}

export function formatBytes(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return EMPTY;
  const { unit, size } = byteUnitFor(value);
  return `${formatNumber(value / size)} ${unit}`;
}

export function formatMoney(value: number | null | undefined, currency: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return EMPTY;
  const digits = Math.abs(value) >= 1 ? 2 : 6;
  try {
    return value.toLocaleString(undefined, { style: "currency", currency, maximumFractionDigits: digits });
  } catch {
    return `${formatNumber(value, digits)} ${currency}`;
  }
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

/** A length of time given in hours, in the unit that reads best ("18 s", "4.5 min", "2.3 h"). */
export function formatHours(hours: number): string {
  const seconds = hours * 3600;
  if (seconds < 120) return `${formatNumber(seconds, 1)} s`;
  if (seconds < 7200) return `${formatNumber(seconds / 60, 1)} min`;
  return `${formatNumber(hours, 1)} h`;
}
