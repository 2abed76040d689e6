import type { IncomingMessage, ServerResponse } from "node:http";
import { OperonError } from "@operon/protocol/errors";
import { DEFAULT_ONLINE_WINDOW_MS, MAX_ONLINE_WINDOW_MS, MIN_ONLINE_WINDOW_MS } from "@operon/protocol/online-latency";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { sendJson } from "./http-respond.js";
import type { RouteParams } from "./http-router.js";

/**
 * GET /v2/models/<name>[/versions/<v>]/online_latency?window_ms=N (Operon
 * extension, online-latency.ts): the p50/p99 online clients saw over the
 * last N ms, per served version. A batch job polls it to back off.
 */
export function sendOnlineLatency(
  engine: InferenceEngine,
  req: IncomingMessage,
  res: ServerResponse,
  params: RouteParams,
): void {
  if (engine.onlineLatency === undefined)
    throw new OperonError("UNSUPPORTED", "this server does not report online latency");
  const windowMs = windowOf(req.url);
  sendJson(res, 200, { online_latency: engine.onlineLatency(params["model"]!, params["version"], windowMs) });
}

function windowOf(url: string | undefined): number {
  const raw = new URL(url ?? "/", "http://gateway").searchParams.get("window_ms");
  if (raw === null) return DEFAULT_ONLINE_WINDOW_MS;
  const windowMs = Number(raw);
  if (!Number.isInteger(windowMs) || windowMs < MIN_ONLINE_WINDOW_MS || windowMs > MAX_ONLINE_WINDOW_MS)
    throw new OperonError(
      "INVALID_ARG",
      `window_ms must be an integer from ${MIN_ONLINE_WINDOW_MS} to ${MAX_ONLINE_WINDOW_MS}, got '${raw}'`,
    );
  return windowMs;
}
