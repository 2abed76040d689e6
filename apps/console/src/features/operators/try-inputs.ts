import type { DeclaredInput } from "../try-it/try-it-form";

/**
 * The request inputs an operator declares, for its try-it form: the required
 * ones, with the batch dimension (any size) first when the operator batches.
 */
export function declaredInputs(spec: Record<string, unknown>): DeclaredInput[] {
  const batched = typeof spec["maxBatchSize"] === "number" && spec["maxBatchSize"] > 0;
  const inputs = Array.isArray(spec["inputs"]) ? spec["inputs"] : [];
  return inputs.flatMap((raw: unknown): DeclaredInput[] => {
    if (typeof raw !== "object" || raw === null) return [];
    const { name, datatype, dims, optional } = raw as Record<string, unknown>;
    if (typeof name !== "string" || typeof datatype !== "string" || optional === true) return [];
    const declared = Array.isArray(dims) ? dims.filter((dim): dim is number => typeof dim === "number") : [];
    return [{ name, datatype, shape: batched ? [-1, ...declared] : declared }];
  });
}

export type ParsedParameters =
  | { ok: true; parameters: Record<string, string | number | boolean> | undefined }
  | { ok: false; message: string };

export function parseParametersText(text: string): ParsedParameters {
  if (text.trim() === "") return { ok: true, parameters: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (
    typeof value !== "object" ||
    value === null ||
    Array.isArray(value) ||
    !Object.values(value).every((entry) => ["string", "number", "boolean"].includes(typeof entry))
  ) {
    return { ok: false, message: "Give a JSON object of names to strings, numbers or booleans." };
  }
  return { ok: true, parameters: value as Record<string, string | number | boolean> };
}
