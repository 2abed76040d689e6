import type * as grpc from "@grpc/grpc-js";
import { OperonError, isOperonError } from "@operon/protocol/errors";
import type { InferRequest } from "@operon/protocol/inference";
import type { Parameters as InferParameters } from "@operon/protocol/tensor";
import type { GatewayAccessPolicy, Principal } from "../../auth/access-policy.js";
import { logRequestFailure, requestFailureOf } from "../failure-log.js";
import { checkShadowModelAccess } from "../../auth/shadow-model-access.js";
import { applyKeyPriority } from "../../auth/key-priority.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { authorizationOf, callLogOf, cancelledError, requestIdMetadata, statusOf } from "./grpc-calls.js";
import type { Logger } from "@operon/protocol/logger";
import { DECODE_OFF_LOOP_BYTES } from "../decode/decode-pool.js";
import { peekInferRequestNames } from "../decode/protobuf-budget.js";
import { encodeInferResponse } from "./grpc-infer-codec.js";
import type { GrpcInferDecoding, RawInferMessage } from "./grpc-infer-decoding.js";
import type { WireInferRequest } from "./grpc-wire.js";

/** Request parameter (Triton's): send the final flag of a decoupled stream as an empty response of its own. */
const EMPTY_FINAL_PARAMETER = "triton_enable_empty_final_response";
/** Response parameter (Triton's) on every response of a decoupled model: true on the request's last one. */
const FINAL_RESPONSE_PARAMETER = "triton_final_response";
/** Messages of one stream waiting for their decode; beyond this the stream is paused (HTTP/2 flow control then holds the client). */
const MAX_MESSAGES_AWAITING_DECODE = 8;

/**
 * Bidirectional stream: requests run concurrently and their responses are
 * written as soon as they come (not in request order), each with its
 * request's id. A non-decoupled model answers each request once. A
 * decoupled model answers with every response it sends, in order, each
 * marked with the bool parameter triton_final_response (true on the last);
 * a final flag that comes without outputs is written as an empty response
 * only when the request asked for it (triton_enable_empty_final_response:
 * true), as Triton does. Failures become error_message entries (with the
 * request's id) and the stream stays open; the call ends once the client
 * has half-closed and nothing is in flight. A cancelled call cancels its
 * requests: queued ones are dropped, running ones' later responses too.
 *
 * Messages are decoded as unary ModelInfer messages are (same size limit,
 * entry budget and decode pool), one at a time per stream so requests reach
 * the engine in the order they were sent.
 */
