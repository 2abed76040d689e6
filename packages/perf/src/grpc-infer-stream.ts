import * as grpc from "@grpc/grpc-js";

/** The parts of a decoded ModelStreamInferResponse the stream reads. */
interface WireStreamResponse {
  error_message?: string;
  infer_response?: {
    id?: string;
    parameters?: Record<string, { bool_param?: boolean } | undefined> | null;
  } | null;
}

interface PendingRequest {
  resolve(): void;
  reject(error: Error): void;
  /** The first error a decoupled model answered; the request still ends at its final response. */
  error?: string;
}

/**
 * One ModelStreamInfer call that every request of a perf run shares, as
 * perf_analyzer's --streaming does. A request is sent with its own id and
 * `triton_enable_empty_final_response`, and completes at its final
 * response: the one response of a plain model, or the response that a
 * decoupled model marks `triton_final_response: true`. So the latency
 * measured is the time to the last response. A broken call fails every
 * request in flight; the next request opens a new call.
 */
export class GrpcInferStream {
  private call: grpc.ClientDuplexStream<Buffer, WireStreamResponse> | undefined;
  private readonly pending = new Map<string, PendingRequest>();
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly method: grpc.MethodDefinition<object, unknown>,
    private readonly metadata: grpc.Metadata,
  ) {}

  /**
   * Sends `prepared` (a serialised ModelInferRequest without an id) with
   * `extra` merged in: `extra(id)` returns a serialised ModelInferRequest
   * that sets the id and any parameters (protobuf merges concatenated messages).
   */
  send(prepared: Buffer, extra: (id: string) => Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the inference stream is closed"));
    const id = `perf-${(this.nextId++).toString(36)}`;
    const call = this.call ?? this.open();
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      call.write(Buffer.concat([prepared, extra(id)]));
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.fail(new Error("the inference stream was closed"));
    this.call?.cancel();
    this.call = undefined;
  }

  private open(): grpc.ClientDuplexStream<Buffer, WireStreamResponse> {
    const call = this.client.makeBidiStreamRequest<Buffer, WireStreamResponse>(
      this.method.path,
      (body: Buffer) => body,
      (bytes: Buffer) => this.method.responseDeserialize(bytes) as WireStreamResponse,
      this.metadata,
    );
    call.on("data", (response: WireStreamResponse) => this.onResponse(response));
    const broken = (error: Error): void => {
      if (this.call === call) this.call = undefined;
      this.fail(error);
    };
    call.on("error", (error: grpc.ServiceError) =>
      broken(new Error(`gRPC stream ${grpc.status[error.code] ?? error.code}: ${error.details}`, { cause: error })),
    );
    call.on("end", () => broken(new Error("the server ended the inference stream")));
    this.call = call;
    return call;
  }

  private onResponse(response: WireStreamResponse): void {
    const id = response.infer_response?.id ?? "";
    const request = this.pending.get(id);
    if (request === undefined) return;
    const errorMessage = response.error_message ?? "";
    if (errorMessage !== "" && request.error === undefined) request.error = errorMessage;
    const final = response.infer_response?.parameters?.["triton_final_response"]?.bool_param;
    // No final flag: a plain model's only response, or an error that ends the request.
    if (final === false) return;
    this.pending.delete(id);
    if (request.error !== undefined) request.reject(new Error(request.error));
    else request.resolve();
  }

  private fail(error: Error): void {
    const requests = [...this.pending.values()];
    this.pending.clear();
    for (const request of requests) request.reject(error);
  }
}
