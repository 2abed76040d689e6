import { PerfError } from "./perf-error.js";

/**
 * perf_analyzer's `start:end:step` ranges (--concurrency-range,
 * --request-rate-range). The sweep is additive: start, start+step,
 * start+2·step, ... up to and including end when it lands on it, so
 * `1:8:2` is 1, 3, 5, 7 and `1:64:2` is 1, 3, ..., 63. `N` alone is the
 * single value N; `start:end` steps by 1.
 */
export interface LoadRange {
  start: number;
  end: number;
  step: number;
}

export type RangeKind = "integer" | "number";

/** The most values one range may expand to: a guard against `1:1000000` typos. */
export const MAX_RANGE_VALUES = 1000;

/** Parses `start[:end[:step]]`; throws PerfError BAD_OPTIONS naming the flag on a bad range. */
export function parseLoadRange(text: string, kind: RangeKind, flag = "range"): LoadRange {
  const parts = text.trim().split(":");
  if (parts.length > 3 || parts.some((part) => part.trim() === "")) {
    throw bad(flag, text, "expected start[:end[:step]]");
  }
  const [start, end, step] = parts.map((part) => parseValue(part.trim(), kind, flag, text));
  const range: LoadRange = { start: start!, end: end ?? start!, step: step ?? 1 };
  return validateLoadRange(range, kind, flag, text);
}

export function validateLoadRange(
  range: LoadRange,
  kind: RangeKind,
  flag = "range",
  text = formatLoadRange(range),
): LoadRange {
  const { start, end, step } = range;
  for (const value of [start, end, step]) {
    if (!Number.isFinite(value) || (kind === "integer" && !Number.isSafeInteger(value))) {
      throw bad(flag, text, kind === "integer" ? "values must be whole numbers" : "values must be numbers");
    }
  }
  if (start <= 0) throw bad(flag, text, "start must be greater than 0");
  if (end < start) throw bad(flag, text, `end (${end}) is below start (${start})`);
  if (step <= 0) throw bad(flag, text, "step must be greater than 0");
  if (Math.floor((end - start) / step + 1e-9) + 1 > MAX_RANGE_VALUES) {
    throw bad(flag, text, `it expands to more than ${MAX_RANGE_VALUES} steps`);
  }
  return range;
}

/** The values of a range, ascending. Float steps are summed without drift (start + i·step, rounded to 1e-9). */
export function expandLoadRange(range: LoadRange): number[] {
  const values: number[] = [];
  for (let i = 0; ; i += 1) {
    const value = Math.round((range.start + i * range.step) * 1e9) / 1e9;
    if (value > range.end + 1e-9 || values.length >= MAX_RANGE_VALUES) break;
    values.push(value);
  }
  return values;
}

export function formatLoadRange(range: LoadRange): string {
  return `${range.start}:${range.end}:${range.step}`;
}

function parseValue(part: string, kind: RangeKind, flag: string, text: string): number {
  const pattern = kind === "integer" ? /^[0-9]+$/ : /^[0-9]+(\.[0-9]+)?$|^\.[0-9]+$/;
  if (!pattern.test(part)) {
    throw bad(flag, text, `'${part}' is not a ${kind === "integer" ? "positive whole number" : "positive number"}`);
  }
  return Number(part);
}

function bad(flag: string, text: string, problem: string): PerfError {
  return new PerfError("BAD_OPTIONS", `${flag} '${text}': ${problem}`);
}
