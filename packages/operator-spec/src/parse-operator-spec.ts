import type { z } from "zod";
import { OperonError } from "@operon/protocol/errors";
import { OperatorSpecSchema, UP, type OperatorSpec, type StepSpec, type TensorSpec } from "./operator-spec-schema.js";

/**
 * Checks the JSON shape of a spec against OperatorSpecSchema (types,
 * required fields, unique names and ids, conditions with exactly one
 * comparison) and returns it typed, without unknown keys, `optional: false`
 * or an empty `version`. Throws INVALID_ARG listing every problem found.
 */
export function parseOperatorSpec(value: unknown): OperatorSpec {
  if (!isRecord(value)) throw new OperonError("INVALID_ARG", "an operator spec must be a JSON object");
  const parsed = OperatorSpecSchema.safeParse(value);
  if (!parsed.success) {
    const name = value["name"];
    const problems = [...new Set(parsed.error.issues.map((issue) => describeIssue(value, issue)))];
    throw new OperonError(
      "INVALID_ARG",
      `invalid operator spec${typeof name === "string" && name ? ` '${name}'` : ""}: ${problems.join("; ")}`,
    );
  }
  return normalized(parsed.data);
}

/** The spec in its stored form: what is left out means the default. */
function normalized(spec: OperatorSpec): OperatorSpec {
  const tensor = ({ optional, ...rest }: TensorSpec): TensorSpec => (optional === true ? { ...rest, optional } : rest);
  const step = (value: StepSpec): StepSpec => {
    if (value.kind !== "model" || (value.version !== undefined && value.version !== "")) return value;
    const { version: _version, ...rest } = value;
    return rest;
  };
  return { ...spec, inputs: spec.inputs.map(tensor), outputs: spec.outputs.map(tensor), steps: spec.steps.map(step) };
}

/**
 * "where: message". Steps are named by id ("step 'a'") and tensors by name
 * once known; a message that starts with the name of the field it is about
 * is reported at the object holding the field (see operator-spec-schema.ts).
 */
function describeIssue(root: Record<string, unknown>, issue: z.core.$ZodIssue): string {
  let message = issue.message;
  const path = [...issue.path];
  if (message.startsWith(UP)) {
    message = message.slice(UP.length);
    path.pop();
  }
  const leaf = path.at(-1);
  if (typeof leaf === "string" && message.startsWith(`${leaf} `)) path.pop();

  let where = "";
  let rest = path;
  const [list, index] = path;
  if ((list === "steps" || list === "inputs" || list === "outputs") && typeof index === "number") {
    const element = (root[list] as unknown[])[index];
    rest = path.slice(2);
    const id = isRecord(element) ? element[list === "steps" ? "id" : "name"] : undefined;
    const named = typeof id === "string" && id !== "";
    if (list === "steps") where = named ? `step '${id}'` : `steps[${index}]`;
    else
      where =
        named && issue.path.length > 2 && issue.path[2] !== "name" ? `${list}[${index}]: '${id}'` : `${list}[${index}]`;
  }
  const tail = rest
    .map((segment, i) =>
      typeof segment === "number" ? `[${segment}]` : i === 0 ? String(segment) : `.${String(segment)}`,
    )
    .join("");
  const at = [where, tail].filter((part) => part !== "").join(": ");
  return at === "" ? message : `${at}: ${message}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
