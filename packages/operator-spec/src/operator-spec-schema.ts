import { z } from "zod";
import { DATATYPES } from "@operon/protocol/datatypes";
import { CircuitBreakerSpecSchema, FallbackSpecSchema, RetrySpecSchema } from "./step-resilience-schema.js";

/**
 * The operator spec format, defined once: the types below, the parser
 * (parse-operator-spec.ts), the console's editor and the JSON Schema
 * (json-schema.ts, operator-spec.schema.json) all derive from these schemas.
 *
 * An operator: a DAG of model calls, conditional routes and early exits,
 * served like a model. Steps exchange tensors by name through a whiteboard
 * (Triton ensembles' semantics): a step reads operator inputs or tensors
 * other steps produce, and names the tensors it produces.
 *
 * Control flow, on top of the data flow:
 * - A `route` evaluates the first element of a tensor (or a request
 *   parameter, `"$param.<name>"`) and activates the steps of the first case
 *   that matches (else `default`). Steps named in a route's cases run only
 *   when activated; the others are skipped, and so is every step that reads
 *   a tensor only skipped steps would produce.
 * - An `exit` evaluates its condition as soon as its tensors are ready; when
 *   it holds, the operator answers with the exit's tensors at once and
 *   cancels the rest. Steps listed after an exit in `steps` start only once
 *   that exit has decided not to exit, so an exit placed early keeps the
 *   expensive steps behind it from starting.
 *
 * Two steps may produce the same tensor only when they sit in different
 * cases of one route (at most one of them runs).
 *
 * Tensor dims follow model configs: when `maxBatchSize` > 0 they exclude the
 * batch dimension, which operator inputs carry first and pass through as
 * sent. -1 is any size.
 *
 * Error messages are written for parseOperatorSpec's formatter: a message
 * that starts with the name of the field it is about is reported at the
 * object holding that field ("step 'a': model must be ..."), any other
 * after its path ("step 'r': cases[0].when: must have ..."). UP marks a
 * message about a list or map element that is reported at the list or map.
 */
export const PARAM_PREFIX = "$param.";

/** Prefix of an error message reported at its parent's path (the list or map holding the element). */
export const UP = "\u0000up:";

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const nonEmpty = (message: string) => z.string({ error: message }).min(1, { error: message });

/** name -> tensor name, both non-empty. */
const tensorMap = (description: string) =>
  z
    .record(z.string(), nonEmpty(`${UP}must be an object of name -> tensor name (non-empty strings)`), {
      error: "must be an object of name -> tensor name (non-empty strings)",
    })
    .describe(description);

const count = (description: string) =>
  z
    .int({ error: (issue) => `must be an integer >= 0, got ${JSON.stringify(issue.input)}` })
    .min(0)
    .optional()
    .describe(description);

export const TensorSpecSchema = z
  .object(
    {
      name: nonEmpty("name must be a non-empty string"),
      datatype: z
        .enum(DATATYPES, {
          error: (issue) =>
            `datatype must be one of the KServe datatypes (FP32, INT64, BYTES, ...), got ${JSON.stringify(issue.input)}`,
        })
        .describe('Wire datatype name, e.g. "FP32", "BYTES"'),
      dims: z
        .array(
          z
            .int({ error: `${UP}dims must be an array of integers >= -1` })
            .min(-1, { error: `${UP}dims must be an array of integers >= -1` }),
          {
            error: "dims must be an array of integers >= -1",
          },
        )
        .describe("Without the batch dimension when the operator's maxBatchSize > 0; -1 is any size"),
      optional: z.boolean({ error: "optional must be a boolean" }).optional(),
    },
    { error: "must be an object { name, datatype, dims }" },
  )
  .describe("A tensor of the operator's signature");

const FINITE = (key: string) => z.number({ error: `${key} must be a finite number` });

/** Exactly one comparison. Values compare with the tensor's first element (BYTES: as a UTF-8 string; BOOL: as 0/1). */
export const ConditionSchema = z
  .union(
    [
      z.strictObject({ equals: z.union([z.number(), z.string(), z.boolean()]) }),
      z.strictObject({ lessThan: FINITE("lessThan") }),
      z.strictObject({ greaterThan: FINITE("greaterThan") }),
    ],
    { error: (issue) => conditionProblem(issue.input) },
  )
  .describe("Exactly one comparison with the first element of the tensor (BYTES: as a UTF-8 string; BOOL: as 0/1)");

/** What is wrong with a condition (the union's own issues would list every alternative). */
function conditionProblem(value: unknown): string {
  if (!isObject(value)) return "must be an object with exactly one of equals, lessThan, greaterThan";
  const keys = Object.keys(value);
  if (keys.length !== 1 || !["equals", "lessThan", "greaterThan"].includes(keys[0]!)) {
    return `must have exactly one of equals, lessThan, greaterThan; got ${keys.length > 0 ? keys.join(", ") : "none"}`;
  }
  const key = keys[0]!;
  return key === "equals" ? "equals must be a number, string or boolean" : `${key} must be a finite number`;
}

const stepId = nonEmpty("id must be a non-empty string").describe("Unique among the operator's steps");
const stepList = (description: string) =>
  z
    .array(nonEmpty(`${UP}must be an array of step ids`), { error: "must be an array of step ids" })
    .describe(description);
