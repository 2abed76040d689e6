import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { httpStatusOf, isOperonError } from "@operon/protocol/errors";
import { HttpStatusError } from "./http-errors.js";

/**
 * Response writers. Every body is sent with an exact Content-Length so
 * keep-alive connections can be reused; nothing is written once the client
 * is gone.
 */

export function sendBody(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Buffer | readonly Buffer[]): void {
  if (res.headersSent || res.destroyed) return;
  const chunks: readonly Buffer[] = Buffer.isBuffer(body) ? [body] : body;
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  res.writeHead(status, { ...headers, "Content-Length": length });
  if (chunks.length === 1) {
    res.end(chunks[0]);
    return;
  }
  // Corked so the JSON header and small tensors leave in as few packets as possible.
  res.cork();
  for (const chunk of chunks) res.write(chunk);
  res.end();
  res.uncork();
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendBody(res, status, { "Content-Type": "application/json" }, Buffer.from(JSON.stringify(value), "utf8"));
}

/** Health and control endpoints answer with the status alone. */
export function sendEmpty(res: ServerResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "Content-Length": 0 });
  res.end();
}

/** Every error is `{"error": "<message>"}`, as in KServe v2. */
export function sendError(res: ServerResponse, status: number, message: string, headers: OutgoingHttpHeaders = {}): void {
  sendBody(res, status, { ...headers, "Content-Type": "application/json" }, Buffer.from(JSON.stringify({ error: message }), "utf8"));
}

export interface ErrorReport {
  status: number;
  message: string;
  /** True for failures that are the server's fault (logged at error); false for the client's. */
  serverFault: boolean;
  closeConnection: boolean;
  /** Headers the error answer carries: Connection: close, or WWW-Authenticate on a 401 (RFC 6750). */
  headers: OutgoingHttpHeaders;
}

/** The one place that turns anything thrown into an HTTP status (Triton's mapping via httpStatusOf). */
export function reportOf(error: unknown): ErrorReport {
  if (isOperonError(error)) {
    const status = httpStatusOf(error.kind);
    const headers: OutgoingHttpHeaders = status === 401 ? { "WWW-Authenticate": "Bearer" } : {};
    return { status, message: error.message, serverFault: status === 500, closeConnection: false, headers };
  }
  if (error instanceof HttpStatusError) {
    const headers: OutgoingHttpHeaders = { ...error.headers, ...(error.closeConnection ? { Connection: "close" } : {}) };
    return { status: error.status, message: error.message, serverFault: error.status >= 500, closeConnection: error.closeConnection, headers };
  }
  // A bug, not a contract error: its text may expose internals, so the client gets a fixed message and the log the details.
  return { status: 500, message: "internal server error", serverFault: true, closeConnection: false, headers: {} };
}
