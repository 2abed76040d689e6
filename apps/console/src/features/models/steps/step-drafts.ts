/**
 * The step-model form's data, kept as text the person edits (parameters,
 * tensors) and turned into the API's input on submit; pure, so it is tested
 * without a browser.
 */
export interface CatalogPort {
  name: string;
  datatypes: readonly string[];
  dims: ReadonlyArray<number | string>;
}

export interface CatalogStep {
  name: string;
  category: string;
  title: string;
  doc: string;
  inputs: CatalogPort[];
  outputs: CatalogPort[];
}

export interface StepDraft {
  /** Unique in the form (React key). */
  key: number;
  id: string;
  step: string;
  /** JSON text of the parameters object. */
  params: string;
}

export interface TensorDraft {
  name: string;
  datatype: string;
  dims: number[];
}

/** A port as a model tensor: its first datatype, letters and "..." as -1. */
export function portTensor(port: CatalogPort): TensorDraft {
  return {
    name: port.name,
    datatype: port.datatypes[0] ?? "FP32",
    dims: port.dims.map((dim) => (typeof dim === "number" ? dim : -1)),
  };
}

/** The model's tensors a pipeline suggests: the first step's first input, the last step's outputs. */
export function suggestedTensors(
  steps: StepDraft[],
  catalog: CatalogStep[],
): { inputs: TensorDraft[]; outputs: TensorDraft[] } {
  const find = (name: string | undefined) => catalog.find((entry) => entry.name === name);
  const first = find(steps[0]?.step);
  const last = find(steps.at(-1)?.step);
  return {
    inputs: first?.inputs[0] ? [portTensor(first.inputs[0])] : [],
    outputs: last ? last.outputs.map(portTensor) : [],
  };
}

export type ParsedPipeline =
  | { ok: true; pipeline: { steps: Array<{ id: string; step: string; params: Record<string, unknown> }> } }
  | { ok: false; problems: string[] };

/** The steps.json object, or the JSON problems of each step's parameters. */
export function pipelineOf(steps: StepDraft[]): ParsedPipeline {
  const problems: string[] = [];
  const parsed = steps.map((draft, index) => {
    let params: unknown;
    try {
      params = draft.params.trim() === "" ? {} : JSON.parse(draft.params);
    } catch (error) {
      problems.push(`step ${index + 1} '${draft.id}': parameters are not JSON (${(error as Error).message})`);
    }
    if (params !== undefined && (typeof params !== "object" || params === null || Array.isArray(params))) {
      problems.push(`step ${index + 1} '${draft.id}': parameters must be a JSON object`);
    }
    return { id: draft.id, step: draft.step, params: (params ?? {}) as Record<string, unknown> };
  });
  if (steps.length === 0) problems.push("add at least one step");
  return problems.length > 0 ? { ok: false, problems } : { ok: true, pipeline: { steps: parsed } };
}

/** Tensors from their JSON text: an array of { name, datatype, dims }. */
export function tensorsOf(
  text: string,
  what: string,
): { ok: true; tensors: TensorDraft[] } | { ok: false; problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `${what} are not JSON (${(error as Error).message})` };
  }
  if (!Array.isArray(value)) return { ok: false, problem: `${what} must be a JSON array of { name, datatype, dims }` };
  return { ok: true, tensors: value as TensorDraft[] };
}

/** A step id not used yet: the step's last word, numbered when taken. */
export function freshId(step: string, taken: readonly string[]): string {
  const base = step.split(".").at(-1) ?? "step";
  if (!taken.includes(base)) return base;
  for (let n = 2; ; n += 1) if (!taken.includes(`${base}${n}`)) return `${base}${n}`;
}
