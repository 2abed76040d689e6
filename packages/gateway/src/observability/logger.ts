import { pino, type Logger as PinoLogger } from "pino";
import { LogSettings } from "./log-settings.js";

/**
 * Structured JSON logs (pino). The gateway's internals use pino's Logger
 * (worker log relay needs debug); what the gateway shares with other
 * packages (the frontends' options) is the Logger interface of
 * @operon/protocol/logger, which pino's fits. Failed requests log at
 * logLevelOf(kind) (@operon/protocol/errors).
 *
 * Every logger made here follows a LogSettings (the logging extension,
 * log-settings.ts): its levels, verbosity and time format change at run
 * time. logSettingsOf(logger) finds them.
 */
export type Logger = PinoLogger;

const settingsOf = new WeakMap<object, LogSettings>();

export function createLogger(
  options: {
    verbose?: number;
    destination?: NodeJS.WritableStream;
    /**
     * Every line goes to this file (appended, the folder made), and warnings and errors to stderr as well: a person
     * at a terminal reads the server's own lines, not its JSON log (apps/cli: --log-file). Ignores `destination`.
     */
    file?: string | undefined;
  } = {},
): Logger {
  const settings = new LogSettings({ log_verbose_level: options.verbose ?? 0 });
  const logger = pino(
    {
      name: "operon",
      level: settings.threshold(),
      base: { pid: process.pid },
      timestamp: settings.timestamp,
      hooks: {
        // Levels switched off with log_info / log_warning / log_error are dropped here, before the line is built.
        logMethod(args, method, level) {
          if (settings.allows(level)) method.apply(this, args);
        },
      },
    },
    (options.file !== undefined ? fileAndWarnings(options.file) : options.destination) as never,
  );
  settingsOf.set(logger, settings);
  return logger;
}

function fileAndWarnings(file: string) {
  return pino.multistream([
    { level: "trace", stream: pino.destination({ dest: file, mkdir: true, append: true, sync: true }) },
    { level: "warn", stream: process.stderr },
  ]);
}

/**
 * The settings a logger made by createLogger follows; undefined for any
 * other logger. Changing them through `update` also moves the logger's
 * pino level (debug lines are only built while log_verbose_level > 0).
 */
export function logSettingsOf(logger: object): LogSettings | undefined {
  return settingsOf.get(logger);
}

/** Applies a change of settings to the logger that follows them (its pino level). */
export function applyLogSettings(logger: Logger, settings: LogSettings): void {
  logger.level = settings.threshold();
}
