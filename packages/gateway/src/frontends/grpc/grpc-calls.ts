import * as grpc from "@grpc/grpc-js";
import { OperonError, grpcStatusOf, isOperonError } from "@operon/protocol/errors";

/** What every gRPC handler shares: the caller's key, unary calls answered with a status, cancellation, the logger. */

export interface GrpcFrontendLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/**
 * The call's `authorization` metadata (what HTTP sends as the Authorization
 * header); undefined when absent. More than one entry is refused: which one
 * counts would be a guess.
 */
export function authorizationOf(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get("authorization");
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new OperonError("UNAUTHENTICATED", "send one 'authorization' metadata entry ('Bearer <api key>'), not several");
  const value = values[0]!;
  return typeof value === "string" ? value : value.toString("utf8");
}

/** Runs fn and answers with its value, or with the gRPC status of what it threw (never throws synchronously). */
export function unary<Req, Res>(
  logger: GrpcFrontendLogger | undefined,
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

export function statusOf(error: unknown, method: string, logger?: GrpcFrontendLogger): Partial<grpc.StatusObject> {
  if (isOperonError(error)) return { code: grpcStatusOf(error.kind), details: error.message };
  logger?.error({ err: error, method }, "gRPC call failed unexpectedly");
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

export function abortSignalOf(call: { cancelled: boolean; once(event: "cancelled", listener: () => void): unknown }): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort(cancelledError());
  if (call.cancelled) abort();
  else call.once("cancelled", abort);
  return controller.signal;
}

export function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "the client cancelled the call");
}

export function rejectRepositoryName(name: string): void {
  if (name !== "") throw new OperonError("UNSUPPORTED", "'repository_name' specification is not supported");
}
