import { encodeInferResponseBody } from "@operon/protocol/binary-tensor-codec";
import { OperonError } from "@operon/protocol/errors";
import type { InferRequest } from "@operon/protocol/inference";
import type { Principal } from "../../auth/access-policy.js";
import { applyKeyPriority } from "../../auth/key-priority.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import type { SharedMemoryUse, SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import type { RequestTrace, RequestTracer } from "../tracing-api.js";
import { clientGone } from "./http-client-gone.js";
import type { RequestContext, RouterOptions } from "./http-context.js";
import { ClientClosedError } from "./http-errors.js";
import { readInferRequest } from "./http-request-read.js";
import { sendBody } from "./http-respond.js";

/** POST .../infer: decode, shared memory in and out, the engine, the encoded response (traced when tracing is on). */

export async function handleInfer(
  engine: InferenceEngine,
  options: RouterOptions,
  context: RequestContext,
): Promise<void> {
  // The trace extension's one branch for an untraced request.
  if (options.tracer?.enabled === true) return handleTracedInfer(engine, options, context, options.tracer);
  return handleUntracedInfer(engine, options, context);
}

async function handleUntracedInfer(
  engine: InferenceEngine,
  options: RouterOptions,
  context: RequestContext,
): Promise<void> {
  const { principal } = context;
  const { request, binaryDataOutput } = await readInferRequest(options, context);
  if (request.id !== undefined) context.inferId = request.id;
  applyKeyPriority(engine, request, principal);
  let shared: SharedMemoryUse | undefined;
  if (request.sharedMemory === true) shared = await resolveSharedMemory(options, request, principal);
  try {
    await inferAndRespond(engine, request, binaryDataOutput, context, shared, options.sharedMemory, undefined);
  } finally {
    if (shared !== undefined) options.sharedMemory!.release(shared);
  }
}

/** handleInfer while tracing is on: the same steps, each a span when this request is sampled. */
async function handleTracedInfer(
  engine: InferenceEngine,
  options: RouterOptions,
  context: RequestContext,
  tracer: RequestTracer,
): Promise<void> {
  const { req, params, principal } = context;
  const trace = tracer.start(
    params["model"]!,
    { traceparent: headerText(req.headers["traceparent"]), tracestate: headerText(req.headers["tracestate"]) },
    "http",
  );
  // Not sampled: as if tracing were off.
  if (trace === undefined) return handleUntracedInfer(engine, options, context);
  let shared: SharedMemoryUse | undefined;
  try {
    const endDecode = trace.step("decode request");
    const { request, binaryDataOutput } = await readInferRequest(options, context);
    endDecode();
    if (request.id !== undefined) {
      context.inferId = request.id;
      trace.attributes({ "operon.request_id": request.id });
    }
    if (trace.tensors) trace.attributes(tensorAttributes(request));
    applyKeyPriority(engine, request, principal);
    if (request.sharedMemory === true) {
      const endShm = trace.step("read shared memory");
      shared = await resolveSharedMemory(options, request, principal);
      endShm();
    }
    await inferAndRespond(engine, request, binaryDataOutput, context, shared, options.sharedMemory, trace);
    trace.end();
  } catch (error) {
    trace.end(error);
    throw error;
  } finally {
    if (shared !== undefined) options.sharedMemory!.release(shared);
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** trace_level TENSORS: what the request's tensors are (names, datatypes, shapes; never their values). */
function tensorAttributes(request: InferRequest): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const input of request.inputs) {
    attributes[`operon.input.${input.name}`] = `${input.datatype}[${input.shape.join(",")}]`;
  }
  return attributes;
}

async function resolveSharedMemory(
  options: RouterOptions,
  request: InferRequest,
  principal: Principal | null,
): Promise<SharedMemoryUse> {
  if (options.sharedMemory === undefined) {
    throw new OperonError("UNSUPPORTED", "this server does not offer the 'system_shared_memory' extension");
  }
  return options.sharedMemory.resolve(request, principal?.keyId ?? null);
}

async function inferAndRespond(
  engine: InferenceEngine,
  request: InferRequest,
  binaryDataOutput: boolean,
  context: RequestContext,
  shared: SharedMemoryUse | undefined,
  sharedMemory: SystemSharedMemory | undefined,
  trace: RequestTrace | undefined,
): Promise<void> {
  // The engine may queue the request for a while: if the client gives up
  // meanwhile, the signal lets it drop the work instead of computing for nobody.
  const { res } = context;
  const gone = clientGone(context);
  request.signal = gone.signal;
  // The instance's log lines for this request carry the id the client got back.
  request.logId = context.requestId;
  let response;
  const endInfer = trace?.engine(request);
  try {
    response = await engine.infer(request);
  } catch (error) {
    if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
    throw error;
  } finally {
    gone.dispose();
    endInfer?.();
  }
  if (gone.closed) throw new ClientClosedError("client closed the connection before the inference finished");
  if (shared !== undefined) response = await sharedMemory!.writeOutputs(shared, response);

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
