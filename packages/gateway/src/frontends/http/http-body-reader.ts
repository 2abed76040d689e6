import type { IncomingMessage, ServerResponse } from "node:http";
import { createGunzip, createInflate } from "node:zlib";
import { OperonError } from "@operon/protocol/errors";
import { ClientClosedError, HttpStatusError } from "./http-errors.js";
import type { BodyWatch, SlowBodyGuard, SlowBodyTarget } from "./slow-body-guard.js";

/** Triton's --http-max-input-size default (64 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Declared bodies at least this large are read into one buffer of their own, allocated up front. */
const PREALLOCATE_BYTES = 64 * 1024;

/**
 * Bytes of one body taken in one turn of the event loop; then its reading
 * pauses until the next turn (setImmediate), so that other requests are
 * served between. libuv reads up to 32 × 64 KiB from a socket in one go,
 * and each fresh page of a large body's buffer costs a page fault: on a VM
 * 2 MiB took 20-40 ms, which is what health probes waited for while 64 MiB
 * bodies arrived (bench section 5).
 */
export const BODY_BYTES_PER_TURN = 256 * 1024;

/**
 * Request bytes held at once by all bodies being read, inflated or decoded,
 * so many large bodies cannot together exhaust memory. Bytes are counted as
 * they arrive (and, for gzip/deflate bodies, as they inflate), never as
 * declared: a client that declares 64 MiB and sends 7 bytes holds 7 bytes,
 * not a share of everyone's budget. A body whose next bytes would take the
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

  /** A body's account: add() bytes as they arrive (throws 503 past the limit); release() once, when the request is done. */
  open(): BodyBytesLease {
    let held = 0;
    let released = false;
    return {
      add: (bytes) => {
        if (released) return;
        if (bytes > 0 && this.used + bytes > this.limitBytes) throw this.refusal(bytes);
        this.used += bytes;
        held += bytes;
      },
      fits: (bytes) => {
        if (bytes > 0 && this.used + bytes > this.limitBytes) throw this.refusal(bytes);
      },
      release: () => {
        if (released) return;
        released = true;
        this.used -= held;
        held = 0;
      },
    };
  }

  private refusal(bytes: number): HttpStatusError {
    return new HttpStatusError(
      503,
      `the server holds ${this.used} bytes of request bodies already; ${bytes} more would pass its limit of ${this.limitBytes} (--http-max-inflight-body-bytes): retry shortly`,
      { headers: { "Retry-After": "1" }, closeConnection: true },
    );
  }
}

export interface BodyBytesLease {
  /** Counts bytes that arrived (or inflated); throws 503 when they do not fit. */
  add(bytes: number): void;
  /** Throws 503 when `bytes` more would not fit now (a declared length checked up front; nothing is held). */
  fits(bytes: number): void;
  release(): void;
}

/** How bodies are read: the shared budget, the slow-body guard, the inflation cap. */
export interface BodyReading {
  budget?: BodyBytesBudget;
  slowBodies?: SlowBodyGuard;
  /** A gzip/deflate body may inflate to at most this many times its size (and at least INFLATE_FLOOR_BYTES). */
  maxInflateRatio?: number;
}

/** Any compressed body may inflate this far whatever its ratio: tiny bodies of JSON compress well. */
export const INFLATE_FLOOR_BYTES = 64 * 1024;

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

/** Where a request's one close listener finds the release of its body's budget (http-context.ts RequestLife). */
export interface BodyRelease {
  releaseBody: (() => void) | undefined;
}

