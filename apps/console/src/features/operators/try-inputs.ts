/**
 * Example request tensors for an operator, from its declared inputs: KServe
 * v2 JSON tensors with a batch of 1 when the operator batches, every -1
 * dimension as 1, and simple values (0, 1, 2, … for numbers).
 */
const MAX_ELEMENTS = 4096;

export interface InputTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

export function exampleInputs(spec: Record<string, unknown>): InputTensor[] {
  const batched = typeof spec["maxBatchSize"] === "number" && spec["maxBatchSize"] > 0;
  const inputs = Array.isArray(spec["inputs"]) ? spec["inputs"] : [];
  return inputs.flatMap((raw: unknown): InputTensor[] => {
    if (typeof raw !== "object" || raw === null) return [];
    const { name, datatype, dims, optional } = raw as Record<string, unknown>;
    if (typeof name !== "string" || typeof datatype !== "string" || optional === true) return [];
    const declared = Array.isArray(dims) ? dims.filter((dim): dim is number => typeof dim === "number") : [];
    const shape = (batched ? [1, ...declared] : declared).map((dim) => (dim < 0 ? 1 : dim));
    const count = Math.min(MAX_ELEMENTS, shape.reduce((product, dim) => product * dim, 1));
    return [{ name, datatype, shape, data: Array.from({ length: count }, (_, index) => exampleValue(datatype, index)) }];
  });
}

function exampleValue(datatype: string, index: number): unknown {
  if (datatype === "BOOL") return index % 2 === 1;
  if (datatype === "BYTES") return `text ${index}`;
  return index;
}

/** One tensor per line: readable, and short enough to edit. */
export function inputsText(inputs: readonly InputTensor[]): string {
  return `[\n${inputs.map((input) => `  ${JSON.stringify(input)}`).join(",\n")}\n]`;
}

export type ParsedInputs = { ok: true; inputs: InputTensor[] } | { ok: false; message: string };

export function parseInputsText(text: string): ParsedInputs {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (!Array.isArray(value) || value.length === 0) return { ok: false, message: "Give a JSON array of input tensors { name, datatype, shape, data }." };
  return { ok: true, inputs: value as InputTensor[] };
}

export type ParsedParameters = { ok: true; parameters: Record<string, string | number | boolean> | undefined } | { ok: false; message: string };

export function parseParametersText(text: string): ParsedParameters {
  if (text.trim() === "") return { ok: true, parameters: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.values(value).every((entry) => ["string", "number", "boolean"].includes(typeof entry))) {
    return { ok: false, message: "Give a JSON object of names to strings, numbers or booleans." };
  }
  return { ok: true, parameters: value as Record<string, string | number | boolean> };
}
