import { pino, type Logger as PinoLogger } from "pino";

/**
 * Structured JSON logs (pino). The gateway's internals use pino's Logger
 * (worker log relay needs debug); what the gateway shares with other
 * packages (the frontends' options) is the Logger interface of
 * @operon/protocol/logger, which pino's fits. Failed requests log at
 * logLevelOf(kind) (@operon/protocol/errors).
 */
export type Logger = PinoLogger;

export function createLogger(options: { verbose?: number; destination?: NodeJS.WritableStream } = {}): Logger {
  const level = (options.verbose ?? 0) > 0 ? "debug" : "info";
  return pino({ name: "operon", level, base: { pid: process.pid } }, options.destination as never);
}
