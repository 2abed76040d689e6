import type { ServerResponse } from "node:http";
import { requestIdHeaderOf } from "./http-respond.js";

/**
 * Server-sent events (text/event-stream) for the streaming endpoints,
 * generate_stream and infer_stream: one `data: <json>` event per response,
 * written (and so flushed: nothing is corked) as it comes.
 *
 * The status line and headers leave with the first event: a request that
 * fails before any response still gets a plain JSON error with its own
 * status (sendError in http-respond). After the first event the status is
 * 200 whatever happens; errors then travel as `data: {"error": "..."}`
 * events, as in Triton's generate_stream.
 */
export class EventStream {
  private opened = false;

  constructor(private readonly res: ServerResponse) {}

  /** True once the status line went out (the HTTP status is fixed). */
  get started(): boolean {
    return this.opened;
  }

  /** False once the client is gone or the stream ended: later events are dropped. */
  get writable(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  /** One event; json must be one line (JSON.stringify output is). */
  send(json: string): void {
    if (!this.writable) return;
    this.open();
    this.res.write(`data: ${json}\n\n`);
  }

  /** An error event: `{"error": message}`. */
  sendError(message: string): void {
    this.send(JSON.stringify({ error: message }));
  }

  /** Ends the body (a stream without any event is an empty 200 stream). */
  end(): void {
    if (!this.writable) return;
    this.open();
    this.res.end();
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache",
      // A server that is stopping asked for the connection to close; keep that.
      Connection: this.res.getHeader("Connection") === "close" ? "close" : "keep-alive",
      // Proxies such as nginx would otherwise buffer the events.
      "X-Accel-Buffering": "no",
      ...requestIdHeaderField(this.res),
    });
    this.res.socket?.setNoDelay(true);
  }
}

/** The X-Request-Id field for an object of headers (http-respond.ts setRequestIdHeader). */
function requestIdHeaderField(res: ServerResponse): { "X-Request-Id"?: string } {
  const requestId = requestIdHeaderOf(res);
  return requestId === undefined ? {} : { "X-Request-Id": requestId };
}
