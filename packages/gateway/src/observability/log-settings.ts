import { OperonError } from "@operon/protocol/errors";

/**
 * Triton's logging extension (extension_logging.md): the log settings the
 * server runs with, changed at run time through `POST v2/logging` or gRPC
 * LogSettings. The logger (observability/logger.ts) consults this object on
 * every line: which levels are on (log_info / log_warning / log_error),
 * whether debug detail is written (log_verbose_level > 0) and the time
 * format (log_format: "default" = epoch milliseconds, "ISO8601").
 *
 * log_file is reported ("" = standard output) but cannot be changed over
 * the API: pointing the server's log at a path a caller picks would let
 * that caller create or overwrite files as the server's user.
 */
export interface LogSettingsValues {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: "default" | "ISO8601";
}

const FORMATS = ["default", "ISO8601"] as const;
/** Triton's log_verbose_level is a uint32. */
const MAX_VERBOSE_LEVEL = 2 ** 32 - 1;

/** pino's numeric levels. */
const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;

export class LogSettings {
  private values: LogSettingsValues;

  constructor(initial: Partial<LogSettingsValues> = {}) {
    this.values = {
      log_file: "",
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: "default",
      ...initial,
    };
  }

  get(): LogSettingsValues {
    return { ...this.values };
  }

  /**
   * Applies a partial update (only the keys given change) after checking
   * every key; nothing changes when one is wrong. Returns the new settings.
   */
  update(changes: Record<string, unknown>): LogSettingsValues {
    const next = { ...this.values };
    for (const [key, value] of Object.entries(changes)) {
      switch (key) {
        case "log_info":
        case "log_warning":
        case "log_error":
          if (typeof value !== "boolean") throw invalid(key, "must be a boolean", value);
          next[key] = value;
          break;
        case "log_verbose_level":
          if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_VERBOSE_LEVEL) {
            throw invalid(key, "must be an unsigned 32-bit integer", value);
          }
          next.log_verbose_level = value;
          break;
        case "log_format":
          if (typeof value !== "string" || !(FORMATS as readonly string[]).includes(value)) {
            throw invalid(key, `must be one of ${FORMATS.join(", ")}`, value);
          }
          next.log_format = value as LogSettingsValues["log_format"];
          break;
        case "log_file":
          if (value !== this.values.log_file) {
            throw new OperonError(
              "UNSUPPORTED",
              "log_file cannot be changed at run time on this server (the log goes to standard output; redirect it when starting the server)",
            );
          }
          break;
        default:
          throw new OperonError(
            "INVALID_ARG",
            `unknown log setting '${key}'; the settings are log_file, log_info, log_warning, log_error, log_verbose_level and log_format`,
          );
      }
    }
    this.values = next;
    return this.get();
  }

  /** Whether a line at this pino level is written now. */
  allows(level: number): boolean {
    if (level < INFO) return level >= DEBUG && this.values.log_verbose_level > 0;
    if (level < WARN) return this.values.log_info;
    if (level < ERROR) return this.values.log_warning;
    return this.values.log_error;
  }

  /** The lowest level any line may be written at: pino skips building lines below it. */
  threshold(): "debug" | "info" {
    return this.values.log_verbose_level > 0 ? "debug" : "info";
  }

  /** pino's timestamp option: the `,"time":…` fragment in the format asked for. */
  readonly timestamp = (): string =>
    this.values.log_format === "ISO8601" ? `,"time":"${new Date().toISOString()}"` : `,"time":${Date.now()}`;
}

function invalid(key: string, what: string, value: unknown): OperonError {
  return new OperonError("INVALID_ARG", `log setting '${key}' ${what}, got ${JSON.stringify(value) ?? String(value)}`);
}