export function streamInfer(
  engine: InferenceEngine,
  decoding: GrpcInferDecoding,
  access: GatewayAccessPolicy | undefined,
  logger?: Logger,
): grpc.handleBidiStreamingCall<RawInferMessage, object> {
  return (call) => {
    // The key is checked once, when the stream opens (a bad one fails the call);
    // each request on it then counts against the key's quota (admit), and fails alone when over it.
    // One request id for the stream (the caller's x-request-id, or a new one), sent back in the initial
    // metadata: every request on it, and so every line logged for them, carries it.
    const log = callLogOf(call);
    let principal: Principal | null;
    try {
      principal = access?.authenticate(authorizationOf(call.metadata), "infer") ?? null;
    } catch (error) {
      call.emit("error", statusOf(error, call.getPath(), logger, log));
      return;
    }
    call.sendMetadata(requestIdMetadata(log.requestId));
    const inFlight = new Set<AbortController>();
    let clientDone = false;
    let closed = false;
    const finishIfIdle = () => {
      if (clientDone && inFlight.size === 0 && !closed) {
        closed = true;
        if (!call.destroyed) call.end();
      }
    };
    const write = (reply: object): void => {
      if (!closed && !call.cancelled && !call.destroyed) call.write(reply);
    };
    // The id lets the client tell which request failed (Triton does the same).
    const errorReply = (message: WireInferRequest, error: unknown, final?: boolean): object => {
      const failure = requestFailureOf(error);
      logRequestFailure(
        logger,
        isOperonError(error) ? failure : { ...failure, message: "stream inference failed unexpectedly" },
        error,
        message.id !== ""
          ? { model: message.model_name, requestId: log.requestId, id: message.id }
          : { model: message.model_name, requestId: log.requestId },
      );
      return {
        error_message: failure.message,
        infer_response: {
          model_name: message.model_name,
          model_version: message.model_version,
          id: message.id,
          ...(final !== undefined ? { parameters: { [FINAL_RESPONSE_PARAMETER]: { bool_param: final } } } : {}),
        },
      };
    };
    // The previous message's decode: the next one starts after it.
    let lastDecode: Promise<unknown> = Promise.resolve();
    let awaitingDecode = 0;
    const decodeInOrder = (raw: RawInferMessage): Promise<InferRequest> => {
      awaitingDecode += 1;
      if (awaitingDecode > MAX_MESSAGES_AWAITING_DECODE) call.pause();
      const decoded = lastDecode.then(() => decoding.decode(raw, [EMPTY_FINAL_PARAMETER]));
      lastDecode = decoded.then(
        () => undefined,
        () => undefined,
      );
      void lastDecode.then(() => {
        awaitingDecode -= 1;
        if (awaitingDecode <= MAX_MESSAGES_AWAITING_DECODE && call.isPaused()) call.resume();
      });
      return decoded;
    };
    const runOne = async (raw: RawInferMessage, signal: AbortSignal): Promise<void> => {
      let request: InferRequest;
      let emptyFinal: boolean;
      let message: WireInferRequest;
      // A large message moves to the decode pool (its bytes are gone here afterwards): read its names first, for an error reply.
      const names = raw.raw.length >= DECODE_OFF_LOOP_BYTES ? peekInferRequestNames(raw.raw) : undefined;
      try {
        if (principal !== null) access?.admit(principal);
        request = await decodeInOrder(raw);
        checkShadowModelAccess(principal, request.modelName, "infer");
        message = { model_name: request.modelName, model_version: request.modelVersion ?? "", id: request.id ?? "" };
        emptyFinal = takeEmptyFinalFlag(request.parameters);
        applyKeyPriority(engine, request, principal);
        if (request.sharedMemory === true) {
          throw new OperonError(
            "UNSUPPORTED",
            "ModelStreamInfer does not read or write shared-memory tensors; use ModelInfer",
          );
        }
      } catch (error) {
        write(errorReply(names ?? peekInferRequestNames(raw.raw), error));
        return;
      }
      try {
        await engine.inferStream({ ...request, signal, logId: log.requestId }, (response, final, decoupled) => {
          if (!decoupled) {
            // A plain model's one response, as ModelInfer would answer it.
            write(
              isOperonError(response)
                ? errorReply(message, response)
                : { error_message: "", infer_response: encodeInferResponse(response, request.id) },
            );
            return;
          }
          if (isOperonError(response)) {
            write(errorReply(message, response, final));
            return;
          }
          if (final && response.outputs.length === 0 && !emptyFinal) return;
          const parameters = { ...response.parameters, [FINAL_RESPONSE_PARAMETER]: final };
          write({ error_message: "", infer_response: encodeInferResponse({ ...response, parameters }, request.id) });
        });
      } catch (error) {
        write(
          errorReply(message, error, engine.isDecoupled(request.modelName, request.modelVersion) ? true : undefined),
        );
      }
    };

    call.on("data", (raw: RawInferMessage) => {
      // Counted against the frontend's message budget until its responses are written (GrpcMessageBudget):
      // a message over it gets RESOURCE_EXHAUSTED as its reply, and the stream stays open.
      let release: () => void;
      try {
        release = decoding.hold(raw);
      } catch (error) {
        write(errorReply(peekInferRequestNames(raw.raw), error));
        return;
      }
      const controller = new AbortController();
      inFlight.add(controller);
      void runOne(raw, controller.signal).then(() => {
        release();
        inFlight.delete(controller);
        finishIfIdle();
      });
    });
    call.on("end", () => {
      clientDone = true;
      finishIfIdle();
    });
    call.on("cancelled", () => {
      closed = true;
      for (const controller of inFlight) controller.abort(cancelledError());
    });
    call.on("error", (error: unknown) =>
      logger?.warn({ err: error, requestId: log.requestId }, "gRPC inference stream error"),
    );
  };
}

/** Takes triton_enable_empty_final_response out of the parameters (the frontend's business, not the model's). */
function takeEmptyFinalFlag(parameters: InferParameters): boolean {
  const value = parameters[EMPTY_FINAL_PARAMETER];
  if (value === undefined) return false;
  if (typeof value !== "boolean")
    throw new OperonError("INVALID_ARG", `parameter '${EMPTY_FINAL_PARAMETER}' must be a bool_param`);
  delete parameters[EMPTY_FINAL_PARAMETER];
  return value;
}

// ---- Health ----
