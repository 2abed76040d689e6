/**
 * Errors that are about HTTP itself rather than inference, so they have no
 * OperonError kind: the status is given directly (413 for a body over the
 * limit). `closeConnection` is set when the request body was left unread,
 * since the connection cannot be reused until it is drained.
 */
export class HttpStatusError extends Error {
  readonly status: number;
  readonly closeConnection: boolean;
  /** Extra headers of the answer (e.g. Retry-After on a 503). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    message: string,
    options: { closeConnection?: boolean; cause?: unknown; headers?: Readonly<Record<string, string>> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "HttpStatusError";
    this.status = status;
    this.closeConnection = options.closeConnection ?? false;
    this.headers = options.headers ?? {};
  }
}

/** The client went away before the request finished: there is nobody to answer. */
export class ClientClosedError extends Error {
  constructor(message = "client closed the connection") {
    super(message);
    this.name = "ClientClosedError";
  }
}
