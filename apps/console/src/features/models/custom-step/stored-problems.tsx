"use client";

import { FormAlert } from "@/components/form/form-alert";
import type { ApiProblem } from "@/lib/api-problem";

/**
 * Why an upload of code was not stored: the API's message, or, when it
 * names fields (compile problems at model.ts:line:col, bad files), the
 * `notStored` heading and every problem as code, in the "Problems" list.
 */
export function StoredProblems({ problem, notStored }: { problem: ApiProblem | undefined; notStored: string }) {
  if (problem === undefined) return null;
  return (
    <>
      <FormAlert message={problem.fieldErrors.length > 0 ? notStored : problem.message} />
      {problem.fieldErrors.length > 0 ? (
        <ul className="field-error" aria-label="Problems">
          {problem.fieldErrors.map((e) => (
            <li key={`${e.path}:${e.message}`}>
              <code>{e.message}</code>
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}