/**
 * Reads the whole request body, refusing more than maxBytes: a declared
 * Content-Length over the limit is refused before a byte is read, a chunked
 * body as soon as it crosses the limit (reading stops; the 413 must close
 * the connection). Bytes count against the budget as they arrive; a body
 * that pauses or trickles is cut off by the slow-body guard (408). A
 * gzip/deflate Content-Encoding is undone as a stream, the inflated bytes
 * counted against the budget as they come and capped by maxBytes and the
 * inflation ratio. A client waiting on "Expect: 100-continue" is told to go
 * ahead only once the declared length has passed the limits.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  reading: BodyReading = {},
  life?: BodyRelease,
): Promise<Buffer> {
  let raw: Promise<Buffer>;
  let lease: BodyBytesLease | undefined;
  try {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > maxBytes) throw bodyTooLarge(declared, maxBytes);
    if (reading.budget !== undefined) {
      lease = reading.budget.open();
      // Refuse at once what clearly cannot fit now, but hold nothing for bytes not yet sent.
      if (declared !== undefined) lease.fits(declared);
      // Released when the response closes: by the request's one close listener when it has one (`life`).
      if (life !== undefined) life.releaseBody = lease.release;
      else res.once("close", lease.release);
    }
    if (req.headers.expect?.toLowerCase() === "100-continue" && !res.headersSent) res.writeContinue();
    raw = collect(req, maxBytes, declared, lease, reading.slowBodies);
  } catch (error) {
    return Promise.reject(error);
  }
  // Not an async function, and no second promise for a body that is not encoded (most): this runs for every request.
  const encoding = req.headers["content-encoding"];
  if (encoding === undefined) return raw;
  return raw.then((body) =>
    decodeContentEncoding(body, encoding, maxBytes, reading.maxInflateRatio ?? Infinity, lease),
  );
}

/**
 * The body's bytes. A large declared body is copied chunk by chunk into one
 * buffer allocated up front (no large copy at the end, and the buffer is
 * the body's alone, so it can be moved to a decode thread; its pages are
 * touched, and so resident, only as bytes arrive).
 */
function collect(
  req: IncomingMessage,
  maxBytes: number,
  declared: number | undefined,
  lease: BodyBytesLease | undefined,
  guard: SlowBodyGuard | undefined,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const carrying = req as CarryingBody;
    if (carrying[BODY] !== undefined) throw new Error("the request body is being read already");
    const body = new BodyCollection(req, maxBytes, declared, lease, resolve, reject);
    carrying[BODY] = body;
    body.watch = guard?.watch(body);
    req.on("data", onBodyData);
    req.on("end", onBodyEnd);
    req.on("error", onBodyError);
    req.on("close", onBodyClose);
  });
}

/** Where a request being read keeps its BodyCollection, for the listeners below. */
const BODY = Symbol("operon.body");
type CarryingBody = IncomingMessage & { [BODY]?: BodyCollection };

// The listeners are module functions, not closures: `this` is the request, which holds its collection. Every
// request with a body runs them; one object per body replaces a closure per listener and per helper.
function onBodyData(this: IncomingMessage, chunk: Buffer): void {
  (this as CarryingBody)[BODY]?.data(chunk);
}
function onBodyEnd(this: IncomingMessage): void {
  (this as CarryingBody)[BODY]?.end();
}
function onBodyError(this: IncomingMessage): void {
  (this as CarryingBody)[BODY]?.clientClosed();
}
function onBodyClose(this: IncomingMessage): void {
  if (!this.complete) (this as CarryingBody)[BODY]?.clientClosed();
}
function resumeBody(body: BodyCollection): void {
  body.nextTurn();
}

