/**
 * JSON ModelConfig (the `config` parameter of Triton's load API, or a
 * config.json) -> the normalized snake_case ModelConfigJson.
 *
 * Validated against the same model_config.proto reflection as the pbtxt
 * parser. Accepts both proto field names and proto3-JSON camelCase names,
 * 64-bit (and other) integers as numbers or decimal strings, enums as names
 * or numbers, floats as numbers or "NaN"/"Infinity"/"-Infinity"; `null`
 * means "not set" (proto3 JSON). Errors are OperonError INVALID_ARG
 * "<source>: <field.path>: <problem>", e.g. "cfg: input[0].dims[1]: ...".
 */
import type protobuf from "protobufjs";
import { OperonError } from "@operon/protocol/errors";
import type { FieldKind } from "./config-schema.js";
import {
  checkInteger,
  canonicalFieldName,
  enumValueName,
  fieldKind,
  isFloatType,
  isIntegerType,
  kindLabel,
  mapKeyType,
  modelConfigType,
  typeName,
} from "./config-schema.js";
import type { ModelConfigJson } from "./model-config-types.js";

export type { ModelConfigJson } from "./model-config-types.js";

const ROOT_PATH = "<root>";

export function configFromJson(input: string | unknown, source: string): ModelConfigJson {
  let value: unknown = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new OperonError("INVALID_ARG", `${source}: invalid JSON: ${reason}`, { cause: error });
    }
  }
  return new JsonReader(source).message(value, modelConfigType(), ROOT_PATH) as ModelConfigJson;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string")
    return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function child(path: string, key: string): string {
  return path === ROOT_PATH ? key : `${path}.${key}`;
}

function jsonName(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Field lookup by proto name and by proto3 JSON (camelCase) name, per type. */
const lookupCache = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();

function fieldsByJsonKey(type: protobuf.Type): Map<string, protobuf.Field> {
  let lookup = lookupCache.get(type);
  if (lookup === undefined) {
    lookup = new Map();
    for (const field of type.fieldsArray) {
      lookup.set(field.name, field);
      lookup.set(jsonName(field.name), field);
    }
    lookupCache.set(type, lookup);
  }
  return lookup;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class JsonReader {
  constructor(private readonly source: string) {}

  private fail(path: string, problem: string): never {
    throw new OperonError("INVALID_ARG", `${this.source}: ${path}: ${problem}`);
  }

  message(value: unknown, type: protobuf.Type, path: string): Record<string, unknown> {
    if (!isPlainObject(value)) this.fail(path, `expected an object (${typeName(type)}), got ${describe(value)}`);
    const lookup = fieldsByJsonKey(type);
    const out: Record<string, unknown> = {};
    const oneofMembers = new Map<string, string>();
    for (const [key, fieldValue] of Object.entries(value)) {
      const fieldPath = child(path, key);
      const field = lookup.get(canonicalFieldName(type, key));
      if (field === undefined) this.fail(fieldPath, `unknown field '${key}' in ${typeName(type)}`);
      if (fieldValue === null) continue;
      if (Object.prototype.hasOwnProperty.call(out, field.name)) {
        this.fail(fieldPath, `field '${field.name}' is given twice (as '${field.name}' and '${jsonName(field.name)}')`);
      }
      if (field.partOf) {
        const other = oneofMembers.get(field.partOf.name);
        if (other !== undefined)
          this.fail(fieldPath, `'${field.name}' conflicts with '${other}': both are in oneof '${field.partOf.name}'`);
        oneofMembers.set(field.partOf.name, field.name);
      }
      out[field.name] = this.field(field, fieldValue, fieldPath);
    }
    return out;
  }

  private field(field: protobuf.Field, value: unknown, path: string): unknown {
    const kind = fieldKind(field);
    const keyType = mapKeyType(field);
    if (keyType !== undefined) {
      if (!isPlainObject(value))
        this.fail(path, `expected an object (map<${keyType}, ${kindLabel(kind)}>), got ${describe(value)}`);
      const out: Record<string, unknown> = {};
      for (const [key, entry] of Object.entries(value)) {
        const entryPath = `${path}[${JSON.stringify(key)}]`;
        setOwn(out, this.mapKey(key, keyType, entryPath), this.value(kind, entry, entryPath));
      }
      return out;
    }
    if (field.repeated) {
      if (!Array.isArray(value)) this.fail(path, `expected an array of ${kindLabel(kind)}, got ${describe(value)}`);
      return value.map((item, index) => this.value(kind, item, `${path}[${index}]`));
    }
    return this.value(kind, value, path);
  }

  /** JSON map keys are always strings; integer keys are re-printed canonically. */
  private mapKey(key: string, keyType: string, path: string): string {
    if (keyType === "string") return key;
    if (keyType === "bool") {
      if (key !== "true" && key !== "false") this.fail(path, `map key must be "true" or "false"`);
      return key;
    }
    if (!/^-?\d+$/.test(key)) this.fail(path, `map key must be an integer (${keyType}), got ${JSON.stringify(key)}`);
    const checked = checkInteger(BigInt(key), keyType);
    if (typeof checked === "string") this.fail(path, checked);
    return String(checked);
  }

  private value(kind: FieldKind, value: unknown, path: string): unknown {
    if (kind.kind === "message") return this.message(value, kind.type, path);
    if (kind.kind === "enum") return this.enumValue(kind.type, value, path);
    const scalar = kind.type;
    if (scalar === "string" || scalar === "bytes") {
      if (typeof value !== "string") this.fail(path, `expected a string, got ${describe(value)}`);
      return value;
    }
    if (scalar === "bool") {
      if (typeof value !== "boolean") this.fail(path, `expected a boolean, got ${describe(value)}`);
      return value;
    }
    if (isIntegerType(scalar)) return this.integer(scalar, value, path);
    if (isFloatType(scalar)) return this.float(value, path);
    this.fail(path, `unsupported field type '${scalar}'`);
  }

  private enumValue(enumType: protobuf.Enum, value: unknown, path: string): string {
    if (typeof value !== "string" && !(typeof value === "number" && Number.isInteger(value))) {
      this.fail(path, `expected an enum value of ${typeName(enumType)} (name or number), got ${describe(value)}`);
    }
    const name = enumValueName(enumType, value);
    if (name === undefined) this.fail(path, `unknown value ${JSON.stringify(value)} for enum ${typeName(enumType)}`);
    return name;
  }

  private integer(scalar: string, value: unknown, path: string): number {
    let big: bigint | undefined;
    if (typeof value === "number" && Number.isInteger(value)) big = BigInt(value);
    else if (typeof value === "string" && /^-?\d+$/.test(value)) big = BigInt(value);
    if (big === undefined) this.fail(path, `expected an integer (${scalar}), got ${describe(value)}`);
    const checked = checkInteger(big, scalar);
    if (typeof checked === "string") this.fail(path, checked);
    return checked;
  }

  private float(value: unknown, path: string): number {
    if (typeof value === "number") return value;
    if (value === "NaN") return NaN;
    if (value === "Infinity") return Infinity;
    if (value === "-Infinity") return -Infinity;
    if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
    this.fail(path, `expected a number, got ${describe(value)}`);
  }
}
