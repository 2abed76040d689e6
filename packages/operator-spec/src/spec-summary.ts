import type { StepSpec } from "./operator-spec-schema.js";

/**
 * What a list of operators shows of a spec it has not parsed (a stored spec
 * is JSON, and an old one may not parse any more): its steps and the models
 * they call. Reads whatever is there and skips the rest.
 */
export function specSteps(spec: unknown): Array<Record<string, unknown>> {
  const steps = isRecord(spec) ? spec["steps"] : undefined;
  return Array.isArray(steps) ? steps.filter(isRecord) : [];
}

/** The models the spec's model steps call, each once, in step order. */
export function specModels(spec: unknown): string[] {
  const models: string[] = [];
  for (const step of specSteps(spec)) {
    const model = step["model"];
    if (step["kind"] === ("model" satisfies StepSpec["kind"]) && typeof model === "string" && !models.includes(model))
      models.push(model);
  }
  return models;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
