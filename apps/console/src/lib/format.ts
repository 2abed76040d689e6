/** Dates cross the API as ISO strings (no transformer); show them in the reader's locale. */
export function formatDateTime(value: string | Date | null | undefined, empty = "—"): string {
  if (value === null || value === undefined) return empty;
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** The day only, where the time of day does not matter (creation, expiry). */
export function formatDate(value: string | Date | null | undefined, empty = "—"): string {
  if (value === null || value === undefined) return empty;
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleDateString(undefined, { dateStyle: "medium" });
}

/** The first characters of a hash, enough to tell versions apart. */
export function shortHash(sha256: string | null | undefined, length = 12): string {
  return sha256 ? sha256.slice(0, length) : "—";
}
