import * as grpc from "@grpc/grpc-js";
import { OperonError, grpcStatusOf, isOperonError } from "@operon/protocol/errors";
import type { Logger } from "@operon/protocol/logger";
import type { CancelSignal } from "@operon/protocol/inference";
import { Cancellation } from "../../engine/cancellation.js";
import { logRequestFailure, requestFailureOf } from "../failure-log.js";
import { requestIdOf } from "../request-id.js";

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

/**
 * What a call's log lines carry: its request id (the caller's x-request-id
 * metadata, or a new one), and Triton's request `id` once a handler knows it
 * (ModelInfer sets it after decoding).
 */
export interface CallLog {
  requestId: string;
  id?: string;
}

/** The call's CallLog, from its x-request-id metadata (a new id when absent or unusable). */
export function callLogOf(call: { metadata: grpc.Metadata }): CallLog {
  return { requestId: requestIdOf(metadataText(call.metadata)) };
}

/**
 * Metadata carrying the call's request id, as HTTP's X-Request-Id header does: the client can find its lines.
 * Every answered call sends it, so it skips grpc-js's checks of key and value (a regular expression each,
 * 2-3 µs a call): the key is a constant and requestIdOf (request-id.ts) gives only visible ASCII, which
 * gRPC allows in any text value.
 */
export function requestIdMetadata(requestId: string): grpc.Metadata {
  return CheckedMetadata.of(REQUEST_ID_KEY, requestId);
}

const REQUEST_ID_KEY = "x-request-id";

/** grpc.Metadata with one entry its caller has already checked (a legal lowercase key, a legal text value). */
class CheckedMetadata extends grpc.Metadata {
  static of(key: string, value: string): grpc.Metadata {
    const metadata = new CheckedMetadata();
    // grpc-js keeps entries here and writes them from here (toHttp2Headers); set() would check both again.
    metadata.internalRepr.set(key, [value]);
    return metadata;
  }
}

/**
 * Runs fn and answers with its value, or with the gRPC status of what it
 * threw (never throws synchronously). Either way the trailing metadata
 * carries the call's x-request-id.
 */
export function unary<Req, Res>(
  logger: Logger | undefined,
  fn: (request: Req, call: grpc.ServerUnaryCall<Req, Res>, log: CallLog) => Res | Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const log = callLogOf(call);
    const answer = (value: Res): void => callback(null, value, requestIdMetadata(log.requestId));
    const fail = (error: unknown): void => callback(statusOf(error, call.getPath(), logger, log));
    // Called at once (grpc-js lets a handler answer before it returns), not from a promise's turn: a
    // synchronous answer goes out without a microtask, an async one costs only its own promise.
    let value: Res | Promise<Res>;
    try {
      value = fn(call.request, call, log);
    } catch (error) {
      fail(error);
      return;
    }
    if (value instanceof Promise) value.then(answer, fail);
    else answer(value);
  };
}

/**
 * Logged at its kind's level; a bug's text stays in the log, the client gets INTERNAL with a fixed text (as over HTTP).
 * With the call's log (its request id: the caller's x-request-id metadata, or a new one), the log line carries
 * it, and Triton's id when known, and the status's trailing metadata carries the request id, so the client can
 * find its failure in the server's log.
 */
export function statusOf(error: unknown, method: string, logger?: Logger, log?: CallLog): Partial<grpc.StatusObject> {
  const failure = requestFailureOf(error);
  const requestId = log?.requestId;
  logRequestFailure(
    logger,
    isOperonError(error) ? failure : { ...failure, message: "gRPC call failed unexpectedly" },
    error,
    log === undefined ? { method } : log.id !== undefined ? { method, requestId, id: log.id } : { method, requestId },
  );
  const retryAfter = error instanceof OperonError ? error.retryAfterSecs : undefined;
  if (requestId === undefined && retryAfter === undefined)
    return { code: grpcStatusOf(failure.kind), details: failure.message };
  const metadata = new grpc.Metadata();
  if (requestId !== undefined) metadata.set(REQUEST_ID_KEY, requestId);
  // A retry hint (a tenant over its share) travels as `retry-after` metadata, in seconds, as over HTTP.
  if (retryAfter !== undefined) metadata.set("retry-after", String(retryAfter));
  return { code: grpcStatusOf(failure.kind), details: failure.message, metadata };
}

/** The first value of a text metadata entry (x-request-id), if any. */
function metadataText(metadata: grpc.Metadata): string | undefined {
  const value = metadata.get(REQUEST_ID_KEY)[0];
  return typeof value === "string" ? value : undefined;
}

/** A unary call's cancellation, as its request sees it (watchCancel). */
export interface CallCancel {
  /** The request's signal: aborted when the client cancels the call before it is answered. */
  signal: CancelSignal;
  /** The call is answered (or failed): a 'cancelled' event from now on is no cancel of its request. */
  answered(): void;
}

/**
 * Watches the call for the client's cancel (a Cancellation: cheaper per
 * call than an AbortController). grpc-js emits 'cancelled' when a call's
 * stream closes, answered or not, so every call hears it once it is over:
 * answered() makes that a no-op rather than an abort building a CANCELLED
 * error with its stack for a request that is already done.
 */
export function watchCancel(call: {
  cancelled: boolean;
  on(event: "cancelled", listener: () => void): unknown;
}): CallCancel {
  const cancellation = new Cancellation();
  if (call.cancelled) {
    cancellation.abort(cancelledError());
    return { signal: cancellation.signal, answered: () => undefined };
  }
  let live = true;
  // grpc-js emits 'cancelled' at most once per call (its notifyOnCancel), so `on` needs no once-wrapper.
  call.on("cancelled", () => {
    if (live) cancellation.abort(cancelledError());
  });
  return {
    signal: cancellation.signal,
    answered: () => {
      live = false;
    },
  };
}

export function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "the client cancelled the call");
}

export function rejectRepositoryName(name: string): void {
  if (name !== "") throw new OperonError("UNSUPPORTED", "'repository_name' specification is not supported");
}
