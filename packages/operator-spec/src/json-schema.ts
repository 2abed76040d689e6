import { z } from "zod";
import { OperatorSpecSchema } from "./operator-spec-schema.js";

/**
 * The operator spec as JSON Schema (draft 2020-12), for editors and docs:
 * the input form of OperatorSpecSchema (what people write). Checks that JSON
 * Schema cannot say (unique names and ids, a route with a case or a default)
 * are parseOperatorSpec's. operator-spec.schema.json is this, written by
 * `npm run schema -w @operon/operator-spec`; a test keeps the two equal.
 */
export function operatorSpecJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(OperatorSpecSchema, { io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
}
