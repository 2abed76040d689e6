import { randomUUID } from "node:crypto";

/** Longest X-Request-Id taken from a client; a longer one is replaced (it goes into every log line of the request). */
export const MAX_REQUEST_ID_LENGTH = 128;

/** Visible ASCII only: an id is echoed as a header and written to logs, so no control characters or spaces. */
const REQUEST_ID = /^[\x21-\x7e]+$/;

/**
 * The id a request's log lines carry and the client gets back
 * (X-Request-Id): the client's own when it sent a usable one, else a new
 * UUID. Triton's request `id` (body or message field) is logged beside it.
 */
export function requestIdOf(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  if (given !== undefined && given.length <= MAX_REQUEST_ID_LENGTH && REQUEST_ID.test(given)) return given;
  return randomUUID();
}
