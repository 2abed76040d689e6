import { OperonError } from "@operon/protocol/errors";

/**
 * Models the resource scheduler unloaded to free memory ("parked"): unlike
 * an unload by an admin, a request for one loads it again on demand.
 *
 * What the request gets meanwhile is the server's choice
 * (--parked-model-policy): "wait" (the default) holds it until the model
 * is loaded again, up to waitMs, and 503 + Retry-After past that;
 * "retry-after" answers 503 + Retry-After at once. Either way the first
 * request starts the load.
 *
 * Only the failure branch of a model lookup consults this (a loaded model's
 * lookup never does), so parking costs the request path nothing.
 */
export type ParkedModelMode = "wait" | "retry-after";

export interface ParkedModelPolicy {
  mode: ParkedModelMode;
  /** How long a request waits for the load in "wait" mode. */
  waitMs: number;
  /** The Retry-After (seconds) of the 503 answer. */
  retryAfterSecs: number;
}

export const DEFAULT_PARKED_MODEL_POLICY: ParkedModelPolicy = { mode: "wait", waitMs: 30_000, retryAfterSecs: 5 };

/** After a failed load on demand, the next request tries again only after this long (no load storm). */
export const PARKED_RELOAD_BACKOFF_MS = 5_000;

/** UNAVAILABLE for a parked model; `ready` settles when the load on demand it started has ended. */
export class ModelParkedError extends OperonError {
  constructor(
    readonly model: string,
    override readonly retryAfterSecs: number,
    readonly ready: Promise<void>,
  ) {
    super(
      "UNAVAILABLE",
      `model '${model}' was unloaded by the resource scheduler and is loading again; retry in ${retryAfterSecs} s`,
    );
  }
}
