import type { InferRequest } from "@operon/protocol/inference";

/**
 * What the frontends see of the trace extension: a tracer that says, with
 * one flag, whether any tracing is on (so an untraced request costs one
 * branch), starts a request's trace when it is sampled, and the settings
 * API (GET|POST v2[/models/M]/trace/setting, gRPC TraceSetting). The server
 * wires it to OpenTelemetry (observability/request-tracing.ts).
 */
export interface RequestTracer {
  /** False while every trace_level is OFF. */
  readonly enabled: boolean;
  /** The request's trace when this request is sampled, else undefined. `carrier` holds W3C traceparent/tracestate. */
  start(model: string, carrier: TraceCarrier, transport: "http" | "grpc"): RequestTrace | undefined;
}

export interface TraceCarrier {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

export interface RequestTrace {
  /** trace_level TENSORS: record the tensors' names, datatypes and shapes too. */
  readonly tensors: boolean;
  /** Starts a child span of the request's; call the result to end it. */
  step(name: string): () => void;
  /**
   * Starts the engine's span for `request` and sets its onTimings, so that
   * once it has run the span gets children for the queue, compute input,
   * compute infer and compute output (laid end to end from the engine's
   * start, with the durations the statistics record) and one per operator
   * step that ran (at its own times). The span's W3C traceparent goes
   * into the request's parameters (`traceparent`), so a backend in a worker
   * process can continue the trace. Call the result to end the span.
   */
  engine(request: InferRequest): () => void;
  attributes(values: Record<string, string | number | boolean>): void;
  /** Ends the request's span; an error marks it failed. */
  end(error?: unknown): void;
}

export interface TraceControl {
  get(model?: string): Record<string, string | string[]>;
  update(model: string | undefined, changes: Record<string, unknown>): Record<string, string | string[]>;
}
