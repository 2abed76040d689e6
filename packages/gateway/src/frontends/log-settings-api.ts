/**
 * What the frontends see of the logging extension (GET|POST v2/logging,
 * gRPC LogSettings): read the settings, or change some and get them all
 * back. The server wires it to the logger's settings
 * (observability/log-settings.ts); both throw OperonError for a bad value.
 */
export interface LoggingControl {
  get(): Record<string, string | number | boolean>;
  update(changes: Record<string, unknown>): Record<string, string | number | boolean>;
}
