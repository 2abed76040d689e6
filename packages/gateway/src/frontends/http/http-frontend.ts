import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  INFERENCE_HEADER_CONTENT_LENGTH,
  type RawInputSpec,
  encodeInferResponseBody,
  parseInferenceHeaderLength,
} from "@operon/protocol/binary-tensor-codec";
import { OperonError, isOperonError } from "@operon/protocol/errors";
import type { CancelSignal, InferRequest, InferResponse } from "@operon/protocol/inference";
import type { AccessNeed, GatewayAccessPolicy, ModelControlEvent, Principal } from "../../auth/access-policy.js";
import { checkShadowModelAccess } from "../../auth/shadow-model-access.js";
import { applyKeyPriority } from "../../auth/key-priority.js";
import { Cancellation } from "../../engine/cancellation.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { BodyBytesBudget, type BodyReading, DEFAULT_MAX_BODY_BYTES, readBody } from "./http-body-reader.js";
import { type ConnectionLimits, defaultMaxConnections, limitConnections } from "./connection-limits.js";
import { SlowBodyGuard, type SlowBodyLimits } from "./slow-body-guard.js";
import { MAX_OPERATOR_SPEC_BYTES, assertOperatorSpecWithinBudget } from "./operator-spec-budget.js";
import { DEFAULT_MAX_BYTES_ELEMENTS } from "@operon/protocol/tensor";
import { ClientClosedError } from "./http-errors.js";
import { decodeGenerateBody, encodeGenerateResponse } from "./http-generate.js";
import { type DecodedInferRequest, decodeInferBody } from "./http-infer-request.js";
import { DECODE_OFF_LOOP_BYTES, DecodePool } from "../decode/decode-pool.js";
import { decodeHttpInfer, decodeJson } from "../decode/decode-tasks.js";
import { rawInputSpecFromEngine } from "./http-raw-input.js";
import { decodeIndexRequest, decodeLoadRequest, decodeUnloadRequest } from "./http-repository-request.js";
import { reportOf, sendBody, sendEmpty, sendError, sendJson } from "./http-respond.js";
import { instanceCountBody, parkModelOf, scaleModelOf } from "./http-scheduler-request.js";
import { logRequestFailure } from "../failure-log.js";
import { type RouteParams, Router } from "./http-router.js";
import { EventStream } from "./http-sse.js";
import type { Logger } from "@operon/protocol/logger";
import { uploadedLibraries } from "@operon/protocol/uploaded-libraries";

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

interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** The request's one `close` listener on res (see handle): what else must hear of the close. */
  life: RequestLife;
  params: RouteParams;
  /** The API key the request was authorized with; null when anonymous (or no access policy). */
  principal: Principal | null;
  /** Set by the load route: what the audit log says of the load. */
  loadDetails?: { configOverride: boolean; files: string[]; nativeLibraries?: Array<{ file: string; sha256: string }> };
}

/**
 * One `close` listener per request, not one per concern: it takes the
 * response out of the pending set and tells the request's client watch
 * (clientGone), if one is set, that the connection closed.
 */
interface RequestLife {
  onClose: (() => void) | undefined;
}

type Handler = (context: RequestContext) => void | Promise<void>;

/** "open": no key is ever looked at (health, server metadata); otherwise the access policy's need. */
type RouteNeed = "open" | AccessNeed;

