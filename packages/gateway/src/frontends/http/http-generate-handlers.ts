import { encodeInferResponseBody } from "@operon/protocol/binary-tensor-codec";
import { OperonError, isOperonError } from "@operon/protocol/errors";
import type { InferRequest, InferResponse } from "@operon/protocol/inference";
import { applyKeyPriority } from "../../auth/key-priority.js";
import { Cancellation } from "../../engine/cancellation.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { clientGone } from "./http-client-gone.js";
import type { RequestContext, RouterOptions } from "./http-context.js";
import { ClientClosedError } from "./http-errors.js";
import { decodeGenerateBody, encodeGenerateResponse } from "./http-generate.js";
import { readInferRequest, readJsonBody } from "./http-request-read.js";
import { sendBody } from "./http-respond.js";
import { EventStream } from "./http-sse.js";

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
export async function handleGenerate(
  engine: InferenceEngine,
  options: RouterOptions,
  context: RequestContext,
): Promise<void> {
  const { req, res } = context;
  const request = await decodeGenerateRequest(engine, options, context);
  applyKeyPriority(engine, request, context.principal);
  request.logId = context.requestId;
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
export async function handleEventStream(
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
    if (request.sharedMemory === true) {
      throw new OperonError(
        "UNSUPPORTED",
        "infer_stream does not read or write shared-memory tensors; use /infer (or gRPC ModelInfer)",
      );
    }
    // Events are JSON: outputs never travel as binary here.
    outputs = request.outputs?.map(({ name }) => ({ name }));
  }
  applyKeyPriority(engine, request, principal);
  request.logId = context.requestId;
  const gone = clientGone(context);
  request.signal = gone.signal;
  const events = new EventStream(res);
  try {
    await engine.inferStream(request, (response, final) => {
      if (isOperonError(response)) {
        if (response.kind === "INTERNAL")
          options.logger.error(
            {
              model: request.modelName,
              requestId: context.requestId,
              ...(request.id !== undefined ? { id: request.id } : {}),
              err: response.message,
            },
            "streamed inference failed",
          );
        events.sendError(response.message);
      } else if (kind === "generate") {
        if (!final || response.outputs.length > 0) events.send(encodeGenerateResponse(response, request.id));
      } else {
        const parameters = { ...response.parameters, triton_final_response: final };
        const encoded = encodeInferResponseBody(
          { ...response, id: response.id ?? request.id, parameters },
          { binaryDataOutput: false, ...(outputs !== undefined ? { outputs } : {}) },
        );
        events.send(encoded.body as string);
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
