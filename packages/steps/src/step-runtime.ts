import { findStep, parseStepParams, STEP_CATALOG } from "./step-catalog.js";
import { IMAGE_STEPS } from "./image-steps.js";
import { TENSOR_STEPS } from "./tensor-steps.js";
import { TEXT_STEPS } from "./text-steps.js";
import { StepInputError, type StepEnvironment, type StepFactory, type StepRun } from "./step-tensor.js";

/**
 * The implementations of the catalog's steps, for worker processes only
 * (they load sharp and the tokenizer).
 */
export type { StepEnvironment, StepRun };

const FACTORIES: Record<string, StepFactory> = { ...IMAGE_STEPS, ...TEXT_STEPS, ...TENSOR_STEPS };

// Every catalog entry has an implementation and nothing else has one (a test checks it too).
for (const step of STEP_CATALOG) {
  if (FACTORIES[step.name] === undefined) throw new Error(`built-in step '${step.name}' has no implementation`);
}

export function implementedSteps(): string[] {
  return Object.keys(FACTORIES);
}

/** Validates the parameters and builds the step; StepInputError lists every parameter problem. */
export async function createStep(name: string, rawParams: unknown, env: StepEnvironment): Promise<StepRun> {
  const parsed = parseStepParams(name, rawParams);
  if (!parsed.ok) throw new StepInputError(parsed.problems.join("; "));
  const factory = FACTORIES[name];
  if (factory === undefined || findStep(name) === undefined)
    throw new StepInputError(`step '${name}' is not implemented`);
  return factory(parsed.params, env);
}
