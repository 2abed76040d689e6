/**
 * The console's one way of writing numbers, on every page, table, tile and
 * chart: units always named, digits fitted to the size of the value, the
 * reader's locale for separators, "—" for a value that is unknown.
 */
export const EMPTY = "—";

function known(value: number | null | undefined): value is number {
  return value !== null && value !== undefined && Number.isFinite(value);
}

/** Up to `maximumFractionDigits` decimals below 10, one below 100, none above ("3.14", "31.4", "314"). */
export function formatNumber(value: number | null | undefined, maximumFractionDigits = 2): string {
  if (!known(value)) return EMPTY;
  const digits =
    Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? Math.min(1, maximumFractionDigits) : maximumFractionDigits;
  return value.toLocaleString(undefined, { maximumFractionDigits: digits });
}

/** Counts: whole numbers with separators ("12,345"). */
export function formatInteger(value: number | null | undefined): string {
  if (!known(value)) return EMPTY;
  return Math.round(value).toLocaleString();
}

/** A count with its noun, singular for exactly one ("1 inference", "0 inferences", "1,200 inferences"). */
export function formatCount(value: number | null | undefined, singular: string, plural = `${singular}s`): string {
  if (!known(value)) return `${EMPTY} ${plural}`;
  const rounded = Math.round(value);
  return `${rounded.toLocaleString()} ${rounded === 1 ? singular : plural}`;
}

/**
 * Latencies: the console's one unit for them is the millisecond, on every page (the Overview, a model's page, perf
 * reports and their comparison, config searches, Try it, step timings), so the same latency reads the same
 * everywhere (issue 27 item 10). The API measures in µs (formatLatencyUs) or ms (formatMs).
 *
 * The number alone, for a column or axis whose label names "(ms)": below 1 ms with up to three decimals, so
 * sub-millisecond latencies stay apart ("0.042", "3.14", "120").
 */
export function formatLatencyValue(ms: number | null | undefined): string {
  if (!known(ms)) return EMPTY;
  return Math.abs(ms) < 1 ? ms.toLocaleString(undefined, { maximumFractionDigits: 3 }) : formatNumber(ms);
}

/** A latency in milliseconds, with its unit ("0.042 ms", "3.14 ms"). */
export function formatMs(value: number | null | undefined): string {
  return known(value) ? `${formatLatencyValue(value)} ms` : EMPTY;
}

/** A latency the API gives in microseconds, written as every latency is (formatMs). */
export function formatLatencyUs(us: number | null | undefined): string {
  return formatMs(usToMs(us));
}

/** Microseconds as milliseconds (the API measures latency in µs; people read ms). */
export function usToMs(value: number | null | undefined): number | null {
  return value === null || value === undefined ? null : value / 1000;
}

export function formatSeconds(value: number | null | undefined): string {
  return known(value) ? `${formatNumber(value)} s` : EMPTY;
}

/** A 0..1 share as a percentage, with two decimals below 1 % ("0.04 %", "12.3 %"). */
export function formatPercent(share: number | null | undefined, digits?: number): string {
  if (!known(share)) return EMPTY;
  const percent = share * 100;
  const fraction = digits ?? (percent !== 0 && Math.abs(percent) < 1 ? 2 : 1);
  return `${percent.toLocaleString(undefined, { maximumFractionDigits: fraction })} %`;
}

const BYTE_UNITS = [
  { unit: "GiB", size: 1024 ** 3 },
  { unit: "MiB", size: 1024 ** 2 },
  { unit: "KiB", size: 1024 },
] as const;

/** The binary unit that keeps `maxBytes` readable (also one unit for a whole chart axis). */
export function byteUnitFor(maxBytes: number): { unit: string; size: number } {
  return BYTE_UNITS.find((entry) => Math.abs(maxBytes) >= entry.size) ?? { unit: "B", size: 1 };
}

/** Sizes in binary units with one decimal at most ("8 GiB", "1.5 GiB", "158 MiB", "512 B"). */
export function formatBytes(value: number | null | undefined): string {
  if (!known(value)) return EMPTY;
  const { unit, size } = byteUnitFor(value);
  return `${formatNumber(value / size, 1)} ${unit}`;
}

/** Small quantities with three significant digits ("0.000123"), others as formatNumber. */
export function formatSmall(value: number | null | undefined): string {
  if (!known(value)) return EMPTY;
  if (value !== 0 && Math.abs(value) < 1) return value.toLocaleString(undefined, { maximumSignificantDigits: 3 });
  return formatNumber(value);
}

/**
 * A cost in its currency, always at the currency's own precision (cents for USD, none for JPY), so every amount on
 * every page reads alike; an amount above 0 but below the smallest unit is "< $0.01", never "$0.00". Prices per
 * inference are shown per million inferences (perMillionInferences), which keeps them above a cent. `empty` is
 * written for an unknown value.
 */
export function formatMoney(value: number | null | undefined, currency: string, empty = EMPTY): string {
  if (!known(value)) return empty;
  let format: Intl.NumberFormat;
  try {
    format = new Intl.NumberFormat(undefined, { style: "currency", currency });
  } catch {
    // An ISO code Intl does not know: the number (two decimals) and the code.
    if (value !== 0 && Math.abs(value) < 0.005) return `< ${value < 0 ? "-" : ""}0.01 ${currency}`;
    return `${value.toFixed(2)} ${currency}`;
  }
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  const smallest = 10 ** -digits;
  if (value !== 0 && Math.abs(value) < smallest / 2) return `< ${format.format(value < 0 ? -smallest : smallest)}`;
  return format.format(value);
}

/** The API's cost per 1,000 inferences as the console shows it: per million inferences (as model APIs price). */
export function perMillionInferences(costPer1000: number | null | undefined): number | null {
  return known(costPer1000) ? costPer1000 * 1000 : null;
}

/** A length of time given in hours, in the unit that reads best ("18 s", "4.5 min", "2.3 h"). */
export function formatHours(hours: number | null | undefined): string {
  if (!known(hours)) return EMPTY;
  const seconds = hours * 3600;
  if (seconds < 120) return `${formatNumber(seconds, 1)} s`;
  if (seconds < 7200) return `${formatNumber(seconds / 60, 1)} min`;
  return `${formatNumber(hours, 1)} h`;
}
