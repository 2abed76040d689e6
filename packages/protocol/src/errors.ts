/**
 * The one closed set of error kinds (Triton's). Every layer throws
 * OperonError with one of these; each transport maps kinds to its status
 * codes exactly once (see httpStatusOf / grpcStatusOf).
 */
export const ERROR_KINDS = [
  "INVALID_ARG",
  "NOT_FOUND",
  "UNAVAILABLE",
  "INTERNAL",
  "UNSUPPORTED",
  "ALREADY_EXISTS",
  "CANCELLED",
  "UNKNOWN",
  // Operon's additions for gateway API keys (Triton has no request auth):
  // no valid key, a key without the needed scope, a key over its quota.
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

export class OperonError extends Error {
  readonly kind: ErrorKind;
  /** When the client may retry, whole seconds (HTTP Retry-After, gRPC `retry-after` metadata); unset = the transport's default. */
  readonly retryAfterSecs: number | undefined;

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown; retryAfterSecs?: number }) {
    super(message, options);
    this.name = "OperonError";
    this.kind = kind;
    this.retryAfterSecs = options?.retryAfterSecs;
  }
}

export function isOperonError(error: unknown): error is OperonError {
  return error instanceof OperonError;
}

/** Wraps anything thrown into an OperonError, keeping the cause. */
export function asOperonError(error: unknown, fallbackKind: ErrorKind = "INTERNAL"): OperonError {
  if (error instanceof OperonError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new OperonError(fallbackKind, message, { cause: error });
}

/**
 * Triton's HTTP mapping: NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501,
 * INTERNAL 500, the rest 400; plus Operon's UNAUTHENTICATED 401,
 * PERMISSION_DENIED 403, RESOURCE_EXHAUSTED 429.
 */
export function httpStatusOf(kind: ErrorKind): number {
  switch (kind) {
    case "UNAUTHENTICATED":
      return 401;
    case "PERMISSION_DENIED":
      return 403;
    case "RESOURCE_EXHAUSTED":
      return 429;
    case "NOT_FOUND":
      return 404;
    case "UNAVAILABLE":
      return 503;
    case "UNSUPPORTED":
      return 501;
    case "INTERNAL":
      return 500;
    default:
      return 400;
  }
}

/** The levels a failed request is logged at (see logLevelOf). */
export type FailureLogLevel = "info" | "warn" | "error";

/**
 * The one log policy for failed requests, the same in every frontend:
 * the client's errors (a bad request, an unknown model, a refused key, a
 * request over quota, a cancel) at info; UNAVAILABLE (overload, a model
 * not ready, shutting down: the server's state, not a bug) at warn; the
 * server's errors (INTERNAL, UNKNOWN) at error, where someone must look.
 */
export function logLevelOf(kind: ErrorKind): FailureLogLevel {
  switch (kind) {
    case "INTERNAL":
    case "UNKNOWN":
      return "error";
    case "UNAVAILABLE":
      return "warn";
    default:
      return "info";
  }
}

/** gRPC status codes (numeric, from grpc's status.proto) for each kind. */
export function grpcStatusOf(kind: ErrorKind): number {
  switch (kind) {
    case "INVALID_ARG":
      return 3; // INVALID_ARGUMENT
    case "NOT_FOUND":
      return 5;
    case "ALREADY_EXISTS":
      return 6;
    case "UNAVAILABLE":
      return 14;
    case "INTERNAL":
      return 13;
    case "UNSUPPORTED":
      return 12; // UNIMPLEMENTED
    case "CANCELLED":
      return 1;
    case "UNAUTHENTICATED":
      return 16;
    case "PERMISSION_DENIED":
      return 7;
    case "RESOURCE_EXHAUSTED":
      return 8;
    default:
      return 2; // UNKNOWN
  }
}
