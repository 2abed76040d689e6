import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { OperonError, httpStatusOf, type ErrorKind, type FailureLogLevel } from "@operon/protocol/errors";
import { requestFailureOf } from "../failure-log.js";
import { HttpStatusError } from "./http-errors.js";

/**
 * Response writers. Every body is sent with an exact Content-Length so
 * keep-alive connections can be reused; nothing is written once the client
 * is gone. A string body (JSON text) leaves in one write with the headers:
 * node:http joins a string to its header text, while a Buffer goes as a
 * second chunk of a writev.
 */

const REQUEST_ID = Symbol("operon.requestId");

/**
 * The X-Request-Id every response of this request carries. Kept on the response and written in writeHead's own
 * header list: a setHeader before writeHead sends node:http down its slower merging path (1.0 vs 0.45 µs a
 * response on Node 20).
 */
export function setRequestIdHeader(res: ServerResponse, requestId: string): void {
  (res as ServerResponse & { [REQUEST_ID]?: string })[REQUEST_ID] = requestId;
}

/** The id setRequestIdHeader gave this response, if any. */
export function requestIdHeaderOf(res: ServerResponse): string | undefined {
  return (res as ServerResponse & { [REQUEST_ID]?: string })[REQUEST_ID];
}

export function sendBody(
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | Buffer | readonly Buffer[],
): void {
  if (res.headersSent || res.destroyed) return;
  if (typeof body === "string") {
    res.writeHead(status, headerList(res, headers, Buffer.byteLength(body, "utf8")));
    res.end(body, "utf8");
    return;
  }
  if (Buffer.isBuffer(body)) {
    res.writeHead(status, headerList(res, headers, body.length));
    res.end(body);
    return;
  }
  const chunks = body;
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  res.writeHead(status, headerList(res, headers, length));
  if (chunks.length === 1) {
    res.end(chunks[0]);
    return;
  }
  // A small answer (a JSON header and a few small tensors) is one buffer: a copy of a few hundred bytes costs less
  // than node:http's path for each extra write. Large tensors still leave as they are, without a copy.
  if (length <= JOIN_SMALL_BODY_BYTES) {
    res.end(Buffer.concat(chunks as Buffer[], length));
    return;
  }
  // Corked so the JSON header and small tensors leave in as few packets as possible.
  res.cork();
  for (const chunk of chunks) res.write(chunk);
  res.end();
  res.uncork();
}

/** Multi-part bodies up to this size are joined into one buffer before they are written. */
const JOIN_SMALL_BODY_BYTES = 16 * 1024;

/** The headers plus Content-Length as writeHead's flat [name, value, ...] list: no object copied per response. */
function headerList(
  res: ServerResponse,
  headers: OutgoingHttpHeaders,
  length: number,
): Array<string | number | string[]> {
  const list: Array<string | number | string[]> = [];
  const requestId = requestIdHeaderOf(res);
  if (requestId !== undefined) list.push("X-Request-Id", requestId);
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) list.push(name, value);
  }
  list.push("Content-Length", length);
  return list;
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendBody(res, status, { "Content-Type": "application/json" }, JSON.stringify(value));
}

/** Health and control endpoints answer with the status alone. */
export function sendEmpty(res: ServerResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  const requestId = requestIdHeaderOf(res);
  res.writeHead(
    status,
    requestId === undefined ? { "Content-Length": 0 } : { "X-Request-Id": requestId, "Content-Length": 0 },
  );
  res.end();
}

/**
 * Every error is `{"error": "<message>"}`, as in KServe v2, plus `"kind"`
 * (the OperonError kind) when the failure has one, so Operon's own clients
 * (the control plane) branch on the kind, never on the text; Triton clients
 * ignore the extra field. Failures of HTTP itself (no such endpoint, a body
 * over the limit) have no kind.
 */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: OutgoingHttpHeaders = {},
  kind?: ErrorKind,
): void {
  const body = kind === undefined ? { error: message } : { error: message, kind };
  sendBody(res, status, { ...headers, "Content-Type": "application/json" }, JSON.stringify(body));
}

export interface ErrorReport {
  status: number;
  message: string;
  /** The OperonError kind; undefined for failures of HTTP itself (HttpStatusError). */
  kind: ErrorKind | undefined;
  /** The level the failure is logged at (logLevelOf its kind; for HTTP's own failures, error at 5xx). */
  level: FailureLogLevel;
  closeConnection: boolean;
  /** Headers the error answer carries: Connection: close, or WWW-Authenticate on a 401 (RFC 6750). */
  headers: OutgoingHttpHeaders;
}

/** The one place that turns anything thrown into an HTTP status (Triton's mapping via httpStatusOf). */
export function reportOf(error: unknown): ErrorReport {
  if (error instanceof HttpStatusError) {
    const headers: OutgoingHttpHeaders = {
      ...(error.status === 429 ? { "Retry-After": "1" } : {}),
      ...error.headers,
      ...(error.closeConnection ? { Connection: "close" } : {}),
    };
    return {
      status: error.status,
      message: error.message,
      kind: undefined,
      level: error.status >= 500 ? "error" : "info",
      closeConnection: error.closeConnection,
      headers,
    };
  }
  // OperonErrors keep their text; anything else (a bug) gets a fixed one, its details only in the log (requestFailureOf).
  const { kind, message, level } = requestFailureOf(error);
  const status = httpStatusOf(kind);
  // 429 (a key over its quota, a request over a size budget) always says when to retry: a quota refills within a second.
  // A tenant over its share (and a gate full of waiting requests) says how long to wait, and a model the
  // resource scheduler unloaded when to come back (parked-models.ts): OperonError.retryAfterSecs.
  const retryAfter = error instanceof OperonError ? error.retryAfterSecs : undefined;
  const headers: OutgoingHttpHeaders =
    status === 401
      ? { "WWW-Authenticate": "Bearer" }
      : status === 429 || retryAfter !== undefined
        ? { "Retry-After": String(retryAfter ?? 1) }
        : {};
  return { status, message, kind, level, closeConnection: false, headers };
}
