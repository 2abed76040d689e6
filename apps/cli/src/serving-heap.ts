import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the serving process's old generation grow past what survived the last full collection (mark-
 * compact) before it starts the next one: 4× (+300 %), the largest factor V8's own heuristic ever picks; under load
 * that heuristic settles near 2×. The limit stays capped halfway to the heap's maximum, as always.
 *
 * Why: every request body, batch hand-off and thread transfer is an ArrayBuffer. One that is still in flight when a
 * scavenge runs (a request waiting for its instance thread) is promoted, and only a full collection frees a promoted
 * buffer; V8 counts those bytes against the old generation's room left. With ~23 MB live and a 2× limit, about
 * 7 MB of such buffers (a few dozen 110 KB images) started the next full collection: 37–77 of them in 10 s of
 * MobileNet at c8, each ~20 ms of the event loop's time plus four helper threads (bench/run-bench.mjs section 3:
 * Operon's CPU per request 2.2 ms vs the minimal server's 0.9 ms). With 4× the same load ran 2 full collections,
 * and CPU per request fell to the minimal server's. The cost: the heap may hold up to 3× its live size in garbage
 * between full collections (tens of MB for a gateway).
 */
export const SERVING_HEAP_GROWING_PERCENT = 300;

/**
 * Applies SERVING_HEAP_GROWING_PERCENT to this process (every isolate: the gateway's loop and its threads),
 * unless the operator chose a factor themselves (`node --heap-growing-percent=N` or NODE_OPTIONS). V8 reads the
 * flag each time it computes a limit, so setting it after start works: from the next full collection on.
 * Returns the percent in force, or undefined when the operator's own applies.
 */
export function tuneServingHeap(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
  setV8Flags: (flags: string) => void = setFlagsFromString,
): number | undefined {
  const chosen = (arg: string) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg);
  if (execArgv.some(chosen) || (nodeOptions ?? "").split(/\s+/).some(chosen)) return undefined;
  setV8Flags(`--heap-growing-percent=${SERVING_HEAP_GROWING_PERCENT}`);
  return SERVING_HEAP_GROWING_PERCENT;
}
