import { isOperonError, logLevelOf, type ErrorKind, type FailureLogLevel } from "@operon/protocol/errors";
import type { Logger } from "@operon/protocol/logger";
import { withoutServerPaths } from "./client-text.js";

/** What a client is told when something that is not an OperonError (a bug) fails its request. */
export const INTERNAL_ERROR_TEXT = "internal server error";

/** A failed request as every frontend answers and logs it. */
export interface RequestFailure {
  kind: ErrorKind;
  /** The text the client gets. */
  message: string;
  level: FailureLogLevel;
}

/**
 * OperonErrors are contract errors: the client gets their kind and text.
 * Anything else is a bug whose text may expose internals: the client gets
 * INTERNAL with a fixed text, and only the log sees the details.
 */
export function requestFailureOf(error: unknown): RequestFailure {
  // Contract errors may still quote a server path (a model folder, a file); the client gets it without.
  if (isOperonError(error))
    return { kind: error.kind, message: withoutServerPaths(error.message), level: logLevelOf(error.kind) };
  return { kind: "INTERNAL", message: INTERNAL_ERROR_TEXT, level: "error" };
}

/** Logs a failed request at its kind's level (logLevelOf); the error itself (stack, cause) goes along at error level only. */
export function logRequestFailure(
  logger: Logger | undefined,
  failure: { kind?: ErrorKind | undefined; message: string; level: FailureLogLevel },
  error: unknown,
  fields: object,
): void {
  logger?.[failure.level](
    {
      ...fields,
      ...(failure.kind !== undefined ? { kind: failure.kind } : {}),
      ...(failure.level === "error" ? { err: error } : {}),
    },
    failure.message,
  );
}
