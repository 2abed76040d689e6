import { OperonError } from "@operon/protocol/errors";

/**
 * What one operator spec may hold, checked before the spec is parsed or
 * validated: a 34 MB spec of 300,000 steps sent to `.../validate` stalled
 * readiness for 3 s while its steps were checked one by one.
 */
export const MAX_OPERATOR_SPEC_BYTES = 1024 * 1024;
export const MAX_OPERATOR_STEPS = 256;

/** Throws INVALID_ARG naming the limit when the spec has more steps than MAX_OPERATOR_STEPS. */
export function assertOperatorSpecWithinBudget(spec: Record<string, unknown>): void {
  const steps = spec["steps"];
  if (Array.isArray(steps) && steps.length > MAX_OPERATOR_STEPS) {
    throw new OperonError(
      "INVALID_ARG",
      `the operator spec has ${steps.length} steps; an operator may have at most ${MAX_OPERATOR_STEPS}`,
    );
  }
}
