import { z } from "zod";
import { STEP_CATALOG, type StepCategory, type StepPort } from "@operon/steps/step-catalog";

/** One built-in step as the console's palette shows it. */
export interface StepCatalogEntry {
  name: string;
  category: StepCategory;
  title: string;
  doc: string;
  /** JSON Schema of the parameters (from the catalog's zod schema), for the editor's form. */
  paramsSchema: Record<string, unknown>;
  /** The ports with the parameters' defaults, or the catalog's example parameters where some are required. */
  inputs: StepPort[];
  outputs: StepPort[];
}

let cached: StepCatalogEntry[] | undefined;

/** The catalog, computed once (it is static). */
export function stepCatalogView(): StepCatalogEntry[] {
  cached ??= STEP_CATALOG.map((step) => {
    const defaults = step.params.safeParse(step.example ?? {});
    return {
      name: step.name,
      category: step.category,
      title: step.title,
      doc: step.doc,
      paramsSchema: z.toJSONSchema(step.params, { io: "input", unrepresentable: "any" }) as Record<string, unknown>,
      inputs: defaults.success ? step.inputs(defaults.data) : [],
      outputs: defaults.success ? step.outputs(defaults.data) : [],
    };
  });
  return cached;
}
