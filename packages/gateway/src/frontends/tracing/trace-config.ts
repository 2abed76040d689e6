import { OperonError } from "@operon/protocol/errors";
import type { TraceLevel, TraceSettingsValues } from "./trace-settings.js";

/**
 * tritonserver's --trace-config, repeatable: `<setting>=<value>` for the
 * global trace settings (level, rate, count, log-frequency, mode) and
 * `opentelemetry,<setting>=<value>` for the exporter (url, resource,
 * bsp_schedule_delay, bsp_max_queue_size, bsp_max_export_batch_size).
 * Only mode=opentelemetry is served: Triton's own JSON trace file
 * (mode=triton, file=...) is refused with a clear message.
 */
export interface TraceConfig {
  settings: Partial<TraceSettingsValues>;
  /** OTLP/HTTP endpoint (Triton's default: http://localhost:4318/v1/traces). */
  url: string;
  resource: Record<string, string>;
  scheduleDelayMs: number;
  maxQueueSize: number;
  maxExportBatchSize: number;
}

export const DEFAULT_OTLP_URL = "http://localhost:4318/v1/traces";

export function parseTraceConfig(entries: readonly string[]): TraceConfig {
  const config: TraceConfig = {
    settings: {},
    url: DEFAULT_OTLP_URL,
    resource: {},
    scheduleDelayMs: 5000,
    maxQueueSize: 2048,
    maxExportBatchSize: 512,
  };
  for (const entry of entries) {
    const comma = entry.indexOf(",");
    const equals = entry.indexOf("=");
    const scoped = comma !== -1 && (equals === -1 || comma < equals);
    const scope = scoped ? entry.slice(0, comma).trim() : "";
    const setting = scoped ? entry.slice(comma + 1) : entry;
    const at = setting.indexOf("=");
    if (at <= 0) throw bad(entry, "expected <setting>=<value> or opentelemetry,<setting>=<value>");
    const key = setting.slice(0, at).trim();
    const value = setting.slice(at + 1).trim();
    if (scope === "triton") throw bad(entry, "Triton's trace file mode is not offered; use mode=opentelemetry");
    if (scope !== "" && scope !== "opentelemetry") throw bad(entry, `unknown trace mode '${scope}'`);
    if (scope === "opentelemetry") {
      switch (key) {
        case "url":
          config.url = otlpUrl(entry, value);
          break;
        case "resource": {
          const inner = value.indexOf("=");
          if (inner <= 0) throw bad(entry, "resource takes <key>=<value>");
          config.resource[value.slice(0, inner)] = value.slice(inner + 1);
          break;
        }
        case "bsp_schedule_delay":
          config.scheduleDelayMs = whole(entry, value, 1);
          break;
        case "bsp_max_queue_size":
          config.maxQueueSize = whole(entry, value, 1);
          break;
        case "bsp_max_export_batch_size":
          config.maxExportBatchSize = whole(entry, value, 1);
          break;
        default:
          throw bad(entry, `unknown opentelemetry setting '${key}'`);
      }
      continue;
    }
    switch (key) {
      case "mode":
        if (value !== "opentelemetry") throw bad(entry, "only mode=opentelemetry is offered");
        break;
      case "level": {
        if (value !== "OFF" && value !== "TIMESTAMPS" && value !== "TENSORS")
          throw bad(entry, "level is OFF, TIMESTAMPS or TENSORS");
        const level: TraceLevel = value;
        config.settings.trace_level =
          value === "OFF"
            ? ["OFF"]
            : [...new Set([...(config.settings.trace_level ?? []).filter((other) => other !== "OFF"), level])];
        break;
      }
      case "rate":
        config.settings.trace_rate = whole(entry, value, 1);
        break;
      case "count":
        config.settings.trace_count = value === "-1" ? -1 : whole(entry, value, 0);
        break;
      case "log-frequency":
      case "log_frequency":
        config.settings.log_frequency = whole(entry, value, 0);
        break;
      case "file":
        throw bad(entry, "trace files are not written; traces go to the opentelemetry,url endpoint");
      default:
        throw bad(entry, `unknown trace setting '${key}'`);
    }
  }
  return config;
}

function otlpUrl(entry: string, value: string): string {
  const text = /^[a-z]+:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad(entry, "url is not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw bad(entry, "url must be http or https");
  return url.toString();
}

function whole(entry: string, value: string, min: number): number {
  const number = /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number < min) throw bad(entry, `expected a whole number >= ${min}`);
  return number;
}

function bad(entry: string, why: string): OperonError {
  return new OperonError("INVALID_ARG", `--trace-config '${entry}': ${why}`);
}
