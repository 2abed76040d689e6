/** Parsers for the config form's text fields: the value, or what is wrong with the text. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** "16" or "-1, 3, 224, 224" (commas or spaces); empty is a scalar ([]). */
export function parseDims(text: string): Parsed<number[]> {
  const parts = text.split(/[\s,]+/).filter((part) => part !== "");
  const dims = parts.map(Number);
  if (dims.some((dim) => !Number.isInteger(dim)))
    return { ok: false, message: "whole numbers separated by commas, e.g. 3, 224, 224 (-1 for a dynamic size)" };
  return { ok: true, value: dims };
}

export function formatDims(dims: readonly number[] | undefined): string {
  return (dims ?? []).join(", ");
}

/** A whole number; empty gives undefined (the API's default applies) when `optional`. */
export function parseWholeNumber(text: string, optional: boolean): Parsed<number | undefined> {
  const trimmed = text.trim();
  if (trimmed === "") return optional ? { ok: true, value: undefined } : { ok: false, message: "required" };
  const value = Number(trimmed);
  if (!Number.isInteger(value)) return { ok: false, message: "a whole number" };
  return { ok: true, value };
}

export function formatOptionalNumber(value: number | undefined): string {
  return value === undefined ? "" : String(value);
}
