import type { Completion, CompletionContext, CompletionResult, CompletionSource } from "@codemirror/autocomplete";
import { operatorSpecJsonSchema } from "@operon/operator-spec/json-schema";
import { scanJson, type JsonFrame, type JsonPath } from "./spec-json-scan";

/**
 * What the gateway serves, for completing a model step: model names, and a
 * model's tensor names (asked when needed, so only models being wired in are
 * looked up).
 */
export interface ServedCatalog {
  modelNames(): Promise<Array<{ name: string; detail?: string }>>;
  modelTensors(model: string): Promise<{ inputs: string[]; outputs: string[] }>;
}

type Schema = Record<string, unknown>;

let rootSchema: Schema | undefined;
/** The spec's JSON Schema (draft 2020-12), built once. */
function specSchema(): Schema {
  rootSchema ??= operatorSpecJsonSchema();
  return rootSchema;
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A schema with its $ref followed and its oneOf/anyOf alternatives spread out. */
function alternatives(schema: unknown, root: Schema): Schema[] {
  if (!isSchema(schema)) return [];
  const ref = schema["$ref"];
  if (typeof ref === "string" && ref.startsWith("#/$defs/"))
    return alternatives((root["$defs"] as Schema | undefined)?.[ref.slice("#/$defs/".length)], root);
  const choices = schema["oneOf"] ?? schema["anyOf"];
  if (Array.isArray(choices)) return choices.flatMap((choice) => alternatives(choice, root));
  return [schema];
}

/** The schemas a value at `path` may follow; an object's alternatives narrow to those whose `const` members match what is already written. */
export function schemasAt(
  path: JsonPath,
  strings: (depth: number) => Record<string, string>,
  root: Schema = specSchema(),
): Schema[] {
  let current = alternatives(root, root);
  path.forEach((segment, depth) => {
    current = narrow(current, strings(depth));
    current = current.flatMap((schema) => {
      if (typeof segment === "number") return alternatives(schema["items"], root);
      const properties = schema["properties"];
      if (isSchema(properties) && segment in properties) return alternatives(properties[segment], root);
      return alternatives(schema["additionalProperties"], root);
    });
  });
  return narrow(current, strings(path.length));
}

function narrow(schemas: Schema[], written: Record<string, string>): Schema[] {
  const fitting = schemas.filter((schema) => {
    const properties = isSchema(schema["properties"]) ? schema["properties"] : {};
    return Object.entries(properties).every(
      ([key, property]) =>
        !isSchema(property) ||
        property["const"] === undefined ||
        written[key] === undefined ||
        property["const"] === written[key],
    );
  });
  return fitting.length > 0 ? fitting : schemas;
}

/** The fixed values a schema allows (const, enum). */
function fixedValues(schemas: Schema[]): string[] {
  const values = schemas.flatMap((schema) => [
    ...(schema["const"] !== undefined ? [schema["const"]] : []),
    ...(Array.isArray(schema["enum"]) ? schema["enum"] : []),
  ]);
  return [...new Set(values.filter((value): value is string => typeof value === "string"))];
}

function propertyNames(schemas: Schema[]): string[] {
  return [
    ...new Set(schemas.flatMap((schema) => (isSchema(schema["properties"]) ? Object.keys(schema["properties"]) : []))),
  ];
}

/** Tensor names the spec makes available: its inputs and every step's published outputs. */
function specTensors(text: string): string[] {
  const names = new Set<string>();
  for (const span of scanJson(text).spans) {
    const [list, , field] = span.path;
    if (span.string === undefined) continue;
    if (list === "inputs" && field === "name" && span.path.length === 3) names.add(span.string);
    if (list === "steps" && field === "outputs" && span.path.length === 4) names.add(span.string);
  }
  return [...names];
}

const word = (label: string, type: string, detail?: string): Completion => ({
  label,
  type,
  ...(detail ? { detail } : {}),
});

/**
 * Completion for the spec editor: property names and fixed values (step
 * kinds, datatypes) from the JSON Schema; model names, their tensor names and
 * the spec's own tensors from what the gateway serves.
 */
export function specCompletion(catalog: ServedCatalog): CompletionSource {
  return async (context: CompletionContext): Promise<CompletionResult | null> => {
    const text = context.state.doc.toString();
    const { cursor } = scanJson(text, context.pos);
    if (!cursor || (!cursor.inString && !context.explicit)) return null;
    const frames = cursor.frames;
    const top = frames.at(-1)!;
    const stringsAt = (depth: number) => frames[depth]?.strings ?? {};
    const result = (options: Completion[]): CompletionResult | null =>
      // The order given (the schema's, ready models first) over CodeMirror's alphabetical one.
      options.length === 0
        ? null
        : {
            from: cursor.from,
            options: options.map((option, index) => ({ ...option, boost: Math.max(-99, -index) })),
            validFor: /^[\w.$-]*$/,
          };

    if (cursor.role === "key") {
      if (top.kind !== "object") return null;
      const fromModel = await modelTensorKeys(catalog, frames, top);
      if (fromModel)
        return result(
          fromModel.filter((name) => !top.keys.includes(name)).map((name) => word(name, "property", "model tensor")),
        );
      const names = propertyNames(schemasAt(top.path, stringsAt)).filter((name) => !top.keys.includes(name));
      return result(names.map((name) => word(name, "property")));
    }

    const path: JsonPath =
      top.kind === "array" ? [...top.path, top.index] : top.key === undefined ? top.path : [...top.path, top.key];
    const [list, , field] = path;
    if (list === "steps" && path.length === 3 && field === "model") {
      return result((await catalog.modelNames()).map(({ name, detail }) => word(name, "constant", detail)));
    }
    if (list === "steps" && ((path.length === 4 && field === "inputs") || (path.length === 3 && field === "input"))) {
      return result(specTensors(text).map((name) => word(name, "variable", "tensor")));
    }
    const values = fixedValues(schemasAt(path, stringsAt));
    return result(values.map((value) => word(value, "enum")));
  };
}

/** Inside a model step's inputs or outputs map: the names that step's model declares there. */
async function modelTensorKeys(
  catalog: ServedCatalog,
  frames: JsonFrame[],
  top: JsonFrame,
): Promise<string[] | undefined> {
  const [list, , field] = top.path;
  if (list !== "steps" || top.path.length !== 3 || (field !== "inputs" && field !== "outputs")) return undefined;
  const step = frames.at(-2);
  const model = step?.strings["model"];
  if (step?.strings["kind"] !== "model" || !model) return undefined;
  try {
    const tensors = await catalog.modelTensors(model);
    return field === "inputs" ? tensors.inputs : tensors.outputs;
  } catch {
    return undefined;
  }
}
