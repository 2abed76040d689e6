/**
 * tokenizer_ts: a batched TypeScript-backend model (see ../config.pbtxt).
 *
 * Each request's `text` is a [batch, 1] BYTES tensor; the answer holds, per
 * element, `lengths` (its UTF-8 byte length, INT32) and `upper` (the string
 * in upper case), with the same shape. execute() answers every request of
 * the batch, in order; a request it cannot serve gets an Error of its own
 * and the others still succeed.
 *
 * The import is type-only (erased when the backend transpiles this file),
 * so the model also runs outside this repository.
 */
import type { ExecuteContext, TypedRequest, TypedResponse } from "@operon/backend-api/typescript-model-api";

/** The backend API version this model is written for: a server that cannot serve it refuses the load, naming both. */
export const operonBackendApi = { major: 1, minor: 0 };

export default class Tokenizer {
  execute(requests: TypedRequest[], ctx: ExecuteContext): Array<TypedResponse | Error> {
    return requests.map((request): TypedResponse | Error => {
      const text = request.inputs.get("text");
      if (text === undefined || text.datatype !== "BYTES") return ctx.error("INVALID_ARG", "input 'text' (BYTES) is required");
      const elements = text.toBuffers();
      return {
        outputs: [
          ctx.tensor.int32("lengths", text.shape, elements.map((element) => element.length)),
          ctx.tensor.bytes("upper", text.shape, elements.map((element) => element.toString("utf8").toUpperCase())),
        ],
      };
    });
  }
}
