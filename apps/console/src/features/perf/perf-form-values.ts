import type { FieldProblem } from "@/lib/api-problem";
import type { PerfStartInput } from "./perf-types";

export type ParsedPerfForm = { ok: true; input: PerfStartInput } | { ok: false; fieldErrors: FieldProblem[] };

/**
 * Reads the new-run form. The target select's value is "MODEL:name" or
 * "OPERATOR:name"; the measurement interval is typed in seconds and sent
 * in milliseconds.
 */
export function parsePerfForm(form: FormData): ParsedPerfForm {
  const fieldErrors: FieldProblem[] = [];
  const target = String(form.get("target") ?? "");
  const separator = target.indexOf(":");
  const kind = target.slice(0, separator);
  const name = target.slice(separator + 1);
  if (separator < 0 || (kind !== "MODEL" && kind !== "OPERATOR") || name === "")
    fieldErrors.push({ path: "target.name", message: "choose a model or operator" });
  const start = wholeNumber(form.get("concurrencyStart"), "concurrency.start", 1, fieldErrors);
  const end = wholeNumber(form.get("concurrencyEnd"), "concurrency.end", 1, fieldErrors);
  const step = wholeNumber(form.get("concurrencyStep"), "concurrency.step", 1, fieldErrors);
  const batchSize = wholeNumber(form.get("batchSize"), "batchSize", 1, fieldErrors);
  const intervalSecs = Number(String(form.get("measurementIntervalSecs") ?? "").trim());
  if (!Number.isFinite(intervalSecs) || intervalSecs < 0.1 || intervalSecs > 600)
    fieldErrors.push({ path: "measurementIntervalMs", message: "between 0.1 and 600 seconds" });
  if (start !== undefined && end !== undefined && end < start)
    fieldErrors.push({ path: "concurrency.end", message: "must be at least the start" });
  if (
    fieldErrors.length > 0 ||
    start === undefined ||
    end === undefined ||
    step === undefined ||
    batchSize === undefined
  )
    return { ok: false, fieldErrors };
  return {
    ok: true,
    input: {
      target: { kind: kind as "MODEL" | "OPERATOR", name },
      concurrency: { start, end, step },
      batchSize,
      measurementIntervalMs: Math.round(intervalSecs * 1000),
    },
  };
}

function wholeNumber(
  raw: FormDataEntryValue | null,
  path: string,
  min: number,
  errors: FieldProblem[],
): number | undefined {
  const value = Number(String(raw ?? "").trim());
  if (String(raw ?? "").trim() === "" || !Number.isInteger(value) || value < min) {
    errors.push({ path, message: `a whole number, ${min} or more` });
    return undefined;
  }
  return value;
}
