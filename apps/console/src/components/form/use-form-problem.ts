"use client";

import { useState } from "react";
import { apiProblem, type ApiProblem, type FieldProblem } from "@/lib/api-problem";

/** A form's current problem (from the API or its own checks), cleared on the next submit. */
export function useFormProblem() {
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const atFields = (fieldErrors: FieldProblem[]) =>
    setProblem({
      message: fieldErrors.map((field) => `${field.path}: ${field.message}`).join("; "),
      appCode: "VALIDATION_FAILED",
      fieldErrors,
      retryAfterSecs: undefined,
    });
  return {
    problem,
    clear: () => setProblem(null),
    fromError: (error: unknown) => setProblem(apiProblem(error)),
    /** Checks the browser makes before asking the API, shown at their fields. */
    atFields,
    atField: (path: string, message: string) => atFields([{ path, message }]),
  };
}
