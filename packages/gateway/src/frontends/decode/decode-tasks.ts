import { OperonError } from "@operon/protocol/errors";
import type { InferRequest } from "@operon/protocol/inference";
import { splitBinaryBody } from "@operon/protocol/binary-tensor-codec";
import {
  assembleInferRequest,
  type DecodedInferRequest,
  decodeInferHeader,
  decodeInferJson,
  type InferTarget,
} from "../http/http-infer-request.js";
import type { BinaryHeaderMemo } from "../http/binary-header-memo.js";
import { parseJsonBody } from "../http/http-body-reader.js";
import { DEFAULT_JSON_BUDGET, type JsonBudget, assertJsonWithinBudget } from "../http/json-budget.js";
import { decodeInferRequest } from "../grpc/grpc-infer-codec.js";
import type { WireInferRequest } from "../grpc/grpc-wire.js";
import { assertInferMessageWithinBudget } from "./protobuf-budget.js";
import { decodePlainModelInfer } from "./plain-model-infer.js";

/**
 * The decoding work the frontends hand to the decode pool when a body is
 * large (decode-pool.ts), or run inline when it is small: the same
 * functions either way, budgets checked before any parsing.
 */
export type DecodeTask =
  /** A KServe v2 /infer body in JSON, or JSON + binary data (headerLength > 0). */
  | { kind: "http-infer"; body: Uint8Array; headerLength: number | undefined; target: InferTarget }
  /** Any other JSON body (model load with uploaded files, operator specs). */
  | { kind: "json"; body: Uint8Array }
  /** A serialized gRPC ModelInferRequest; `allowReserved`: triton_ parameters the frontend reads itself. */
  | { kind: "grpc-infer"; message: Uint8Array; allowReserved?: readonly string[] };

/** `memo`: binary requests whose JSON header repeats the last one their model got skip its parsing (binary-header-memo.ts). */
export function decodeHttpInfer(
  body: Buffer,
  headerLength: number | undefined,
  target: InferTarget,
  budget: JsonBudget = DEFAULT_JSON_BUDGET,
  memo?: BinaryHeaderMemo,
): DecodedInferRequest {
  if (headerLength === undefined) {
    assertJsonWithinBudget(body, budget);
    return decodeInferJson(parseJsonBody(body), undefined, target);
  }
  const { header, binary } = splitBinaryBody(body, headerLength);
  const known = memo?.lookup(target.modelName, header);
  if (known !== undefined) return assembleInferRequest(known, binary, target, true);
  assertJsonWithinBudget(header, budget);
  const decoded = decodeInferHeader(parseJsonBody(header));
  const shared = memo?.remember(target.modelName, header, decoded) === true;
  return assembleInferRequest(decoded, binary, target, shared);
}

export function decodeJson(body: Buffer, budget: JsonBudget = DEFAULT_JSON_BUDGET): unknown {
  assertJsonWithinBudget(body, budget);
  return parseJsonBody(body);
}

export function decodeGrpcInfer(
  message: Buffer,
  deserialize: (message: Buffer) => WireInferRequest,
  allowReserved: readonly string[] = [],
): InferRequest {
  // The common message, read from its bytes; anything else (parameters, contents, errors) the generic way.
  return decodePlainModelInfer(message) ?? decodeGrpcInferGenerically(message, deserialize, allowReserved);
}

/** Any ModelInferRequest: budget checked on its bytes, decoded by protobufjs, then converted (decodeInferRequest). */
export function decodeGrpcInferGenerically(
  message: Buffer,
  deserialize: (message: Buffer) => WireInferRequest,
  allowReserved: readonly string[] = [],
): InferRequest {
  assertInferMessageWithinBudget(message);
  let wire: WireInferRequest;
  try {
    wire = deserialize(message);
  } catch (error) {
    // protobufjs throws plain Errors (bad wire type, truncated field): the client's message is malformed, not the server.
    throw new OperonError("INVALID_ARG", `malformed ModelInferRequest: ${(error as Error).message}`, { cause: error });
  }
  return decodeInferRequest(wire, allowReserved);
}
