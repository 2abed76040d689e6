import type { IncomingMessage, ServerResponse } from "node:http";
import { promisify } from "node:util";
import { gunzip, inflate } from "node:zlib";
import { OperonError } from "@operon/protocol/errors";
import { ClientClosedError, HttpStatusError } from "./http-errors.js";

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

/** Triton's --http-max-input-size default (64 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Declared bodies at least this large are read into one buffer of their own, allocated up front. */
const PREALLOCATE_BYTES = 64 * 1024;

/**
 * Request bytes held at once by all bodies being read or decoded, so many
 * large bodies cannot together exhaust memory: a body that would take the
 * total past the limit is refused with 503 and Retry-After (the client may
 * try again once others are done). Each body's bytes are released when its
 * response finishes.
 */
export class BodyBytesBudget {
  private used = 0;
  constructor(readonly limitBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  /** Takes `bytes` or throws 503; call the returned function once, when the request is done with them. */
  take(bytes: number): () => void {
    if (bytes > 0 && this.used + bytes > this.limitBytes) {
      throw new HttpStatusError(
        503,
        `the server holds ${this.used} bytes of request bodies already; ${bytes} more would pass its limit of ${this.limitBytes} (--http-max-inflight-body-bytes): retry shortly`,
        { headers: { "Retry-After": "1" }, closeConnection: true },
      );
    }
    this.used += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
    };
  }
}

export function bodyTooLarge(bytes: number, maxBytes: number, atLeast = false): HttpStatusError {
  return new HttpStatusError(
    413,
    `request body of ${atLeast ? "at least " : ""}${bytes} bytes exceeds the limit of ${maxBytes} bytes`,
    { closeConnection: true },
  );
}

/** The declared Content-Length, or undefined for a chunked body. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers["content-length"];
  if (header === undefined) return undefined;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * Reads the whole request body, refusing more than maxBytes: a declared
 * Content-Length over the limit is refused before a byte is read, a chunked
 * body as soon as it crosses the limit (reading stops; the 413 must close
 * the connection). A gzip/deflate Content-Encoding is undone, with the
 * limit applied to the inflated size too. A client waiting on
 * "Expect: 100-continue" is told to go ahead only once the declared length
 * has passed the limit.
 */
export function readBody(req: IncomingMessage, res: ServerResponse, maxBytes: number, budget?: BodyBytesBudget): Promise<Buffer> {
  let raw: Promise<Buffer>;
  try {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > maxBytes) throw bodyTooLarge(declared, maxBytes);
    // The declared size is taken from the budget before a byte is read; a chunked body's as it arrives (below).
    if (budget !== undefined && declared !== undefined) res.once("close", budget.take(declared));
    if (req.headers.expect?.toLowerCase() === "100-continue" && !res.headersSent) res.writeContinue();
    raw = collect(req, maxBytes, declared, budget !== undefined && declared === undefined ? (bytes) => res.once("close", budget.take(bytes)) : undefined);
  } catch (error) {
    return Promise.reject(error);
  }
  // Not an async function, and no second promise for a body that is not encoded (most): this runs for every request.
  const encoding = req.headers["content-encoding"];
  if (encoding === undefined) return raw;
  return raw.then((body) => decodeContentEncoding(body, encoding, maxBytes));
}

/**
 * The body's bytes. A large declared body is copied chunk by chunk into one
 * buffer allocated up front (no large copy at the end, and the buffer is
 * the body's alone, so it can be moved to a decode thread).
 */
function collect(req: IncomingMessage, maxBytes: number, declared: number | undefined, onChunk?: (bytes: number) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const whole = declared !== undefined && declared >= PREALLOCATE_BYTES ? Buffer.from(new ArrayBuffer(declared)) : undefined;
    let total = 0;
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer): void => {
      const offset = total;
      total += chunk.length;
      if (total > maxBytes || (whole !== undefined && total > whole.length)) {
        cleanup();
        req.pause();
        reject(total > maxBytes ? bodyTooLarge(total, maxBytes, true) : new HttpStatusError(400, `request body is longer than its Content-Length of ${declared} bytes`, { closeConnection: true }));
        return;
      }
      try {
        onChunk?.(chunk.length);
      } catch (error) {
        cleanup();
        req.pause();
        reject(error);
        return;
      }
      if (whole !== undefined) whole.set(chunk, offset);
      else chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      if (whole !== undefined) resolve(total === whole.length ? whole : whole.subarray(0, total));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    };
    const onError = (): void => {
      cleanup();
      reject(new ClientClosedError("client closed the connection while sending the request body"));
    };
    const onClose = (): void => {
      if (req.complete) return;
      onError();
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

async function decodeContentEncoding(body: Buffer, encoding: string | undefined, maxBytes: number): Promise<Buffer> {
  const name = encoding?.trim().toLowerCase() ?? "identity";
  if (name === "identity" || name === "") return body;
  const decode = name === "gzip" || name === "x-gzip" ? gunzipAsync : name === "deflate" ? inflateAsync : undefined;
  if (decode === undefined) {
    throw new OperonError("UNSUPPORTED", `unsupported Content-Encoding '${encoding}'; use gzip, deflate or identity`);
  }
  try {
    return await decode(body, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new HttpStatusError(413, `request body inflates to more than the limit of ${maxBytes} bytes`, { cause: error });
    }
    throw new OperonError("INVALID_ARG", `request body is not valid ${name} data: ${(error as Error).message}`, { cause: error });
  }
}

/** Parses a JSON body; an empty body is `undefined`, so optional-body endpoints can accept it. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new OperonError("INVALID_ARG", `malformed JSON in request body: ${(error as Error).message}`, { cause: error });
  }
}