interface Route {
  need: RouteNeed;
  handler: Handler;
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
    reading,
    maxBytesElements,
  });
  const access = options.access;
  let closing = false;
  // Requests in flight. On stop, those whose response has not started are
  // told to close their connection, so a drained keep-alive connection does
  // not hold the server open until the grace period ends.
  const pending = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A connection over the caps was answered 503 already; a request Node still parsed from it is dropped.
    if (connections.refused(req.socket)) {
      req.socket.destroy();
      return;
    }
    if (closing) res.setHeader("Connection", "close");
    const life: RequestLife = { onClose: undefined };
    pending.add(res);
    res.once("close", () => {
      pending.delete(res);
      life.onClose?.();
    });
    const method = req.method ?? "GET";
    const path = pathOf(req.url);
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
      const context: RequestContext = { req, res, life, params: match.params, principal };
      await handler(context);
      if (need === "admin" && access !== undefined) {
        const event = modelControlEventOf(method, path, context);
        if (event !== undefined) access.noteModelControl(event);
      }
    } catch (error) {
      if (error instanceof ClientClosedError) {
        logger.info({ method, path }, error.message);
        return;
      }
      const report = reportOf(error);
      logRequestFailure(logger, report, error, { method, path, status: report.status });
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

interface RouterOptions {
  decodePool: DecodePool;
  reading: BodyReading;
  maxBytesElements: number;
  maxBodyBytes: number;
  maxLoadBodyBytes: number;
  rawInputShape: NonNullable<HttpFrontendOptions["rawInputShape"]>;
  logger: Logger;
}

function buildRouter(engine: InferenceEngine, options: RouterOptions): Router<Route> {
  const { maxBodyBytes } = options;
  const router = new Router<Route>();
  // Each route says what it needs (see auth/access-policy.ts): "open" routes take no key, so probes never need one.
  const add = (method: string, path: string, need: RouteNeed, handler: Handler): void =>
    void router.add(method, path, { need, handler });
  const readJson = (req: IncomingMessage, res: ServerResponse, limitBytes = maxBodyBytes): Promise<unknown> =>
    readJsonBody(options, req, res, limitBytes);
  const versionOf = (params: RouteParams): string | undefined => params["version"];
  const modelOf = (params: RouteParams): string => params["model"]!;
  // Health answers carry no body: 200 means yes, 400 (as Triton answers) means no.
  const health = (yes: boolean): number => (yes ? 200 : 400);

  add("GET", "/v2/health/live", "open", ({ res }) => sendEmpty(res, health(engine.isLive())));
  add("GET", "/v2/health/ready", "open", ({ res }) => sendEmpty(res, health(engine.isReady())));
  add("GET", "/v2", "open", ({ res }) => sendJson(res, 200, engine.serverMetadata()));
  // Before the model routes: "stats" here is the endpoint, not a model name.
  add("GET", "/v2/models/stats", "infer", ({ res }) => sendJson(res, 200, { model_stats: engine.modelStatistics() }));

  const modelRoutes: Array<[method: string, suffix: string, handler: Handler]> = [
    ["GET", "", ({ res, params }) => sendJson(res, 200, engine.modelMetadata(modelOf(params), versionOf(params)))],
    [
      "GET",
      "/ready",
      ({ res, params }) => sendEmpty(res, health(engine.isModelReady(modelOf(params), versionOf(params)))),
    ],
    ["GET", "/config", ({ res, params }) => sendJson(res, 200, engine.modelConfig(modelOf(params), versionOf(params)))],
    [
      "GET",
      "/stats",
      ({ res, params }) =>
        sendJson(res, 200, { model_stats: engine.modelStatistics(modelOf(params), versionOf(params)) }),
    ],
    ["POST", "/infer", (context) => handleInfer(engine, options, context)],
    ["POST", "/generate", (context) => handleGenerate(engine, options, context)],
    ["POST", "/generate_stream", (context) => handleEventStream(engine, options, context, "generate")],
    ["POST", "/infer_stream", (context) => handleEventStream(engine, options, context, "infer")],
  ];
  for (const [method, suffix, handler] of modelRoutes) {
    add(method, `/v2/models/:model${suffix}`, "infer", handler);
    add(method, `/v2/models/:model/versions/:version${suffix}`, "infer", handler);
  }

  add("POST", "/v2/repository/index", "infer", async ({ req, res }) => {
    sendJson(res, 200, await engine.repositoryIndex(decodeIndexRequest(await readJson(req, res))));
  });
  add("POST", "/v2/repository/models/:model/load", "admin", async (context) => {
    const { req, res, params } = context;
    const load = decodeLoadRequest(await readJson(req, res, options.maxLoadBodyBytes));
    const libraries = uploadedLibraries(load.files);
    context.loadDetails = {
      configOverride: load.config !== undefined,
      files: [...(load.files?.keys() ?? [])],
      ...(libraries.length > 0 ? { nativeLibraries: libraries } : {}),
    };
    await engine.loadModel(modelOf(params), load);
    sendEmpty(res, 200);
  });
  add("POST", "/v2/repository/models/:model/unload", "admin", async ({ req, res, params }) => {
    await engine.unloadModel(modelOf(params), decodeUnloadRequest(await readJson(req, res)));
    sendEmpty(res, 200);
  });

  // Operators (Operon extension): DAG specs registered at run time, served under /v2/models/<name> like models.
  add("GET", "/v2/operators", "infer", ({ res }) => sendJson(res, 200, { operators: engine.listOperators() }));
  add("GET", "/v2/operators/:operator", "infer", ({ res, params }) => {
    const name = params["operator"]!;
    const found = engine.listOperators().filter((operator) => operator.name === name);
    if (found.length === 0) throw new OperonError("NOT_FOUND", `no operator named '${name}' is served`);
    sendJson(res, 200, found[found.length - 1]);
  });
  add("POST", "/v2/operators/:operator", "admin", async ({ req, res, params }) => {
    const name = params["operator"]!;
    sendJson(
      res,
      200,
      await engine.registerOperator(operatorSpecBody(name, await readJson(req, res, MAX_OPERATOR_SPEC_BYTES))),
    );
  });
  // A dry run of the route above: 200 { valid, problems } whatever the spec's problems are. It costs
  // what a registration costs, so it needs what model control needs.
  add("POST", "/v2/operators/:operator/validate", "admin", async ({ req, res, params }) => {
    const name = params["operator"]!;
    sendJson(
      res,
      200,
      await engine.validateOperator(operatorSpecBody(name, await readJson(req, res, MAX_OPERATOR_SPEC_BYTES))),
    );
  });
  add("DELETE", "/v2/operators/:operator", "admin", async ({ res, params }) => {
    await engine.unregisterOperator(params["operator"]!);
    sendEmpty(res, 200);
  });

  // Operon's admin extension (@operon/protocol/admin): the backend workers and their process usage
  // (pids, memory), the host's business rather than an inference client's: the admin scope reads them.
  add("GET", "/v2/operon/workers", "admin", async ({ res }) => sendJson(res, 200, await engine.workers()));
  // The resource scheduler's levers (control plane only; admin like model control): scale in place, park an idle model.
  add("POST", "/v2/operon/models/:model/instances", "admin", async ({ req, res, params }) => {
    sendJson(res, 200, await scaleModelOf(engine)(modelOf(params), instanceCountBody(await readJson(req, res))));
  });
  add("POST", "/v2/operon/models/:model/park", "admin", async ({ res, params }) => {
    await parkModelOf(engine)(modelOf(params));
    sendEmpty(res, 200);
  });
  add("GET", "/v2/operon/parked", "admin", ({ res }) => sendJson(res, 200, { models: engine.parkedModels?.() ?? [] }));
  add("GET", "/v2/operon/scaling", "admin", ({ res }) =>
    sendJson(res, 200, { models: engine.scalingState?.() ?? [], parked: engine.parkedModels?.() ?? [] }),
  );
  return router;
}

/** What an admin route did, for the audit log (see GatewayAccessPolicy.onModelControl). */
function modelControlEventOf(
  method: string,
  path: string,
  { params, principal, req, loadDetails }: RequestContext,
): ModelControlEvent | undefined {
  const common = {
    keyId: principal?.keyId ?? null,
    transport: "http" as const,
    address: req.socket.remoteAddress ?? null,
  };
  if (path.endsWith("/load") && params["model"] !== undefined)
    return { action: "model.load", target: params["model"], ...common, ...(loadDetails ?? {}) };
  if (path.endsWith("/unload") && params["model"] !== undefined)
    return { action: "model.unload", target: params["model"], ...common };
  if (path.endsWith("/instances") && params["model"] !== undefined)
    return { action: "model.scale", target: params["model"], ...common };
  if (path.endsWith("/park") && params["model"] !== undefined)
    return { action: "model.park", target: params["model"], ...common };
  if (params["operator"] !== undefined)
    return {
      action: method === "DELETE" ? "operator.remove" : "operator.register",
      target: params["operator"],
      ...common,
    };
  return undefined;
}

/** An operator spec body for the operator named in the path: a JSON object whose `name`, if any, is that name. */
function operatorSpecBody(name: string, body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new OperonError("INVALID_ARG", "the request body must be an operator spec (a JSON object)");
  }
  const named = (body as { name?: unknown }).name;
  if (named !== undefined && named !== name) {
    throw new OperonError(
      "INVALID_ARG",
      `the spec's name ${JSON.stringify(named)} differs from the operator name '${name}' in the path`,
    );
  }
  assertOperatorSpecWithinBudget(body as Record<string, unknown>);
  return { ...body, name };
}

