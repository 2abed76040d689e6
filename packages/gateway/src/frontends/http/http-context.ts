import type { IncomingMessage, ServerResponse } from "node:http";
import type { RawInputSpec } from "@operon/protocol/binary-tensor-codec";
import type { Logger } from "@operon/protocol/logger";
import type { AccessNeed, Principal } from "../../auth/access-policy.js";
import type { DecodePool } from "../decode/decode-pool.js";
import type { BinaryHeaderMemo } from "./binary-header-memo.js";
import type { SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import type { LoggingControl } from "../log-settings-api.js";
import type { RequestTracer, TraceControl } from "../tracing-api.js";
import type { BodyReading, BodyRelease } from "./http-body-reader.js";
import type { RouteParams } from "./http-router.js";

/** What the HTTP frontend's routes and handlers share: one request's context and the router's options. */

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** The request's one `close` listener on res (see handle): what else must hear of the close. */
  life: RequestLife;
  params: RouteParams;
  /** The API key the request was authorized with; null when anonymous (or no access policy). */
  principal: Principal | null;
  /** The id every log line of this request carries, returned as X-Request-Id (the client's, or a new one). */
  requestId: string;
  /** Triton's request `id` once an infer body is decoded: failure logs carry it beside the request id. */
  inferId?: string;
  /** Set by the load route: what the audit log says of the load. */
  loadDetails?: { configOverride: boolean; files: string[]; nativeLibraries?: Array<{ file: string; sha256: string }> };
}

/**
 * One `close` listener per request, not one per concern: it takes the
 * response out of the pending set, gives the body's bytes back to the
 * in-flight budget (readBody), and tells the request's client watch
 * (clientGone), if one is set, that the connection closed.
 */
export interface RequestLife extends BodyRelease {
  onClose: (() => void) | undefined;
}

export type Handler = (context: RequestContext) => void | Promise<void>;

/** "open": no key is ever looked at (health, server metadata); otherwise the access policy's need. */
export type RouteNeed = "open" | AccessNeed;

export interface Route {
  need: RouteNeed;
  handler: Handler;
}

export interface RouterOptions {
  decodePool: DecodePool;
  /** The last JSON header of each model's binary requests, decoded (binary-header-memo.ts). */
  binaryHeaders: BinaryHeaderMemo;
  reading: BodyReading;
  maxBytesElements: number;
  maxBodyBytes: number;
  maxLoadBodyBytes: number;
  /** HttpFrontendOptions.rawInputShape, defaulted. */
  rawInputShape: (model: string, version: string | undefined) => RawInputSpec | Promise<RawInputSpec>;
  logger: Logger;
  sharedMemory: SystemSharedMemory | undefined;
  logging: LoggingControl | undefined;
  tracer: RequestTracer | undefined;
  traceControl: TraceControl | undefined;
}
