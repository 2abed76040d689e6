import type { IncomingMessage, ServerResponse } from "node:http";
import { promisify } from "node:util";
import { gunzip, inflate } from "node:zlib";
import { OperonError } from "@operon/protocol/errors";
import { ClientClosedError, HttpStatusError } from "./http-errors.js";

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

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
export async function readBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > maxBytes) throw bodyTooLarge(declared, maxBytes);
  if (req.headers.expect?.toLowerCase() === "100-continue" && !res.headersSent) res.writeContinue();
  const raw = await collect(req, maxBytes);
  return decodeContentEncoding(raw, req.headers["content-encoding"], maxBytes);
}

function collect(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > maxBytes) {
        cleanup();
        req.pause();
        reject(bodyTooLarge(total, maxBytes, true));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
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
