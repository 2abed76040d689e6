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
}
