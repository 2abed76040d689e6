import { describe, expect, it } from "vitest";
import { DEFAULT_OTLP_URL, parseTraceConfig } from "./trace-config.js";
import { TraceSettings } from "./trace-settings.js";

describe("--trace-config", () => {
  it("reads tritonserver's global and opentelemetry settings", () => {
    const config = parseTraceConfig([
      "mode=opentelemetry",
      "level=TIMESTAMPS",
      "level=TENSORS",
      "rate=5",
      "count=-1",
      "opentelemetry,url=collector:4318/v1/traces",
      "opentelemetry,resource=deployment=prod",
      "opentelemetry,bsp_schedule_delay=250",
    ]);
    expect(config.settings).toEqual({ trace_level: ["TIMESTAMPS", "TENSORS"], trace_rate: 5, trace_count: -1 });
    expect(config.url).toBe("http://collector:4318/v1/traces");
    expect(config.resource).toEqual({ deployment: "prod" });
    expect(config.scheduleDelayMs).toBe(250);
    expect(parseTraceConfig([]).url).toBe(DEFAULT_OTLP_URL);
  });

  it.each([
    ["mode=triton", /only mode=opentelemetry/],
    ["triton,file=/tmp/t.json", /file mode is not offered/],
    ["file=/tmp/t.json", /trace files are not written/],
    ["level=LOUD", /OFF, TIMESTAMPS or TENSORS/],
    ["rate=0", /whole number >= 1/],
    ["opentelemetry,url=ftp://x", /http or https/],
    ["opentelemetry,colour=blue", /unknown opentelemetry setting/],
    ["jaeger,url=x", /unknown trace mode 'jaeger'/],
    ["level", /expected <setting>=<value>/],
  ])("refuses %s", (entry, message) => {
    expect(() => parseTraceConfig([entry])).toThrow(message);
  });
});

describe("TraceSettings sampling", () => {
  it("is disabled while every level is OFF, and samples one in trace_rate up to trace_count", () => {
    const settings = new TraceSettings();
    expect(settings.enabled).toBe(false);
    settings.update("m", { trace_level: ["TIMESTAMPS"], trace_rate: "3", trace_count: "2" });
    expect(settings.enabled).toBe(true);
    const picks = Array.from({ length: 12 }, () => settings.sample("m"));
    expect(picks.map((level) => level !== undefined)).toEqual([
      false,
      false,
      true,
      false,
      false,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    // Another model follows the global settings: OFF.
    expect(settings.sample("other")).toBeUndefined();
    settings.update("m", { trace_level: null });
    expect(settings.enabled).toBe(false);
  });
});
