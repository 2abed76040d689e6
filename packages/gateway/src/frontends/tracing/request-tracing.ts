import {
  ROOT_CONTEXT,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { InferRequest, RequestTimings } from "@operon/protocol/inference";
import type { RequestTrace, RequestTracer, TraceCarrier, TraceControl } from "../tracing-api.js";
import type { TraceConfig } from "./trace-config.js";
import { TraceSettings } from "./trace-settings.js";

/**
 * The trace extension on OpenTelemetry's own SDK: a sampled request gets a
 * SERVER span (continuing the client's W3C traceparent when it sent one)
 * with child spans for the steps the frontend times, exported in batches
 * over OTLP/HTTP to --trace-config opentelemetry,url=... The provider is
 * private to Operon (never registered globally), so a backend's own
 * OpenTelemetry use is not affected.
 */
export class OpenTelemetryTracing implements RequestTracer {
  readonly settings: TraceSettings;
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(config: TraceConfig, serviceVersion: string) {
    this.settings = new TraceSettings(config.settings);
    const exporter = new OTLPTraceExporter({ url: config.url });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({
        "service.name": "operon",
        "service.version": serviceVersion,
        ...config.resource,
      }),
      spanProcessors: [
        new BatchSpanProcessor(exporter, {
          scheduledDelayMillis: config.scheduleDelayMs,
          maxQueueSize: config.maxQueueSize,
          maxExportBatchSize: Math.min(config.maxExportBatchSize, config.maxQueueSize),
        }),
      ],
    });
    this.tracer = this.provider.getTracer("operon-gateway", serviceVersion);
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  start(model: string, carrier: TraceCarrier, transport: "http" | "grpc"): RequestTrace | undefined {
    const level = this.settings.sample(model);
    if (level === undefined) return undefined;
    const parent =
      carrier.traceparent !== undefined
        ? this.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter)
        : ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      `${transport === "http" ? "HTTP" : "gRPC"} infer ${model}`,
      { kind: SpanKind.SERVER, attributes: { "operon.model": model, "operon.transport": transport } },
      parent,
    );
    return new SpanTrace(this.tracer, this.propagator, span, trace.setSpan(ROOT_CONTEXT, span), level === "TENSORS");
  }

  control(): TraceControl {
    return {
      get: (model) => this.settings.get(model),
      update: (model, changes) => this.settings.update(model, changes),
    };
  }

  /** Exports what is buffered and stops; idempotent. */
  async stop(): Promise<void> {
    await this.provider.shutdown().catch(() => undefined);
  }
}

/** The span that covers a request's time in the engine (queue and compute). */
const ENGINE_SPAN = "engine (queue + compute)";

/** A performance.now() reading as milliseconds since the epoch, which OpenTelemetry takes as a start or end time. */
function epochMs(performanceMs: number): number {
  return performance.timeOrigin + performanceMs;
}

class SpanTrace implements RequestTrace {
  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: W3CTraceContextPropagator,
    private readonly span: Span,
    private readonly context: Context,
    readonly tensors: boolean,
  ) {}

  step(name: string): () => void {
    const child = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL }, this.context);
    return () => child.end();
  }

  engine(request: InferRequest): () => void {
    const startedAt = performance.now();
    // One clock for the span and the phases laid out from its start.
    const span = this.tracer.startSpan(
      ENGINE_SPAN,
      { kind: SpanKind.INTERNAL, startTime: epochMs(startedAt) },
      this.context,
    );
    const context = trace.setSpan(this.context, span);
    request.onTimings = (timings) => this.timingSpans(context, startedAt, timings);
    // Carried to the backend: a TypeScript model reads request.parameters.traceparent (W3C) to continue the trace
    // in its worker process with its own spans, children of this one.
    const carrier: Record<string, string> = {};
    this.propagator.inject(context, carrier, defaultTextMapSetter);
    if (carrier["traceparent"] !== undefined) {
      request.parameters = { ...request.parameters, traceparent: carrier["traceparent"] };
    }
    return () => span.end(epochMs(performance.now()));
  }

  attributes(values: Record<string, string | number | boolean>): void {
    this.span.setAttributes(values);
  }

  /** The engine span's children, from the request's timings (times on the performance.now() clock). */
  private timingSpans(context: Context, engineStartedAt: number, timings: RequestTimings): void {
    let at = engineStartedAt;
    for (const [name, ns] of [
      ["queue", timings.queueNs],
      ["compute input", timings.computeInputNs],
      ["compute infer", timings.computeInferNs],
      ["compute output", timings.computeOutputNs],
    ] as const) {
      const endAt = at + ns / 1e6;
      this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: epochMs(at) }, context).end(epochMs(endAt));
      at = endAt;
    }
    for (const step of timings.steps ?? []) {
      this.tracer
        .startSpan(
          `step ${step.step}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: epochMs(step.startedAtMs),
            attributes: {
              "operon.step": step.step,
              "operon.step.status": step.status,
              ...(step.model !== undefined ? { "operon.model": step.model } : {}),
            },
          },
          context,
        )
        .end(epochMs(step.endedAtMs));
    }
  }

  end(error?: unknown): void {
    if (error !== undefined) {
      this.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    this.span.end();
  }
}