/**
 * Reads and decodes an /infer (or /infer_stream) body: JSON, JSON + binary
 * data, or a raw binary input. A JSON part of DECODE_OFF_LOOP_BYTES or more
 * is decoded on the decode pool, never on the event loop; every JSON part
 * is checked against the JSON budget before it is parsed.
 */
async function readInferRequest(
  options: RouterOptions,
  { req, res, params }: RequestContext,
): Promise<DecodedInferRequest> {
  const modelName = params["model"]!;
  const modelVersion = params["version"];
  const body = await readBody(req, res, options.maxBodyBytes, options.reading);
  const header = req.headers[INFERENCE_HEADER_CONTENT_LENGTH];
  const headerLength = parseInferenceHeaderLength(Array.isArray(header) ? header[0] : header);
  const target = modelVersion === undefined ? { modelName } : { modelName, modelVersion };
  if (headerLength === 0)
    return decodeInferBody(
      body,
      headerLength,
      target,
      () => options.rawInputShape(modelName, modelVersion),
      options.maxBytesElements,
    );
  // What decoding costs on the loop grows with the JSON part alone: binary tensor data after a JSON header is
  // sliced into views, never parsed. So a large binary body with a small header (an image) is decoded here; a
  // hop to the decode pool and back would cost it more than the decoding (MobileNet ran at 0.55x for it).
  const jsonBytes = headerLength === undefined ? body.length : headerLength;
  if (jsonBytes < DECODE_OFF_LOOP_BYTES) return decodeHttpInfer(body, headerLength, target);
  return options.decodePool.decodeInfer({ kind: "http-infer", body, headerLength, target }, true);
}

