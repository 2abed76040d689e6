import * as grpc from "@grpc/grpc-js";
import { OperonError, grpcStatusOf, isOperonError } from "@operon/protocol/errors";
import type { Logger } from "@operon/protocol/logger";
import type { CancelSignal } from "@operon/protocol/inference";
import { Cancellation } from "../../engine/cancellation.js";
import { logRequestFailure, requestFailureOf } from "../failure-log.js";

/** What every gRPC handler shares: the caller's key, unary calls answered with a status, cancellation, the logger. */

/**
 * The call's `authorization` metadata (what HTTP sends as the Authorization
 * header); undefined when absent. More than one entry is refused: which one
 * counts would be a guess.
 */
export function authorizationOf(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get("authorization");
  if (values.length === 0) return undefined;
  if (values.length > 1)
    throw new OperonError(
      "UNAUTHENTICATED",
      "send one 'authorization' metadata entry ('Bearer <api key>'), not several",
    );
  const value = values[0]!;
  return typeof value === "string" ? value : value.toString("utf8");
}

/** Runs fn and answers with its value, or with the gRPC status of what it threw (never throws synchronously). */
export function unary<Req, Res>(
  logger: Logger | undefined,
  fn: (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Res | Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => fn(call.request, call))
      .then(
        (value) => callback(null, value),
        (error: unknown) => callback(statusOf(error, call.getPath(), logger)),
      );
  };
}

/** Logged at its kind's level; a bug's text stays in the log, the client gets INTERNAL with a fixed text (as over HTTP). */
export function statusOf(error: unknown, method: string, logger?: Logger): Partial<grpc.StatusObject> {
  const failure = requestFailureOf(error);
  logRequestFailure(
    logger,
    isOperonError(error) ? failure : { ...failure, message: "gRPC call failed unexpectedly" },
    error,
    { method },
  );
  // A retry hint (a tenant over its share) travels as `retry-after` metadata, in seconds, as over HTTP.
  if (error instanceof OperonError && error.retryAfterSecs !== undefined) {
    const metadata = new grpc.Metadata();
    metadata.set("retry-after", String(error.retryAfterSecs));
    return { code: grpcStatusOf(failure.kind), details: failure.message, metadata };
  }
  return { code: grpcStatusOf(failure.kind), details: failure.message };
}

/** The request's signal: aborted when the client cancels the call (a Cancellation: cheaper per call than an AbortController). */
export function cancelSignalOf(call: {
  cancelled: boolean;
  once(event: "cancelled", listener: () => void): unknown;
}): CancelSignal {
  const cancellation = new Cancellation();
  const abort = () => cancellation.abort(cancelledError());
  if (call.cancelled) abort();
  else call.once("cancelled", abort);
  return cancellation.signal;
}

export function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "the client cancelled the call");
}

export function rejectRepositoryName(name: string): void {
  if (name !== "") throw new OperonError("UNSUPPORTED", "'repository_name' specification is not supported");
}
