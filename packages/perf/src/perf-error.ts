/**
 * The one error type `runPerf` throws. The code tells a caller what went
 * wrong without parsing the message: the CLI maps BAD_OPTIONS to exit 2
 * (a usage error) and every other code to exit 1. Failures of single
 * inference requests during a measurement are never thrown; they are
 * counted in the step's `errors`.
 */
export const PERF_ERROR_CODES = [
  /** The options (flags) are wrong or do not fit the model. */
  "BAD_OPTIONS",
  /** No connection to the server (refused, unknown host, no answer). */
  "UNREACHABLE",
  /** The server does not know the model or version. */
  "MODEL_NOT_FOUND",
  /** The server answered with an error (model not ready, first inference rejected, ...). */
  "SERVER_ERROR",
] as const;

export type PerfErrorCode = (typeof PERF_ERROR_CODES)[number];

export class PerfError extends Error {
  readonly code: PerfErrorCode;

  constructor(code: PerfErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PerfError";
    this.code = code;
  }
}

export function isPerfError(error: unknown): error is PerfError {
  return error instanceof PerfError;
}

/** A readable message from anything thrown (AggregateErrors from dual-stack connects have an empty message). */
export function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.message === "") {
    const first = error.errors[0] as unknown;
    const code = (error as { code?: unknown }).code;
    if (first !== undefined) return messageOf(first);
    if (typeof code === "string") return code;
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return error.message !== "" ? error.message : typeof code === "string" ? code : error.name;
  }
  return String(error);
}