/** Reads a JSON body (budget checked first); one of DECODE_OFF_LOOP_BYTES or more is parsed on the decode pool. */
async function readJsonBody(
  options: RouterOptions,
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Promise<unknown> {
  const body = await readBody(req, res, limitBytes, options.reading);
  return body.length < DECODE_OFF_LOOP_BYTES ? decodeJson(body) : options.decodePool.decodeJson(body, true);
}

async function handleInfer(engine: InferenceEngine, options: RouterOptions, context: RequestContext): Promise<void> {
  const { req, res, principal } = context;
  const { request, binaryDataOutput } = await readInferRequest(options, context);
  applyKeyPriority(engine, request, principal);

  // The engine may queue the request for a while: if the client gives up
  // meanwhile, the signal lets it drop the work instead of computing for nobody.
  const gone = clientGone(context);
  request.signal = gone.signal;
  let response;
  try {
    response = await engine.infer(request);
  } catch (error) {
    if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
    throw error;
  } finally {
    gone.dispose();
  }
  if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");

  // The response is the engine's fresh object: the client's id goes on it in place.
  if (response.id === undefined && request.id !== undefined) response.id = request.id;
  const encoded = encodeInferResponseBody(response, { binaryDataOutput, outputs: request.outputs });
  const headers =
    encoded.headerLength === undefined
      ? JSON_HEADERS
      : { "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": encoded.headerLength };
  sendBody(res, 200, headers, encoded.body);
}

const JSON_HEADERS = { "Content-Type": "application/json" } as const;

/**
 * Watches for the client going away before the response is complete:
 * `signal` (the request's; given or new) is then aborted with a
 * ClientClosedError and `closed` is true. dispose() stops watching.
 */
function clientGone({ req, res, life }: RequestContext, cancellation = new Cancellation()): ClientWatch {
  const watch: ClientWatch = {
    signal: cancellation.signal,
    closed: false,
    dispose: () => {
      if (life.onClose === onClose) life.onClose = undefined;
    },
  };
  const onClose = (): void => {
    if (res.writableFinished) return;
    watch.closed = true;
    cancellation.abort(new ClientClosedError());
  };
  // Heard through the request's one close listener (handle), not a listener of its own.
  life.onClose = onClose;
  if (res.destroyed || req.socket.destroyed) onClose();
  return watch;
}

interface ClientWatch {
  signal: CancelSignal;
  /** True once the client went away. */
  closed: boolean;
  dispose(): void;
}

/** The generate extension's request, mapped onto the model's inputs by name (http/http-generate.ts). */
async function decodeGenerateRequest(
  engine: InferenceEngine,
  options: RouterOptions,
  { req, res, params }: RequestContext,
): Promise<InferRequest> {
  const modelName = params["model"]!;
  const modelVersion = params["version"];
  const json = await readJsonBody(options, req, res, options.maxBodyBytes);
  // The body maps onto the model's inputs by name: its metadata first (a parked model loads again).
  await engine.whenServed(modelName, modelVersion);
  const metadata = engine.modelMetadata(modelName, modelVersion);
  const maxBatchSize = engine.modelConfig(modelName, modelVersion)["max_batch_size"];
  const target = modelVersion === undefined ? { modelName } : { modelName, modelVersion };
  return decodeGenerateBody(json, target, metadata, typeof maxBatchSize === "number" && maxBatchSize > 0);
}

/**
 * POST .../generate: exactly one response, as Triton requires. A decoupled
 * model's stream is read until its final flag; a second response (or none
 * at all) fails UNSUPPORTED, pointing at generate_stream, and the rest of
 * the stream is dropped.
 */
async function handleGenerate(engine: InferenceEngine, options: RouterOptions, context: RequestContext): Promise<void> {
  const { req, res } = context;
  const request = await decodeGenerateRequest(engine, options, context);
  applyKeyPriority(engine, request, context.principal);
  // One cancellation for both ends: the client's close and a second response (stop).
  const stop = new Cancellation();
  const gone = clientGone(context, stop);
  request.signal = stop.signal;
  let answer: InferResponse | undefined;
  let failure: OperonError | undefined;
  try {
    await engine.inferStream(request, (response, final) => {
      if (failure !== undefined) return;
      if (isOperonError(response)) {
        failure = response;
        return;
      }
      if (final && response.outputs.length === 0) return; // the final flag alone
      if (answer === undefined) {
        answer = response;
        return;
      }
      failure = new OperonError(
        "UNSUPPORTED",
        `model '${request.modelName}' sent more than one response; generate answers with exactly one: use generate_stream for a decoupled model's responses`,
      );
      stop.abort(failure);
    });
  } catch (error) {
    if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
    throw error;
  } finally {
    gone.dispose();
  }
  if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
  if (failure !== undefined) throw failure;
  if (answer === undefined) {
    throw new OperonError(
      "UNSUPPORTED",
      `model '${request.modelName}' sent no response; generate answers with exactly one: use generate_stream`,
    );
  }
  sendBody(
    res,
    200,
    { "Content-Type": "application/json" },
    Buffer.from(encodeGenerateResponse(answer, request.id), "utf8"),
  );
}

/**
 * POST .../generate_stream ("generate") and .../infer_stream ("infer"):
 * server-sent events, one per response, written as they come. A failure
 * before the first response is a plain JSON error with its status; later
 * ones are `{"error": ...}` events. generate_stream sends no event for a
 * final flag without outputs (the end of the body says it); infer_stream
 * always ends with an event marked triton_final_response: true (or an
 * error event).
 */
async function handleEventStream(
  engine: InferenceEngine,
  options: RouterOptions,
  context: RequestContext,
  kind: "generate" | "infer",
): Promise<void> {
  const { req, res, params, principal } = context;
  let request: InferRequest;
  let outputs: InferRequest["outputs"];
  if (kind === "generate") {
    request = await decodeGenerateRequest(engine, options, context);
  } else {
    ({ request } = await readInferRequest(options, context));
    // Events are JSON: outputs never travel as binary here.
    outputs = request.outputs?.map(({ name }) => ({ name }));
  }
  applyKeyPriority(engine, request, principal);
  const gone = clientGone(context);
  request.signal = gone.signal;
  const events = new EventStream(res);
  try {
    await engine.inferStream(request, (response, final) => {
      if (isOperonError(response)) {
        if (response.kind === "INTERNAL")
          options.logger.error({ model: request.modelName, err: response.message }, "streamed inference failed");
        events.sendError(response.message);
      } else if (kind === "generate") {
        if (!final || response.outputs.length > 0) events.send(encodeGenerateResponse(response, request.id));
      } else {
        const parameters = { ...response.parameters, triton_final_response: final };
        const encoded = encodeInferResponseBody(
          { ...response, id: response.id ?? request.id, parameters },
          { binaryDataOutput: false, ...(outputs !== undefined ? { outputs } : {}) },
        );
        events.send((encoded.body as Buffer).toString("utf8"));
      }
      if (final) events.end();
    });
  } catch (error) {
    // Nothing was sent yet (the engine's contract): a plain error with its own status.
    if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
    throw error;
  } finally {
    gone.dispose();
  }
  events.end();
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
