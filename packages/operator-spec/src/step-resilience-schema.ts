import { z } from "zod";
import { DATATYPES } from "@operon/protocol/datatypes";

/**
 * What a model step does when its model fails (issue 25): `retry`,
 * `circuitBreaker` and `fallback`, optional fields of a model step. The
 * gateway's step-resilience.ts runs them; the defaults below are theirs.
 *
 * - retry: an attempt that fails with a retryable error (UNAVAILABLE: a
 *   worker restart, a full queue, an instance going away) is tried again
 *   after an exponential backoff with jitter, up to maxAttempts in all.
 *   Other errors (a bad input, a model bug) are never retried.
 * - circuitBreaker: failureThreshold server-side failures (UNAVAILABLE,
 *   INTERNAL, UNKNOWN) within windowMs open the breaker: the step then fails
 *   at once (or uses its fallback) without calling its model, for openMs;
 *   after that, halfOpenProbes calls go through as probes: a success closes
 *   it, a failure opens it again.
 * - fallback: used when the breaker is open or the step failed with a
 *   server-side error after its retries: either another model called with
 *   the step's inputs and outputs mapping, or fixed default outputs (one per
 *   model output the step maps).
 *
 * Messages follow operator-spec-schema.ts's rules (a message that starts
 * with its field's name is reported at the object holding the field).
 */
export const RETRY_DEFAULTS = { maxAttempts: 3, initialBackoffMs: 50, maxBackoffMs: 1000, multiplier: 2 } as const;
export const CIRCUIT_BREAKER_DEFAULTS = {
  failureThreshold: 5,
  windowMs: 10_000,
  openMs: 5_000,
  halfOpenProbes: 1,
} as const;

const intAtLeast = (field: string, min: number, max?: number) => {
  const message = `${field} must be an integer >= ${min}${max !== undefined ? ` and <= ${max}` : ""}`;
  const base = z.int({ error: message }).min(min, { error: message });
  return (max !== undefined ? base.max(max, { error: message }) : base).optional();
};

export const RetrySpecSchema = z
  .strictObject(
    {
      maxAttempts: intAtLeast("maxAttempts", 1, 10).describe(
        `Attempts in all, the first included (default ${RETRY_DEFAULTS.maxAttempts})`,
      ),
      initialBackoffMs: intAtLeast("initialBackoffMs", 0, 60_000).describe(
        `Backoff before the second attempt, ms, before jitter (default ${RETRY_DEFAULTS.initialBackoffMs})`,
      ),
      maxBackoffMs: intAtLeast("maxBackoffMs", 0, 60_000).describe(
        `Longest backoff, ms (default ${RETRY_DEFAULTS.maxBackoffMs})`,
      ),
      multiplier: z
        .number({ error: "multiplier must be a number >= 1 and <= 10" })
        .min(1, { error: "multiplier must be a number >= 1 and <= 10" })
        .max(10, { error: "multiplier must be a number >= 1 and <= 10" })
        .optional()
        .describe(`Backoff growth per attempt (default ${RETRY_DEFAULTS.multiplier})`),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? `unknown field(s) ${issue.keys.map((key) => `'${key}'`).join(", ")}; retry takes maxAttempts, initialBackoffMs, maxBackoffMs, multiplier`
          : "retry must be an object { maxAttempts?, initialBackoffMs?, maxBackoffMs?, multiplier? }",
    },
  )
  .refine(
    (retry) =>
      (retry.initialBackoffMs ?? RETRY_DEFAULTS.initialBackoffMs) <=
      (retry.maxBackoffMs ?? RETRY_DEFAULTS.maxBackoffMs),
    { error: "initialBackoffMs must not exceed maxBackoffMs" },
  )
  .describe("Retries of UNAVAILABLE failures with exponential backoff and jitter");

