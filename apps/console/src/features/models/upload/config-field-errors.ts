import type { ApiProblem } from "@/lib/api-problem";

/**
 * Where the API's config errors belong. Its fieldErrors paths are relative
 * to the config ("max_batch_size", "input[0].dims", "input[0].dims[1]"); a
 * field shows the errors at its path and, unless `exact`, below it.
 */
export interface FieldPath {
  path: string;
  exact?: boolean;
}

function matches(errorPath: string, field: FieldPath): boolean {
  if (errorPath === field.path) return true;
  return !field.exact && (errorPath.startsWith(`${field.path}.`) || errorPath.startsWith(`${field.path}[`));
}

export function errorAt(problem: ApiProblem | null, field: FieldPath): string | undefined {
  const messages = (problem?.fieldErrors ?? [])
    .filter((error) => matches(error.path, field))
    .map((error) => error.message);
  return messages.length > 0 ? messages.join("; ") : undefined;
}

/** The problem's whole message unless the form shows every one of its field errors. */
export function messageNotShown(problem: ApiProblem | null, fields: readonly FieldPath[]): string | undefined {
  if (!problem) return undefined;
  const allShown =
    problem.fieldErrors.length > 0 &&
    problem.fieldErrors.every((error) => fields.some((field) => matches(error.path, field)));
  return allShown ? undefined : problem.message;
}