const conditionInput = nonEmpty('input must be a tensor name or "$param.<name>"').describe(
  'Tensor name, or "$param.<name>" for a request parameter',
);

export const ModelStepSpecSchema = z.object({
  id: stepId,
  kind: z.literal("model"),
  model: nonEmpty("model must be a non-empty string"),
  version: z
    .string({ error: 'version must be a string (e.g. "1")' })
    .optional()
    .describe("Version to call; absent = the model's latest ready version"),
  inputs: tensorMap("Model input name -> tensor name (an operator input or another step's output)"),
  outputs: tensorMap("Model output name -> tensor name it is published under").refine(
    (outputs) => Object.keys(outputs).length > 0,
    {
      error: "outputs must map at least one model output",
    },
  ),
  maxInflight: z
    .int({ error: "maxInflight must be an integer >= 0" })
    .min(0, { error: "maxInflight must be an integer >= 0" })
    .optional()
    .describe(
      "Requests this step runs at once across all requests of the operator (0 = unlimited; default: the operator's)",
    ),
  // What the step does when its model fails: step-resilience-schema.ts.
  retry: RetrySpecSchema.optional(),
  circuitBreaker: CircuitBreakerSpecSchema.optional(),
  fallback: FallbackSpecSchema.optional(),
});

export const RouteCaseSchema = z.object(
  {
    when: ConditionSchema,
    next: stepList("Step ids this case activates"),
  },
  { error: "must be an object { when, next }" },
);

export const RouteStepSpecSchema = z
  .object({
    id: stepId,
    kind: z.literal("route"),
    input: conditionInput,
    cases: z.array(RouteCaseSchema, { error: "cases must be an array of { when, next }" }),
    default: stepList("Step ids activated when no case matches; without it, no match fails the request").optional(),
  })
  .refine((route) => route.cases.length > 0 || route.default !== undefined, {
    error: "a route needs at least one case or a default",
  });

export const ExitStepSpecSchema = z.object({
  id: stepId,
  kind: z.literal("exit"),
  input: conditionInput,
  when: ConditionSchema,
  outputs: tensorMap("Operator output name -> tensor name answered when the exit fires; covers every operator output"),
});

export const StepSpecSchema = z.discriminatedUnion(
  "kind",
  [ModelStepSpecSchema, RouteStepSpecSchema, ExitStepSpecSchema],
  {
    error: (issue) =>
      isObject(issue.input)
        ? `kind must be "model", "route" or "exit", got ${JSON.stringify(issue.input["kind"] ?? null)}`
        : "a step must be an object",
  },
);

export const OperatorSpecSchema = z
  .object({
    name: z
      .string({ error: "must be a non-empty string usable as a model name" })
      .regex(/^(?!\.\.?$)[^/\\\0]+$/, { error: "must be a non-empty string usable as a model name" })
      .describe("The operator's name, served like a model name"),
    description: z.string({ error: "must be a string" }).optional(),
    maxBatchSize: count(
      "As a model config's max_batch_size: > 0 means tensors carry a batch dimension not written in dims. Default 0",
    ),
    maxInflightPerStep: count("Default in-flight cap of every model step (0 = unlimited)"),
    inputs: z
      .array(TensorSpecSchema, { error: "must be a non-empty array of { name, datatype, dims }" })
      .min(1, { error: "must be a non-empty array of { name, datatype, dims }" }),
    outputs: z
      .array(TensorSpecSchema, { error: "must be a non-empty array of { name, datatype, dims }" })
      .min(1, { error: "must be a non-empty array of { name, datatype, dims }" }),
    steps: z
      .array(StepSpecSchema, { error: "must be a non-empty array" })
      .min(1, { error: "must be a non-empty array" }),
  })
  // Unique names and ids, checked also when other parts of the spec are wrong (every problem is listed at once).
  .superRefine(
    (spec, context) => {
      for (const key of ["inputs", "outputs", "steps"] as const) {
        const list: unknown = spec[key];
        if (!Array.isArray(list)) continue;
        const field = key === "steps" ? "id" : "name";
        const seen = new Set<string>();
        list.forEach((element: unknown, index) => {
          const name = isObject(element) ? element[field] : undefined;
          if (typeof name !== "string" || name === "") return;
          if (seen.has(name)) {
            const message =
              key === "steps"
                ? `step id '${name}' is used more than once`
                : `tensor name '${name}' is used more than once`;
            context.addIssue({ code: "custom", path: [key, index], message });
          }
          seen.add(name);
        });
      }
    },
    { when: () => true },
  )
  .describe("An Operon operator: one model or a DAG of model calls, routes and exits, served like a model");

export type TensorSpec = z.output<typeof TensorSpecSchema>;
export type Condition = z.output<typeof ConditionSchema>;
export type ModelStepSpec = z.output<typeof ModelStepSpecSchema>;
export type RouteCase = z.output<typeof RouteCaseSchema>;
export type RouteStepSpec = z.output<typeof RouteStepSpecSchema>;
export type ExitStepSpec = z.output<typeof ExitStepSpecSchema>;
export type StepSpec = z.output<typeof StepSpecSchema>;
export type OperatorSpec = z.output<typeof OperatorSpecSchema>;
export type StepKind = StepSpec["kind"];