export const CircuitBreakerSpecSchema = z
  .strictObject(
    {
      failureThreshold: intAtLeast("failureThreshold", 1).describe(
        `Failures within windowMs that open the breaker (default ${CIRCUIT_BREAKER_DEFAULTS.failureThreshold})`,
      ),
      windowMs: intAtLeast("windowMs", 1).describe(
        `Sliding window the failures are counted in, ms (default ${CIRCUIT_BREAKER_DEFAULTS.windowMs})`,
      ),
      openMs: intAtLeast("openMs", 1).describe(
        `How long the breaker stays open before probing, ms (default ${CIRCUIT_BREAKER_DEFAULTS.openMs})`,
      ),
      halfOpenProbes: intAtLeast("halfOpenProbes", 1).describe(
        `Calls let through at once while half-open (default ${CIRCUIT_BREAKER_DEFAULTS.halfOpenProbes})`,
      ),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? `unknown field(s) ${issue.keys.map((key) => `'${key}'`).join(", ")}; circuitBreaker takes failureThreshold, windowMs, openMs, halfOpenProbes`
          : "circuitBreaker must be an object { failureThreshold?, windowMs?, openMs?, halfOpenProbes? }",
    },
  )
  .describe("A circuit breaker shared by every request of the operator");

/**
 * A fixed output: datatype, shape and data in KServe JSON form. When the
 * operator batches (maxBatchSize > 0) the shape leaves out the batch
 * dimension, as dims do, and the output is repeated once per inference.
 */
export const DefaultOutputSchema = z
  .strictObject(
    {
      datatype: z.enum(DATATYPES, {
        error: (issue) =>
          `datatype must be one of the KServe datatypes (FP32, INT64, BYTES, ...), got ${JSON.stringify(issue.input)}`,
      }),
      shape: z.array(z.int().min(0), { error: "shape must be an array of integers >= 0" }),
      data: z.array(z.union([z.number(), z.string(), z.boolean()]), {
        error: "data must be a flat array of numbers, strings (BYTES) or booleans (BOOL)",
      }),
    },
    { error: "must be an object { datatype, shape, data }" },
  )
  .superRefine((output, context) => {
    const count = output.shape.reduce((product, dim) => product * dim, 1);
    if (count !== output.data.length)
      context.addIssue({
        code: "custom",
        message: `data has ${output.data.length} element(s) but shape [${output.shape.join(", ")}] needs ${count}`,
      });
  });

export const FallbackSpecSchema = z
  .union(
    [
      z.strictObject({
        model: z
          .string({ error: "model must be a non-empty string" })
          .min(1, { error: "model must be a non-empty string" }),
        version: z.string({ error: 'version must be a string (e.g. "1")' }).optional(),
      }),
      z.strictObject({
        outputs: z.record(z.string(), DefaultOutputSchema),
      }),
    ],
    { error: (issue) => fallbackProblem(issue.input) },
  )
  .describe("Another model called with the step's inputs and outputs mapping, or default outputs by model output name");

/** What is wrong with a fallback (the union's own issues would list both alternatives). */
function fallbackProblem(value: unknown): string {
  const shape =
    'fallback must be { "model": "<name>", "version"?: "<v>" } or { "outputs": { "<model output>": { datatype, shape, data } } }';
  if (typeof value !== "object" || value === null || Array.isArray(value)) return shape;
  const record = value as Record<string, unknown>;
  if ("model" in record && "outputs" in record) return "fallback takes either model or outputs, not both";
  if ("model" in record) {
    if (typeof record["model"] !== "string" || record["model"] === "")
      return "fallback model must be a non-empty string";
    if ("version" in record && typeof record["version"] !== "string")
      return 'fallback version must be a string (e.g. "1")';
    return shape;
  }
  if ("outputs" in record) {
    const outputs = record["outputs"];
    if (typeof outputs !== "object" || outputs === null || Array.isArray(outputs))
      return "fallback outputs must be an object of model output name -> { datatype, shape, data }";
    for (const [name, output] of Object.entries(outputs)) {
      const parsed = DefaultOutputSchema.safeParse(output);
      if (!parsed.success) return `fallback output '${name}': ${parsed.error.issues[0]?.message ?? "invalid"}`;
      const { shape: dims, data } = parsed.data;
      const count = dims.reduce((product, dim) => product * dim, 1);
      if (count !== data.length)
        return `fallback output '${name}': data has ${data.length} element(s) but shape [${dims.join(", ")}] needs ${count}`;
    }
  }
  return shape;
}

export type RetrySpec = z.output<typeof RetrySpecSchema>;
export type CircuitBreakerSpec = z.output<typeof CircuitBreakerSpecSchema>;
export type FallbackSpec = z.output<typeof FallbackSpecSchema>;
export type DefaultOutput = z.output<typeof DefaultOutputSchema>;
