import type { FieldProblem } from "@/lib/api-problem";

/** One rule of a form: the field it blames and what is wrong, or a falsy value when the rule holds. */
export type FieldCheck = readonly [path: string, failure: string | false | null | undefined];

/**
 * Every failing check of a form, at once: the first failure of each field, in the order given.
 *
 * Why one helper: forms used to return at their first failing check, and a form whose own checks failed never asked
 * the API, so the API's checks of the other fields only showed after a second submit (issue 27 item 10: "submit
 * shows one error, fix it, submit again shows the next"). A form runs all its checks through here, including the
 * API's simple rules (required, ranges) for the fields it does not check otherwise, and shows the whole list;
 * the API's own answer (zod) names every field it rejects too.
 */
export function fieldChecks(checks: readonly FieldCheck[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const [path, failure] of checks) {
    if (!failure || problems.some((problem) => problem.path === path)) continue;
    problems.push({ path, message: failure });
  }
  return problems;
}

/** The API's "required" for a text field. */
export function required(value: string, message = "required"): string | false {
  return value.trim() === "" && message;
}
