import {
  ExitStepSpecSchema,
  ModelStepSpecSchema,
  OperatorSpecSchema,
  RouteCaseSchema,
  RouteStepSpecSchema,
  TensorSpecSchema,
} from "./operator-spec-schema.js";

/**
 * A spec with its keys in the order people write them: the order the schema
 * declares them in (name, inputs, outputs, steps; a step's id and kind
 * first). The database hands JSON back with its keys sorted, which reads
 * backwards; the order carries no meaning.
 */
const SPEC_KEYS = Object.keys(OperatorSpecSchema.shape);
const TENSOR_KEYS = Object.keys(TensorSpecSchema.shape);
const STEP_KEYS_BY_KIND: Record<string, string[]> = {
  model: Object.keys(ModelStepSpecSchema.shape),
  route: Object.keys(RouteStepSpecSchema.shape),
  exit: Object.keys(ExitStepSpecSchema.shape),
};
/** For a step of no known kind: every step key, by kind in turn. */
const STEP_KEYS = [...new Set(Object.values(STEP_KEYS_BY_KIND).flat())];
const CASE_KEYS = Object.keys(RouteCaseSchema.shape);

export function canonicalSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const ordered = ordering(spec, SPEC_KEYS);
  for (const key of ["inputs", "outputs"]) {
    if (Array.isArray(ordered[key]))
      ordered[key] = ordered[key].map((tensor: unknown) => (isObject(tensor) ? ordering(tensor, TENSOR_KEYS) : tensor));
  }
  if (Array.isArray(ordered["steps"])) {
    ordered["steps"] = ordered["steps"].map((step: unknown) => {
      if (!isObject(step)) return step;
      const next = ordering(step, STEP_KEYS_BY_KIND[String(step["kind"])] ?? STEP_KEYS);
      if (Array.isArray(next["cases"]))
        next["cases"] = next["cases"].map((entry: unknown) => (isObject(entry) ? ordering(entry, CASE_KEYS) : entry));
      return next;
    });
  }
  return ordered;
}

/** The keys named in `order` first, in that order, then the others as they come. */
function ordering(value: Record<string, unknown>, order: readonly string[]): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const key of order) if (key in value) result[key] = value[key];
  for (const [key, item] of Object.entries(value)) if (!(key in result)) result[key] = item;
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
