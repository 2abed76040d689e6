import type { IncomingMessage, ServerResponse } from "node:http";
import { OperonError } from "@operon/protocol/errors";
import { uploadedLibraries } from "@operon/protocol/uploaded-libraries";
import type { ModelControlEvent } from "../../auth/access-policy.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import type { Handler, RequestContext, Route, RouteNeed, RouterOptions } from "./http-context.js";
import { handleEventStream, handleGenerate } from "./http-generate-handlers.js";
import { handleInfer } from "./http-infer-handler.js";
import { readJsonBody } from "./http-request-read.js";
import { decodeIndexRequest, decodeLoadRequest, decodeUnloadRequest } from "./http-repository-request.js";
import { sendEmpty, sendJson } from "./http-respond.js";
import { type RouteParams, Router } from "./http-router.js";
import { instancesBody, parkModelOf, scaleModelOf } from "./http-scheduler-request.js";
import { sendOnlineLatency } from "./http-online-latency.js";
import { sharedMemoryRoutes } from "./http-shared-memory.js";
import { MAX_OPERATOR_SPEC_BYTES, assertOperatorSpecWithinBudget } from "./operator-spec-budget.js";

/** The HTTP frontend's route table: each endpoint, what it needs of the access policy, and its handler. */

/** A shared-memory register body is three short fields, a logging body six: both fit in this. */
const SHARED_MEMORY_BODY_BYTES = 64 * 1024;

export function buildRouter(engine: InferenceEngine, options: RouterOptions): Router<Route> {
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
  add("GET", "/v2/health/ready", "open", ({ res }) => {
    // Still no body (Triton's probes read the status); a note for people rides in a header.
    const detail = engine.readinessDetail?.();
    if (detail !== undefined) res.setHeader("Operon-Readiness-Detail", detail.replace(/[^\x20-\x7e]/g, "?"));
    sendEmpty(res, health(engine.isReady()));
  });
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
    ["GET", "/online_latency", ({ req, res, params }) => sendOnlineLatency(engine, req, res, params)],
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
  // The resource scheduler's levers (control plane only; admin like model control): scale in place, move between CPU
  // and GPU (a body's `kind`), park an idle model.
  add("POST", "/v2/operon/models/:model/instances", "admin", async ({ req, res, params }) => {
    const { count, kind } = instancesBody(await readJson(req, res));
    sendJson(res, 200, await scaleModelOf(engine)(modelOf(params), count, kind));
  });
  add("POST", "/v2/operon/models/:model/park", "admin", async ({ res, params }) => {
    await parkModelOf(engine)(modelOf(params));
    sendEmpty(res, 200);
  });
  // The shared-memory extension: any caller that may infer registers its own regions (see system-shared-memory.ts).
  if (options.sharedMemory !== undefined) {
    for (const [method, path, handler] of sharedMemoryRoutes(options.sharedMemory)) {
      add(method, path, "infer", async ({ req, res, params, principal }) => {
        const answer = await handler({
          region: params["region"],
          owner: principal?.keyId ?? null,
          peer: req.socket.remoteAddress,
          readJson: () => readJson(req, res, SHARED_MEMORY_BODY_BYTES),
        });
        if (answer === undefined) sendEmpty(res, 200);
        else sendJson(res, 200, answer);
      });
    }
  }
  // The logging extension: the server's log settings are the host's business, so both need what admin routes need.
  const logging = options.logging;
  if (logging !== undefined) {
    add("GET", "/v2/logging", "admin", ({ res }) => sendJson(res, 200, logging.get()));
    add("POST", "/v2/logging", "admin", async ({ req, res }) => {
      const body = await readJson(req, res, SHARED_MEMORY_BODY_BYTES);
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new OperonError("INVALID_ARG", "the logging request body must be a JSON object of settings");
      }
      sendJson(res, 200, logging.update(body as Record<string, unknown>));
    });
  }
  // The trace extension: anyone who may infer reads the settings; changing them (tracing costs) needs admin.
  const traceControl = options.traceControl;
  if (traceControl !== undefined) {
    const traceRoutes: Array<[path: string, model: (params: RouteParams) => string | undefined]> = [
      ["/v2/trace/setting", () => undefined],
      ["/v2/models/:model/trace/setting", (params) => params["model"]],
    ];
    for (const [path, model] of traceRoutes) {
      add("GET", path, "infer", ({ res, params }) => sendJson(res, 200, traceControl.get(model(params))));
      add("POST", path, "admin", async ({ req, res, params }) => {
        const body = await readJson(req, res, SHARED_MEMORY_BODY_BYTES);
        if (body === null || typeof body !== "object" || Array.isArray(body)) {
          throw new OperonError("INVALID_ARG", "the trace setting request body must be a JSON object of settings");
        }
        sendJson(res, 200, traceControl.update(model(params), body as Record<string, unknown>));
      });
    }
  }
  add("GET", "/v2/operon/parked", "admin", ({ res }) => sendJson(res, 200, { models: engine.parkedModels?.() ?? [] }));
  add("GET", "/v2/operon/scaling", "admin", ({ res }) =>
    sendJson(res, 200, {
      models: engine.scalingState?.() ?? [],
      parked: engine.parkedModels?.() ?? [],
      operators: engine.operatorLoad?.() ?? [],
    }),
  );
  return router;
}

/** What an admin route did, for the audit log (see GatewayAccessPolicy.onModelControl). */
export function modelControlEventOf(
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
