import type { IncomingMessage, ServerResponse } from "node:http";
import { INFERENCE_HEADER_CONTENT_LENGTH, parseInferenceHeaderLength } from "@operon/protocol/binary-tensor-codec";
import { DECODE_OFF_LOOP_BYTES } from "../decode/decode-pool.js";
import { decodeHttpInfer, decodeJson } from "../decode/decode-tasks.js";
import { DEFAULT_JSON_BUDGET } from "./json-budget.js";
import { readBody } from "./http-body-reader.js";
import type { RequestContext, RouterOptions } from "./http-context.js";
import { type DecodedInferRequest, decodeInferBody } from "./http-infer-request.js";

/**
 * Reads and decodes an /infer (or /infer_stream) body: JSON, JSON + binary
 * data, or a raw binary input. A JSON part of DECODE_OFF_LOOP_BYTES or more
 * is decoded on the decode pool, never on the event loop; every JSON part
 * is checked against the JSON budget before it is parsed.
 */
export async function readInferRequest(
  options: RouterOptions,
  { req, res, params, life }: RequestContext,
): Promise<DecodedInferRequest> {
  const modelName = params["model"]!;
  const modelVersion = params["version"];
  const body = await readBody(req, res, options.maxBodyBytes, options.reading, life);
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
  if (jsonBytes < DECODE_OFF_LOOP_BYTES) {
    return decodeHttpInfer(body, headerLength, target, DEFAULT_JSON_BUDGET, options.binaryHeaders);
  }
  return options.decodePool.decodeInfer({ kind: "http-infer", body, headerLength, target }, true);
}

/** Reads a JSON body (budget checked first); one of DECODE_OFF_LOOP_BYTES or more is parsed on the decode pool. */
export async function readJsonBody(
  options: RouterOptions,
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Promise<unknown> {
  const body = await readBody(req, res, limitBytes, options.reading);
  return body.length < DECODE_OFF_LOOP_BYTES ? decodeJson(body) : options.decodePool.decodeJson(body, true);
}
