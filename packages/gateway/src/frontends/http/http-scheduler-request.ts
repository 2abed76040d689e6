import { OperonError } from "@operon/protocol/errors";
import type { InferenceEngine } from "../../engine/engine-api.js";

/**
 * Bodies and engine hooks of the resource scheduler's admin routes
 * (POST /v2/operon/models/:model/instances {"count": n, "kind"?: "KIND_CPU" | "KIND_GPU"},
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

/**
 * An instances body with an optional `kind` ("KIND_CPU" or "KIND_GPU"): the kind to move the model to (its
 * instances are replaced by `count` of that kind). Absent: the kind stays.
 */
export function instancesBody(body: unknown): { count: number; kind?: "KIND_CPU" | "KIND_GPU" } {
  const count = instanceCountBody(body);
  const kind = (body as { kind?: unknown }).kind;
  if (kind === undefined) return { count };
  if (kind !== "KIND_CPU" && kind !== "KIND_GPU") {
    throw new OperonError(
      "INVALID_ARG",
      `'kind' must be "KIND_CPU" or "KIND_GPU" (the kinds a model moves between), got ${JSON.stringify(kind)}`,
    );
  }
  return { count, kind };
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
