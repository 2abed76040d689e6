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
  /**
   * Heap the parsed value may take, by estimateParsedHeapBytes; undefined = no check. The decode pool's threads set
   * it from their heap limit: a thread whose heap runs out inside JSON.parse does not always stop cleanly (Node's
   * worker gets 16 MiB of grace to stop a parse that checks for termination only when it returns; beyond it the
   * whole process aborts with "Reached heap limit"), so a body that cannot fit is refused before parsing.
   */
  maxHeapBytes?: number;
}

export const DEFAULT_JSON_BUDGET: JsonBudget = { maxDepth: 64, maxContainers: 1_000_000 };

const QUOTE = 0x22;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Throws INVALID_ARG naming the limit when the body's JSON would exceed the budget. Malformed JSON is left to the parser. */
export function assertJsonWithinBudget(body: Uint8Array, budget: JsonBudget = DEFAULT_JSON_BUDGET): void {
  if (budget.maxHeapBytes === undefined && fewOpenings(body, Math.min(budget.maxDepth, budget.maxContainers))) return;
  let depth = 0;
  let containers = 0;
  let commas = 0;
  let strings = 0;
  let stringBytes = 0;
  const length = body.length;
  for (let i = 0; i < length; i += 1) {
    const byte = body[i]!;
    if (byte === QUOTE) {
      // Skip the string: up to the next quote not escaped by a backslash.
      const start = i;
      for (i += 1; i < length; i += 1) {
        const inner = body[i]!;
        if (inner === BACKSLASH) i += 1;
        else if (inner === QUOTE) break;
      }
      strings += 1;
      stringBytes += i - start - 1;
    } else if (byte === COMMA) {
      commas += 1;
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
  if (budget.maxHeapBytes === undefined) return;
  const needed = estimateParsedHeapBytes({ containers, values: commas + containers + 1, strings, stringBytes });
  if (needed > budget.maxHeapBytes) {
    throw new OperonError(
      "INVALID_ARG",
      `the request is too large or too complex to decode within the decoder's ${mebibytes(budget.maxHeapBytes / HEAP_SHARE)} MiB of memory (parsing it would take about ${mebibytes(needed)} MiB); send tensors as binary data`,
    );
  }
}

/**
 * True when the body holds at most `limit` '[' and '{' bytes, strings included: then it has at most that many
 * objects and arrays, nested at most that deep, and the byte-by-byte scan can be skipped. A KServe body of flat
 * tensors has a handful (an MLP's 3.9 KB request: 5), found with Buffer#indexOf (memchr) in about 0.1 µs where the
 * scan takes 8 µs on this machine's Node 20. Only for Buffers: a plain Uint8Array's indexOf is a slow JS builtin.
 */
function fewOpenings(body: Uint8Array, limit: number): boolean {
  if (!Buffer.isBuffer(body)) return false;
  let count = 0;
  for (const opening of OPENINGS) {
    for (let at = body.indexOf(opening); at !== -1; at = body.indexOf(opening, at + 1)) {
      count += 1;
      if (count > limit) return false;
    }
  }
  return true;
}

const OPENINGS = [OPEN_BRACKET, OPEN_BRACE] as const;

/** The share of a thread's heap limit a parse may take (the rest: the thread's own code, the GC's working room). */
export const HEAP_SHARE = 0.75;

/**
 * The V8 heap JSON.parse needs for a body with these counts, generously: 8 bytes per value (an array or
 * object slot; numbers in arrays are unboxed doubles or small integers), 24 bytes plus the characters per
 * string, 64 bytes per object or array, all doubled for the copies arrays make as they grow.
 */
export function estimateParsedHeapBytes(counts: {
  containers: number;
  values: number;
  strings: number;
  stringBytes: number;
}): number {
  return 2 * (8 * counts.values + 24 * counts.strings + counts.stringBytes + 64 * counts.containers);
}

const mebibytes = (bytes: number): number => Math.round(bytes / (1024 * 1024));