/** One body being read: what its listeners share, and how it settles (once). */
class BodyCollection implements SlowBodyTarget {
  watch: BodyWatch | undefined;
  private readonly chunks: Buffer[] = [];
  private readonly whole: Buffer | undefined;
  private total = 0;
  private turnBytes = 0;
  private settled = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly maxBytes: number,
    private readonly declared: number | undefined,
    private readonly lease: BodyBytesLease | undefined,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.whole =
      declared !== undefined && declared >= PREALLOCATE_BYTES ? Buffer.from(new ArrayBuffer(declared)) : undefined;
  }

  data(chunk: Buffer): void {
    const offset = this.total;
    this.total += chunk.length;
    const { whole, maxBytes } = this;
    if (this.total > maxBytes || (whole !== undefined && this.total > whole.length)) {
      this.fail(
        this.total > maxBytes
          ? bodyTooLarge(this.total, maxBytes, true)
          : new HttpStatusError(400, `request body is longer than its Content-Length of ${this.declared} bytes`, {
              closeConnection: true,
            }),
      );
      return;
    }
    try {
      this.lease?.add(chunk.length);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.watch?.progress(chunk.length);
    if (whole !== undefined) whole.set(chunk, offset);
    else this.chunks.push(chunk);
    this.turnBytes += chunk.length;
    if (this.turnBytes >= BODY_BYTES_PER_TURN && this.total < (this.declared ?? Infinity)) {
      this.req.pause();
      setImmediate(resumeBody, this);
    }
  }

  end(): void {
    this.cleanup();
    const { whole, chunks, total } = this;
    if (whole !== undefined) this.resolve(total === whole.length ? whole : whole.subarray(0, total));
    else this.resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
  }

  clientClosed(): void {
    this.cleanup();
    this.reject(new ClientClosedError("client closed the connection while sending the request body"));
  }

  failSlowBody(error: HttpStatusError): void {
    this.fail(error);
  }

  nextTurn(): void {
    this.turnBytes = 0;
    if (!this.settled) this.req.resume();
  }

  private fail(error: unknown): void {
    this.cleanup();
    this.req.pause();
    this.reject(error);
  }

  private cleanup(): void {
    this.settled = true;
    this.watch?.done();
    const req = this.req;
    (req as CarryingBody)[BODY] = undefined;
    req.off("data", onBodyData);
    req.off("end", onBodyEnd);
    req.off("error", onBodyError);
    req.off("close", onBodyClose);
  }
}

/**
 * Undoes gzip/deflate as a stream: every inflated chunk counts against the
 * in-flight budget as it comes out (24 bodies of 63 KB, 1.5 MB counted, used
 * to inflate to 3.8 GB held), and inflation stops with 413 past maxBytes or
 * past maxRatio × the compressed size (at least INFLATE_FLOOR_BYTES).
 */
function decodeContentEncoding(
  body: Buffer,
  encoding: string | undefined,
  maxBytes: number,
  maxRatio: number,
  lease: BodyBytesLease | undefined,
): Promise<Buffer> {
  const name = encoding?.trim().toLowerCase() ?? "identity";
  if (name === "identity" || name === "") return Promise.resolve(body);
  const inflater =
    name === "gzip" || name === "x-gzip" ? createGunzip() : name === "deflate" ? createInflate() : undefined;
  if (inflater === undefined) {
    return Promise.reject(
      new OperonError("UNSUPPORTED", `unsupported Content-Encoding '${encoding}'; use gzip, deflate or identity`),
    );
  }
  const ratioCap = Math.max(INFLATE_FLOOR_BYTES, maxRatio * body.length);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let failed = false;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      inflater.destroy();
      reject(error);
    };
    inflater.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes)
        return fail(
          new HttpStatusError(413, `request body inflates to more than the limit of ${maxBytes} bytes`, {
            closeConnection: true,
          }),
        );
      if (total > ratioCap) {
        return fail(
          new HttpStatusError(
            413,
            `request body of ${body.length} bytes inflates to more than ${maxRatio} times its size (--http-max-inflate-ratio ${maxRatio})`,
            { closeConnection: true },
          ),
        );
      }
      try {
        lease?.add(chunk.length);
      } catch (error) {
        return fail(error);
      }
      chunks.push(chunk);
    });
    inflater.on("end", () => {
      if (!failed) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    });
    inflater.on("error", (error) =>
      fail(
        new OperonError("INVALID_ARG", `request body is not valid ${name} data: ${error.message}`, { cause: error }),
      ),
    );
    inflater.end(body);
  });
}

/** Parses a JSON body; an empty body is `undefined`, so optional-body endpoints can accept it. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new OperonError("INVALID_ARG", `malformed JSON in request body: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
