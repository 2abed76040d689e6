import { OperonError } from "@operon/protocol/errors";

/**
 * Triton's trace extension settings (extension_trace.md), global and per
 * model: `trace_level` (OFF, TIMESTAMPS, TENSORS), `trace_rate` (trace one
 * request in N), `trace_count` (traces left, -1 = no limit),
 * `log_frequency` and `trace_file` (both reported; they only matter to
 * Triton's own file mode), plus `trace_mode` (always opentelemetry here).
 * Values travel as Triton sends them: strings, trace_level a list.
 *
 * A model's own settings override the global ones key by key; a null in
 * an update clears that key for the model (it follows the global one
 * again). Sampling is per model: each keeps its own request counter and
 * count of traces left.
 */

export type TraceLevel = "OFF" | "TIMESTAMPS" | "TENSORS";

export interface TraceSettingsValues {
  trace_level: TraceLevel[];
  trace_rate: number;
  trace_count: number;
  log_frequency: number;
  trace_file: string;
}

/** What GET answers: every value as Triton writes it. */
export type TraceSettingsWire = Record<string, string | string[]>;

const LEVELS: readonly TraceLevel[] = ["OFF", "TIMESTAMPS", "TENSORS"];
const KEYS = ["trace_level", "trace_rate", "trace_count", "log_frequency", "trace_file"] as const;
type Key = (typeof KEYS)[number];

/** Triton's defaults: off, one in 1000, no count limit. */
export const TRACE_DEFAULTS: TraceSettingsValues = {
  trace_level: ["OFF"],
  trace_rate: 1000,
  trace_count: -1,
  log_frequency: 0,
  trace_file: "",
};

interface Sampler {
  seen: number;
  /** Traces left of the current trace_count (-1 = no limit). */
  left: number;
}

export class TraceSettings {
  private global: TraceSettingsValues;
  private readonly models = new Map<string, Partial<TraceSettingsValues>>();
  private readonly samplers = new Map<string, Sampler>();
  /** False while every level everywhere is OFF: the request path then costs one branch. */
  enabled = false;

  constructor(initial: Partial<TraceSettingsValues> = {}) {
    this.global = { ...TRACE_DEFAULTS, ...initial };
    this.refresh();
  }

  /** The settings that apply to `model` (undefined = the global ones), as Triton's JSON. */
  get(model?: string): TraceSettingsWire {
    const values = this.effective(model);
    return {
      trace_level: [...values.trace_level],
      trace_rate: String(values.trace_rate),
      trace_count: String(values.trace_count),
      log_frequency: String(values.log_frequency),
      trace_file: values.trace_file,
      trace_mode: "opentelemetry",
    };
  }

  /** Applies an update (checked whole first), for one model or globally; answers the new effective settings. */
  update(model: string | undefined, changes: Record<string, unknown>): TraceSettingsWire {
    const parsed: Partial<Record<Key, unknown>> = {};
    for (const [key, value] of Object.entries(changes)) {
      if (key === "trace_mode") {
        if (value !== null && value !== "opentelemetry" && !(Array.isArray(value) && value[0] === "opentelemetry")) {
          throw new OperonError("UNSUPPORTED", "trace_mode can only be opentelemetry on this server");
        }
        continue;
      }
      if (!(KEYS as readonly string[]).includes(key)) {
        throw new OperonError(
          "INVALID_ARG",
          `unknown trace setting '${key}'; the settings are ${KEYS.join(", ")} and trace_mode`,
        );
      }
      if (value === null) {
        if (model === undefined)
          throw new OperonError("INVALID_ARG", `trace setting '${key}': null only clears a model's own setting`);
        parsed[key as Key] = null;
        continue;
      }
      parsed[key as Key] = parseValue(key as Key, value, this.global.trace_file);
    }
    if (model === undefined) {
      this.global = { ...this.global, ...(parsed as Partial<TraceSettingsValues>) };
      this.samplers.clear();
    } else {
      const own = { ...(this.models.get(model) ?? {}) } as Record<string, unknown>;
      for (const [key, value] of Object.entries(parsed)) {
        if (value === null) delete own[key];
        else own[key] = value;
      }
      if (Object.keys(own).length === 0) this.models.delete(model);
      else this.models.set(model, own as Partial<TraceSettingsValues>);
      this.samplers.delete(model);
    }
    this.refresh();
    return this.get(model);
  }

  /**
   * Whether this request of `model` is traced, and at which level: its
   * level is not OFF, it is the rate-th since the last traced one, and the
   * count is not used up. Called only while `enabled`.
   */
  sample(model: string): TraceLevel | undefined {
    const values = this.effective(model);
    const level = values.trace_level.includes("TENSORS")
      ? "TENSORS"
      : values.trace_level.includes("TIMESTAMPS")
        ? "TIMESTAMPS"
        : undefined;
    if (level === undefined) return undefined;
    let sampler = this.samplers.get(model);
    if (sampler === undefined) {
      sampler = { seen: 0, left: values.trace_count };
      this.samplers.set(model, sampler);
    }
    if (sampler.left === 0) return undefined;
    sampler.seen += 1;
    if (sampler.seen < values.trace_rate) return undefined;
    sampler.seen = 0;
    if (sampler.left > 0) sampler.left -= 1;
    return level;
  }

  private effective(model: string | undefined): TraceSettingsValues {
    const own = model === undefined ? undefined : this.models.get(model);
    return own === undefined ? this.global : { ...this.global, ...own };
  }

  private refresh(): void {
    const on = (levels: readonly TraceLevel[] | undefined): boolean =>
      levels !== undefined && levels.some((level) => level !== "OFF");
    this.enabled = on(this.global.trace_level) || [...this.models.values()].some((own) => on(own.trace_level));
  }
}

function parseValue(key: Key, value: unknown, currentFile: string): unknown {
  // Triton's clients send scalars as strings, some as one-element lists; numbers are taken too.
  const scalar = Array.isArray(value) && key !== "trace_level" && value.length === 1 ? value[0] : value;
  switch (key) {
    case "trace_level": {
      const list = Array.isArray(value) ? value : [value];
      if (
        list.length === 0 ||
        !list.every((level) => typeof level === "string" && (LEVELS as readonly string[]).includes(level))
      ) {
        throw new OperonError(
          "INVALID_ARG",
          `trace_level must be a list of ${LEVELS.join(", ")}, got ${JSON.stringify(value)}`,
        );
      }
      // OFF with anything else is contradictory: Triton takes OFF alone.
      if (list.includes("OFF") && list.length > 1) {
        throw new OperonError("INVALID_ARG", "trace_level OFF cannot be combined with other levels");
      }
      return [...new Set(list)] as TraceLevel[];
    }
    case "trace_rate":
      return integer(key, scalar, 1);
    case "trace_count":
      return integer(key, scalar, -1);
    case "log_frequency":
      return integer(key, scalar, 0);
    case "trace_file":
      if (scalar !== currentFile) {
        throw new OperonError(
          "UNSUPPORTED",
          "trace_file cannot be set on this server: traces go to the OpenTelemetry endpoint of --trace-config opentelemetry,url=...",
        );
      }
      return currentFile;
  }
}

function integer(key: string, value: unknown, min: number): number {
  const number = typeof value === "string" && /^-?\d{1,15}$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < min) {
    throw new OperonError("INVALID_ARG", `${key} must be an integer of at least ${min}, got ${JSON.stringify(value)}`);
  }
  return number;
}
