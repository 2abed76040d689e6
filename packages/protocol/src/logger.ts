/**
 * The logging surface every Operon package takes: a structured object (or
 * a bare message) first, the message second. pino's Logger fits it, so the
 * gateway and the control plane hand theirs straight through; tests pass a
 * recorder. Packages depend on this shape, never on pino itself.
 */
export interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  /** Verbose detail (Triton's log_verbose_level > 0); optional: a logger without it writes none. */
  debug?(obj: object | string, msg?: string): void;
  /** Whether a line at `level` would be written now, so per-request verbose lines cost nothing when off. */
  isLevelEnabled?(level: string): boolean;
}

/**
 * How a log line names the client requests it belongs to (their X-Request-Id):
 * `requestId` for one, `requestIds` for several served by one execution.
 */
export function logIdFields(logIds: readonly string[]): { requestId: string } | { requestIds: readonly string[] } {
  return logIds.length === 1 ? { requestId: logIds[0]! } : { requestIds: logIds };
}
