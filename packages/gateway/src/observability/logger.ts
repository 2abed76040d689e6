import { pino, type Logger as PinoLogger } from "pino";

/** Structured JSON logs (pino). Client errors log at info, server errors at error. */
export type Logger = PinoLogger;

export function createLogger(options: { verbose?: number; destination?: NodeJS.WritableStream } = {}): Logger {
  const level = (options.verbose ?? 0) > 0 ? "debug" : "info";
  return pino({ name: "operon", level, base: { pid: process.pid } }, options.destination as never);
}
