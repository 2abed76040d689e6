import { z } from "zod";
import {
  ConditionSchema,
  ExitStepSpecSchema,
  ModelStepSpecSchema,
  OperatorSpecSchema,
  RouteCaseSchema,
  RouteStepSpecSchema,
  TensorSpecSchema,
} from "./operator-spec-schema.js";

/**
 * The operator spec as JSON Schema (draft 2020-12), for editors and docs:
 * the input form of OperatorSpecSchema (what people write), its parts named
 * under $defs. Checks that JSON Schema cannot say (unique names and ids, a
 * route with a case or a default) are parseOperatorSpec's.
 * operator-spec.schema.json is this, written by
 * `npm run schema -w @operon/operator-spec`; a test keeps the two equal.
 */
export function operatorSpecJsonSchema(): Record<string, unknown> {
  // A registry of our own: the global one is shared by every copy of this module a process loads.
  const names = z.registry<{ id: string }>();
  names.add(TensorSpecSchema, { id: "TensorSpec" });
  names.add(ConditionSchema, { id: "Condition" });
  names.add(ModelStepSpecSchema, { id: "ModelStep" });
  names.add(RouteCaseSchema, { id: "RouteCase" });
  names.add(RouteStepSpecSchema, { id: "RouteStep" });
  names.add(ExitStepSpecSchema, { id: "ExitStep" });
  return z.toJSONSchema(OperatorSpecSchema, { io: "input", target: "draft-2020-12", metadata: names }) as Record<
    string,
    unknown
  >;
}
