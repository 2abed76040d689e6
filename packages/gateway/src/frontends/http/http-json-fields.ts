import { OperonError } from "@operon/protocol/errors";
import type { ParameterValue, Parameters } from "@operon/protocol/tensor";

/**
 * Field checks for request JSON. Each failure is INVALID_ARG naming the
 * field by its JSON path ('inputs[0].shape'), so a client can find it.
 */

export type JsonObject = Record<string, unknown>;

export function invalidField(path: string, problem: string): OperonError {
  return new OperonError("INVALID_ARG", `'${path}' ${problem}`);
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function kindOf(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

export function expectObject(value: unknown, path: string): JsonObject {
  if (!isJsonObject(value)) throw invalidField(path, `must be a JSON object, got ${kindOf(value)}`);
  return value;
}

export function optionalObject(value: unknown, path: string): JsonObject | undefined {
  return value === undefined ? undefined : expectObject(value, path);
}

export function expectString(value: unknown, path: string): string {
  if (typeof value !== "string") throw invalidField(path, `must be a string, got ${kindOf(value)}`);
  return value;
}

export function optionalString(value: unknown, path: string): string | undefined {
  return value === undefined ? undefined : expectString(value, path);
}

export function optionalBoolean(value: unknown, path: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw invalidField(path, `must be a boolean, got ${kindOf(value)}`);
  return value;
}

/** KServe `parameters`: an object of string, number or boolean values. */
export function optionalParameters(value: unknown, path: string): Parameters | undefined {
  const object = optionalObject(value, path);
  if (object === undefined) return undefined;
  const parameters: Parameters = {};
  for (const [key, entry] of Object.entries(object)) {
    if (typeof entry !== "string" && typeof entry !== "number" && typeof entry !== "boolean") {
      throw invalidField(`${path}.${key}`, `must be a string, number or boolean, got ${kindOf(entry)}`);
    }
    parameters[key] = entry satisfies ParameterValue;
  }
  return parameters;
}
