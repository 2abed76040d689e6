import { OperonError } from "@operon/protocol/errors";
import type { InferenceEngine } from "../../engine/engine-api.js";

/**
 * Bodies and engine hooks of the resource scheduler's admin routes
 * (POST /v2/operon/models/:model/instances {"count": n},
 * POST /v2/operon/models/:model/park).
 */

/** The `count` of an instances body: an integer from 1 to 1024, else INVALID_ARG naming the problem. */
export function instanceCountBody(body: unknown): number {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new OperonError("INVALID_ARG", 'the request body must be a JSON object {"count": <instances>}');
  }
  const count = (body as { count?: unknown }).count;
  if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > 1024) {
    throw new OperonError(
      "INVALID_ARG",
      `'count' must be an integer from 1 to 1024, got ${JSON.stringify(count) ?? "nothing"}`,
    );
  }
  return count;
}

export function scaleModelOf(engine: InferenceEngine): NonNullable<InferenceEngine["scaleModel"]> {
  if (engine.scaleModel === undefined) throw new OperonError("UNSUPPORTED", "this server cannot rescale models");
  return engine.scaleModel.bind(engine);
}

export function parkModelOf(engine: InferenceEngine): NonNullable<InferenceEngine["parkModel"]> {
  if (engine.parkModel === undefined)
    throw new OperonError("UNSUPPORTED", "this server cannot unload models for the resource scheduler");
  return engine.parkModel.bind(engine);
}
