import { TRPCClientError } from "@trpc/client";

/**
 * What went wrong with an API call, for a person: the API's message, its
 * application code and the fields it blamed (packages/api trpc.ts shapes
 * errors as `data.appCode` and `data.fieldErrors`).
 */
export interface FieldProblem {
  path: string;
  message: string;
}

export interface ApiProblem {
  message: string;
  /** The API's AppErrorCode; undefined when the API did not answer (network, proxy). */
  appCode: string | undefined;
  fieldErrors: FieldProblem[];
  retryAfterSecs: number | undefined;
}

const UNREACHABLE = "The console could not reach the Operon API. Is `operon serve` running?";

export function apiProblem(error: unknown): ApiProblem {
  if (error instanceof TRPCClientError) {
    const data: unknown = error.data;
    const appCode = readString(data, "appCode");
    if (appCode === undefined)
      return { message: UNREACHABLE, appCode: undefined, fieldErrors: [], retryAfterSecs: undefined };
    return {
      message: error.message,
      appCode,
      fieldErrors: readFieldErrors(data),
      retryAfterSecs: readNumber(data, "retryAfterSecs"),
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { message, appCode: undefined, fieldErrors: [], retryAfterSecs: undefined };
}

export function isUnauthenticated(error: unknown): boolean {
  return error instanceof TRPCClientError && readString(error.data, "appCode") === "UNAUTHENTICATED";
}

/** The message the API gave for one input field (exact path, e.g. "email"), if any. */
export function fieldMessage(problem: ApiProblem | null | undefined, path: string): string | undefined {
  return problem?.fieldErrors.find((field) => field.path === path)?.message;
}

/** The problem's message unless every detail is already shown at a field the form has. */
export function formMessage(
  problem: ApiProblem | null | undefined,
  fieldsShown: readonly string[],
): string | undefined {
  if (!problem) return undefined;
  const allShown =
    problem.fieldErrors.length > 0 && problem.fieldErrors.every((field) => fieldsShown.includes(field.path));
  return allShown ? undefined : problem.message;
}

function readString(data: unknown, key: string): string | undefined {
  const value = typeof data === "object" && data !== null ? (data as Record<string, unknown>)[key] : undefined;
  return typeof value === "string" ? value : undefined;
}

function readNumber(data: unknown, key: string): number | undefined {
  const value = typeof data === "object" && data !== null ? (data as Record<string, unknown>)[key] : undefined;
  return typeof value === "number" ? value : undefined;
}

function readFieldErrors(data: unknown): FieldProblem[] {
  const value = typeof data === "object" && data !== null ? (data as Record<string, unknown>).fieldErrors : undefined;
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is FieldProblem =>
      typeof entry === "object" &&
      entry !== null &&
      typeof entry.path === "string" &&
      typeof entry.message === "string",
  );
}
