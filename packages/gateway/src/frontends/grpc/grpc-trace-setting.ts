import type * as grpc from "@grpc/grpc-js";
import type { TraceCarrier, TraceControl } from "../tracing-api.js";

/**
 * gRPC TraceSetting: settings are lists of strings (trace_level several,
 * the others one); an empty list clears a model's own setting (Triton's
 * "null"); no settings at all just reads them.
 */
export function traceSettingResponse(
  control: TraceControl,
  model: string | undefined,
  settings: Record<string, { value?: string[] }>,
): { settings: Record<string, { value: string[] }> } {
  const changes: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const values = setting.value ?? [];
    changes[key] = values.length === 0 ? null : key === "trace_level" ? values : values[0];
  }
  const answer = Object.keys(changes).length > 0 ? control.update(model, changes) : control.get(model);
  const out: Record<string, { value: string[] }> = {};
  for (const [key, value] of Object.entries(answer)) out[key] = { value: Array.isArray(value) ? value : [value] };
  return { settings: out };
}

/** The W3C trace context a gRPC client sent as metadata. */
export function traceCarrierOf(metadata: grpc.Metadata): TraceCarrier {
  const text = (key: string): string | undefined => {
    const value = metadata.get(key)[0];
    return typeof value === "string" ? value : undefined;
  };
  return { traceparent: text("traceparent"), tracestate: text("tracestate") };
}
