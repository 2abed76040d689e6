import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RawInputSpec } from "@operon/protocol/binary-tensor-codec";
import type { GatewayAccessPolicy } from "../../auth/access-policy.js";
import { checkShadowModelAccess } from "../../auth/shadow-model-access.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { BodyBytesBudget, type BodyReading, DEFAULT_MAX_BODY_BYTES } from "./http-body-reader.js";
import { type ConnectionLimits, defaultMaxConnections, limitConnections } from "./connection-limits.js";
import { SlowBodyGuard, type SlowBodyLimits } from "./slow-body-guard.js";
import { DEFAULT_MAX_BYTES_ELEMENTS } from "@operon/protocol/tensor";
import type { RequestContext, RequestLife } from "./http-context.js";
import { ClientClosedError } from "./http-errors.js";
import { LiveList } from "../live-list.js";
import { DecodePool } from "../decode/decode-pool.js";
import { rawInputSpecFromEngine } from "./http-raw-input.js";
import { BinaryHeaderMemo } from "./binary-header-memo.js";
import { reportOf, sendError, setRequestIdHeader } from "./http-respond.js";
import { buildRouter, modelControlEventOf } from "./http-routes.js";
import { logRequestFailure } from "../failure-log.js";
import type { Logger } from "@operon/protocol/logger";
import type { SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import type { LoggingControl } from "../log-settings-api.js";
import type { RequestTracer, TraceControl } from "../tracing-api.js";
import { requestIdOf } from "../request-id.js";

/**
 * The HTTP/REST frontend: KServe v2 plus Triton's extensions (binary
 * tensor data, model configuration, statistics, model repository,
 * generate / generate_stream) and Operon's infer_stream on plain
 * node:http. It sees the engine only through InferenceEngine.
 *
 * Streaming endpoints answer with server-sent events (http/http-sse.ts):
 * generate_stream one generate response object per model response,
 * infer_stream one KServe v2 JSON infer response per model response, the
 * last marked `parameters.triton_final_response: true`. Both serve any
 * model (a non-decoupled one gives one event). A client that disconnects
 * cancels its request (see InferenceEngine.inferStream).
 *
 * With an access policy, each route is checked before its body is read
 * (`Authorization: Bearer <key>`); a 401 carries `WWW-Authenticate: Bearer`.
 * An inference request without a `priority` parameter gets its key's
 * priority level (auth/key-priority.ts).
 */

export interface HttpFrontendOptions {
  host: string;
  /** 0 = let the OS pick a free port; the bound port is returned. */
  port: number;
  /** Largest request body accepted, bytes, after any gzip/deflate is undone (default 64 MiB). */
  maxBodyBytes?: number;
  logger?: Logger;
  /**
   * The input a raw binary request (Inference-Header-Content-Length: 0)
   * fills. Default: the model's only input from its metadata, batch-1 when
   * its config has max_batch_size > 0. At most one -1 dimension may remain;
   * it is resolved from the body size.
   */
  rawInputShape?: (model: string, version: string | undefined) => RawInputSpec | Promise<RawInputSpec>;
  /**
   * API key checks (auth/access-policy.ts); undefined = every route open.
   * Open: GET /v2/health/live, /v2/health/ready, /v2. Admin: model load and
   * unload, operator registration and removal. Everything else: infer.
   */
  access?: GatewayAccessPolicy;
  /**
   * Decodes bodies of DECODE_OFF_LOOP_BYTES or more off the event loop;
   * default a pool of its own (closed on stop).
   */
  decodePool?: DecodePool;
  /** Request body bytes held at once over all requests (BodyBytesBudget); default 4 × maxBodyBytes. */
  maxInflightBodyBytes?: number;
  /** Largest body of a model load request (uploaded files travel base64 in it); default maxBodyBytes. */
  maxLoadBodyBytes?: number;
  /** Elements one BYTES tensor of a raw binary request may hold; default DEFAULT_MAX_BYTES_ELEMENTS. */
  maxBytesElements?: number;
  /** Slow bodies get 408 (slow-body-guard.ts); default 10 s pause, 16 KiB/s. */
  slowBodies?: SlowBodyLimits;
  /** Headers must be complete this long after a request began (408 and closed beyond); default 20 s. */
  headersTimeoutMs?: number;
  /** Open connections in total and per client address (connection-limits.ts); default from the open-file limit, 1024 per address. */
  connections?: ConnectionLimits;
  /** A gzip/deflate body may inflate to at most this many times its size; default 100. */
  maxInflateRatio?: number;
  /** System shared-memory regions (shared with gRPC); undefined = the extension's routes answer 404. */
  sharedMemory?: SystemSharedMemory;
  /** The logging extension (GET|POST /v2/logging, admin); undefined = 404. */
  logging?: LoggingControl;
  /** The trace extension: the tracer /infer consults (one flag while tracing is off) and its settings API. */
  tracing?: { tracer: RequestTracer; control: TraceControl };
}

export interface HttpFrontend {
  port: number;
  /** Stops accepting, lets in-flight requests finish for graceMs (default 5000), then closes every connection. Idempotent. */
  stop(graceMs?: number): Promise<void>;
  server: http.Server;
}

const DEFAULT_GRACE_MS = 5000;

/** Node's default: a request (headers and body) must arrive within 5 minutes whatever its rate. */
const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;

/** Longer than common load-balancer idle timeouts (60 s), so the server is not the side that drops a reused connection. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** True while the logger writes verbose (debug) lines: log_verbose_level > 0. */
function verbose(logger: Logger): boolean {
  return logger.isLevelEnabled?.("debug") === true;
}

/** Without a logger, only server faults reach stderr; client errors are the clients' business. */
const FALLBACK_LOGGER: Logger = {
  info: () => {},
  warn: (obj, msg) => console.warn(msg ?? "", obj),
  error: (obj, msg) => console.error(msg ?? "", obj),
};

export async function startHttpFrontend(engine: InferenceEngine, options: HttpFrontendOptions): Promise<HttpFrontend> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const logger = options.logger ?? FALLBACK_LOGGER;
  const rawInputShape = options.rawInputShape ?? ((model, version) => rawInputSpecFromEngine(engine, model, version));
  const ownPool = options.decodePool === undefined;
  const decodePool = options.decodePool ?? new DecodePool();
  const slowBodies = new SlowBodyGuard(options.slowBodies ?? { pauseMs: 10_000, minBytesPerSec: 16 * 1024 });
  const reading: BodyReading = {
    budget: new BodyBytesBudget(options.maxInflightBodyBytes ?? 4 * maxBodyBytes),
    slowBodies,
    maxInflateRatio: options.maxInflateRatio ?? 100,
  };
  const maxLoadBodyBytes = options.maxLoadBodyBytes ?? maxBodyBytes;
  const maxBytesElements = options.maxBytesElements ?? DEFAULT_MAX_BYTES_ELEMENTS;
  const router = buildRouter(engine, {
    maxBodyBytes,
    maxLoadBodyBytes,
    rawInputShape,
    logger,
    decodePool,
    binaryHeaders: new BinaryHeaderMemo(),
    reading,
    maxBytesElements,
    sharedMemory: options.sharedMemory,
    logging: options.logging,
    tracer: options.tracing?.tracer,
    traceControl: options.tracing?.control,
  });
  const access = options.access;
  let closing = false;
  // Requests in flight. On stop, those whose response has not started are
  // told to close their connection, so a drained keep-alive connection does
  // not hold the server open until the grace period ends.
  // Not a Set: one add and one delete per request (../live-list.ts says why).
  const pending = new LiveList<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A connection over the caps was answered 503 already; a request Node still parsed from it is dropped.
    if (connections.refused(req.socket)) {
      req.socket.destroy();
      return;
    }
    if (closing) res.setHeader("Connection", "close");
    const life: RequestLife = { onClose: undefined, releaseBody: undefined };
    const listed = pending.add(res);
    // `on`, not `once`: a response closes once, and once() wraps every listener in a closure and a state object.
    res.on("close", () => {
      pending.remove(listed);
      life.releaseBody?.();
      life.onClose?.();
    });
    const method = req.method ?? "GET";
    const path = pathOf(req.url);
    // Every request has an id for its log lines, returned to the client: the caller's X-Request-Id, or a new one.
    const requestId = requestIdOf(req.headers["x-request-id"]);
    setRequestIdHeader(res, requestId);
    let context: RequestContext | undefined;
    try {
      const match = router.match(method, path);
      if (match.kind === "not-found") {
        sendError(res, 404, `no endpoint at '${path}'`);
        return;
      }
      if (match.kind === "method-not-allowed") {
        const allowed = match.allowed.join(", ");
        sendError(res, 405, `method ${method} is not allowed for '${path}'; use ${allowed}`, { Allow: allowed });
        return;
      }
      const { need, handler } = match.handler;
      const principal = need === "open" || access === undefined ? null : access.authorize(authorizationOf(req), need);
      if (need !== "open") checkShadowModelAccess(principal, match.params["model"], need);
      const started = verbose(logger) ? performance.now() : 0;
      context = { req, res, life, params: match.params, principal, requestId };
      await handler(context);
      if (need === "admin" && access !== undefined) {
        const event = modelControlEventOf(method, path, context);
        if (event !== undefined) access.noteModelControl(event);
      }
      // Triton's verbose per-request line (log_verbose_level > 0); one branch otherwise.
      if (started !== 0) {
        const id = context.inferId;
        logger.debug?.(
          {
            method,
            path,
            status: res.statusCode,
            requestId,
            ...(id !== undefined ? { id } : {}),
            ms: Math.round((performance.now() - started) * 1000) / 1000,
          },
          "HTTP request served",
        );
      }
    } catch (error) {
      if (error instanceof ClientClosedError) {
        logger.info({ method, path, requestId }, error.message);
        return;
      }
      const report = reportOf(error);
      const id = context?.inferId;
      logRequestFailure(logger, report, error, {
        method,
        path,
        status: report.status,
        requestId,
        ...(id !== undefined ? { id } : {}),
      });
      sendError(res, report.status, report.message, report.headers, report.kind);
    }
  };

  // Node's own headers timeout closes a connection whose request (or first byte) began that long ago
  // without complete headers; checked every second, not every 30 s, so it fires when it says.
  const headersTimeout = options.headersTimeoutMs ?? 20_000;
  const server = http.createServer(
    {
      headersTimeout,
      requestTimeout: Math.max(headersTimeout, DEFAULT_REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: 1000,
    },
    (req, res) => void handle(req, res),
  );
  const connections = limitConnections(
    server,
    options.connections ?? { max: defaultMaxConnections(), perAddress: 1024 },
  );
  // With this listener Node leaves "100 Continue" to us: readBody sends it
  // only after the declared length passed the limit, so an oversized upload
  // is refused before the client sends it.
  server.on("checkContinue", (req, res) => void handle(req, res));
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ host: options.host, port }, "HTTP frontend listening");

  let stopped: Promise<void> | undefined;
  const stop = (graceMs = DEFAULT_GRACE_MS): Promise<void> => {
    stopped ??= new Promise<void>((resolve) => {
      closing = true;
      for (const res of pending) if (!res.headersSent) res.setHeader("Connection", "close");
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      force.unref();
      server.close(() => {
        clearTimeout(force);
        if (ownPool) void decodePool.close();
        slowBodies.stop();
        resolve();
      });
      server.closeIdleConnections();
    });
    return stopped;
  };

  return { port, stop, server };
}

/** The Authorization header; undefined when absent (Node keeps only the first of duplicates). */
function authorizationOf(req: IncomingMessage): string | undefined {
  return req.headers.authorization;
}

/** The path part of the request target, query dropped (no KServe endpoint takes a query). */
function pathOf(url: string | undefined): string {
  const target = url ?? "/";
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}
