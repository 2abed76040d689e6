import { OperonError } from "@operon/protocol/errors";

/**
 * The bytes of ModelInfer / ModelStreamInfer messages the gRPC frontend
 * holds at once, over every call and stream: the gRPC side of HTTP's
 * --http-max-inflight-body-bytes. A message is counted from the moment its
 * handler receives it until its inference has answered (its tensors are
 * views of the message), so a flood of large messages is refused as each
 * arrives instead of queueing gigabytes behind the models. A message over
 * the budget is refused RESOURCE_EXHAUSTED (a stream gets the error as its
 * reply and stays open); the client retries once earlier calls finish.
 */
export class GrpcMessageBudget {
  private used = 0;

  constructor(readonly limitBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  /** Counts `bytes` held; the returned function gives them back (once, whatever how often it is called). */
  hold(bytes: number): () => void {
    if (bytes > 0 && this.used + bytes > this.limitBytes) {
      throw new OperonError(
        "RESOURCE_EXHAUSTED",
        `the server holds ${this.used} bytes of gRPC inference messages already; this one's ${bytes} more would pass its limit of ${this.limitBytes} (--grpc-max-inflight-message-bytes): retry shortly`,
      );
    }
    this.used += bytes;
    let held = bytes;
    return () => {
      this.used -= held;
      held = 0;
    };
  }
}
