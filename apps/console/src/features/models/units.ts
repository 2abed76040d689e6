/**
 * Number formats the models, workers and hardware pages share (sizes, times,
 * counts). Kept here rather than in lib/format.ts, which another area owns.
 */
const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number | null | undefined, empty = "—"): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return empty;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(value >= 100 ? 0 : 1)} ${BYTE_UNITS[unit]}`;
}

export function formatCount(value: number | null | undefined, empty = "—"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return empty;
  return value.toLocaleString();
}

/** Milliseconds with a precision that suits their size (0.042 ms, 3.1 ms, 120 ms). */
export function formatMs(value: number | null | undefined, empty = "—"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return empty;
  const digits = value < 1 ? 3 : value < 100 ? 1 : 0;
  return `${value.toFixed(digits)} ms`;
}

export function formatSeconds(value: number | null | undefined, empty = "—"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return empty;
  return `${value.toFixed(value < 10 ? 2 : 1)} s`;
}

export function formatPercent(share: number | null | undefined, empty = "—"): string {
  if (share === null || share === undefined || !Number.isFinite(share)) return empty;
  const percent = share * 100;
  return `${percent.toFixed(percent < 10 ? 1 : 0)} %`;
}

/** The first characters of a hash, enough to tell versions apart. */
export function shortHash(sha256: string | null | undefined, length = 12): string {
  return sha256 ? sha256.slice(0, length) : "—";
}

/** Three significant digits for small shares (0.000123), two decimals otherwise. */
export function formatSmall(value: number | null | undefined, empty = "—"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return empty;
  if (value === 0) return "0";
  return Math.abs(value) < 1 ? String(Number(value.toPrecision(3))) : value.toFixed(2);
}

/** A span of hours in the unit that reads best: "40 s", "12 min", "3.5 h". */
export function formatHours(hours: number | null | undefined, empty = "—"): string {
  if (hours === null || hours === undefined || !Number.isFinite(hours)) return empty;
  const seconds = hours * 3600;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${(seconds / 60).toFixed(seconds < 600 ? 1 : 0)} min`;
  return `${hours.toFixed(hours < 10 ? 1 : 0)} h`;
}
