import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";

/**
 * The API's one typed error. Procedures and services throw AppError with a
 * code from this closed set; trpc.ts maps each code to tRPC (and so HTTP)
 * exactly once, through APP_ERROR_TRPC_CODES. `message` is for the person
 * using the console or API and must name the problem; `internal` (logged,
 * never sent) holds what only an operator should see.
 */
export const APP_ERROR_CODES = [
  "VALIDATION_FAILED",
  "UNAUTHENTICATED",
  "FORBIDDEN",
  "CSRF_FAILED",
  "NOT_FOUND",
  "CONFLICT",
  "RATE_LIMITED",
  "PAYLOAD_TOO_LARGE",
  "GATEWAY_ERROR",
  "GATEWAY_UNAVAILABLE",
  "INTERNAL",
] as const;

export type AppErrorCode = (typeof APP_ERROR_CODES)[number];

export const APP_ERROR_TRPC_CODES: Record<AppErrorCode, TRPC_ERROR_CODE_KEY> = {
  VALIDATION_FAILED: "BAD_REQUEST",
  UNAUTHENTICATED: "UNAUTHORIZED",
  FORBIDDEN: "FORBIDDEN",
  CSRF_FAILED: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  RATE_LIMITED: "TOO_MANY_REQUESTS",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  GATEWAY_ERROR: "BAD_GATEWAY",
  GATEWAY_UNAVAILABLE: "SERVICE_UNAVAILABLE",
  INTERNAL: "INTERNAL_SERVER_ERROR",
};

/** A problem tied to one input field, e.g. `{ path: "input[0].dims", message: "..." }`. */
export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly fieldErrors: FieldError[];
  readonly internal: string | undefined;
  /** Seconds after which a RATE_LIMITED call may be retried. */
  readonly retryAfterSecs: number | undefined;

  constructor(
    code: AppErrorCode,
    message: string,
    options: { fieldErrors?: FieldError[]; internal?: string; retryAfterSecs?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.fieldErrors = options.fieldErrors ?? [];
    this.internal = options.internal;
    this.retryAfterSecs = options.retryAfterSecs;
  }
}

export function notFound(what: string): AppError {
  return new AppError("NOT_FOUND", `${what} was not found`);
}
