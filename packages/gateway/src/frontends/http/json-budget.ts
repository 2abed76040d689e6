import { OperonError } from "@operon/protocol/errors";

/**
 * What a JSON request body may hold before it is parsed. JSON.parse has no
 * limits of its own: a 17 MB `{"inputs":[{},{},…]}` becomes millions of
 * objects (seconds of CPU, gigabytes of heap). The scan below bounds the
 * nesting depth and the number of objects and arrays in one pass over the
 * bytes (strings skipped, escapes honoured), before any parsing; numbers
 * and strings are bounded by the body size limit alone.
 */
export interface JsonBudget {
  /** Deepest nesting of objects and arrays (a KServe body needs ~4, plus a tensor's rank for nested `data`). */
  maxDepth: number;
  /** Objects and arrays in the whole body. */
  maxContainers: number;
}

export const DEFAULT_JSON_BUDGET: JsonBudget = { maxDepth: 64, maxContainers: 1_000_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Throws INVALID_ARG naming the limit when the body's JSON would exceed the budget. Malformed JSON is left to the parser. */
export function assertJsonWithinBudget(body: Uint8Array, budget: JsonBudget = DEFAULT_JSON_BUDGET): void {
  let depth = 0;
  let containers = 0;
  const length = body.length;
  for (let i = 0; i < length; i += 1) {
    const byte = body[i]!;
    if (byte === QUOTE) {
      // Skip the string: up to the next quote not escaped by a backslash.
      for (i += 1; i < length; i += 1) {
        const inner = body[i]!;
        if (inner === BACKSLASH) i += 1;
        else if (inner === QUOTE) break;
      }
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth += 1;
      containers += 1;
      if (depth > budget.maxDepth) {
        throw new OperonError(
          "INVALID_ARG",
          `request JSON is nested deeper than ${budget.maxDepth} levels (byte ${i})`,
        );
      }
      if (containers > budget.maxContainers) {
        throw new OperonError(
          "INVALID_ARG",
          `request JSON holds more than ${budget.maxContainers} objects and arrays (byte ${i}); send tensors as flat arrays or binary data`,
        );
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
}
