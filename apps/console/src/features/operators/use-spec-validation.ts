"use client";

import { useMutation } from "@tanstack/react-query";
import { useEffect, useMemo } from "react";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { isOperatorName } from "./operator-name";
import { parseSpecText } from "./spec-text";
import { useDebouncedValue } from "./use-debounced-value";

export type SpecValidation =
  | { status: "unparsed" }
  | { status: "checking" }
  | { status: "valid" }
  | { status: "invalid"; problems: string[] }
  | { status: "failed"; message: string };

/** How long the text must rest before the gateway is asked. */
const VALIDATE_AFTER_MS = 500;

/**
 * The gateway's dry run (operators.validate) of the spec being typed, asked
 * once the typing pauses. Only the newest answer counts: react-query's
 * mutation observer follows the last mutate call.
 */
export function useSpecValidation(name: string, text: string): SpecValidation {
  const trpc = useTRPC();
  const { mutate, data, error, isPending, reset, variables } = useMutation(trpc.operators.validate.mutationOptions());
  const draft = useMemo(() => ({ name: name.trim(), text }), [name, text]);
  const settled = useDebouncedValue(draft, VALIDATE_AFTER_MS);

  useEffect(() => {
    const parsed = parseSpecText(settled.text);
    if (!parsed.ok) {
      reset();
      return;
    }
    mutate({ ...(isOperatorName(settled.name) ? { name: settled.name } : {}), spec: parsed.spec });
  }, [settled, mutate, reset]);

  if (!parseSpecText(text).ok) return { status: "unparsed" };
  if (settled !== draft || isPending || variables === undefined) return { status: "checking" };
  if (error) {
    const problem = apiProblem(error);
    const fields = problem.fieldErrors.map((field) => field.message);
    return fields.length > 0
      ? { status: "invalid", problems: problem.fieldErrors.map((field) => `${field.path}: ${field.message}`) }
      : { status: "failed", message: problem.message };
  }
  if (data?.valid) return { status: "valid" };
  return { status: "invalid", problems: (data?.problems ?? []).map((problem) => problem.message) };
}
