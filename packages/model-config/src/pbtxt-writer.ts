/**
 * ModelConfig in Triton's JSON shape -> protobuf text format (config.pbtxt),
 * the inverse of parsePbtxt: for any config the parser or configFromJson
 * produced, parsePbtxt(writePbtxt(config)) deep-equals it.
 *
 * Driven by the same model_config.proto reflection as the parser
 * (config-schema.ts): fields are written in field-number order, as
 * protobuf's own printer does, repeated fields as lists in the style of
 * Triton's documentation (`input [ { ... } ]`, `dims: [ 16 ]`), maps as one
 * `{ key: ... value: ... }` entry each. Empty lists and maps are written
 * (`dims: [ ]`) so that "set but empty" survives the round trip.
 *
 * Strings are UTF-8 with C escapes for quotes, backslashes and control
 * characters. Errors are OperonError INVALID_ARG "<source>: <field.path>:
 * <problem>" for values the schema does not allow (feed the writer validated
 * configs: configFromJson or parsePbtxt output).
 */
import type protobuf from "protobufjs";
import { OperonError } from "@operon/protocol/errors";
import type { FieldKind } from "./config-schema.js";
import {
  checkInteger,
  enumValueName,
  fieldKind,
  isFloatType,
  isIntegerType,
  mapKeyType,
  modelConfigType,
  typeName,
} from "./config-schema.js";
import type { ModelConfigJson } from "./model-config-types.js";

const INDENT = "  ";

export function writePbtxt(config: ModelConfigJson, source = "config"): string {
  const lines: string[] = [];
  new PbtxtWriter(source, lines).fields(config, modelConfigType(), "", "");
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function child(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** A protobuf text string literal: UTF-8 text, C escapes for what would break the line or the quotes. */
function quote(value: string, fail: (problem: string) => never): string {
  let out = '"';
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdfff) {
      const pair =
        code <= 0xdbff &&
        i + 1 < value.length &&
        value.charCodeAt(i + 1) >= 0xdc00 &&
        value.charCodeAt(i + 1) <= 0xdfff;
      if (!pair) fail(`string holds an unpaired UTF-16 surrogate at index ${i}; it cannot be written as UTF-8`);
      out += value[i]! + value[i + 1]!;
      i += 1;
    } else if (code === 0x22) out += '\\"';
    else if (code === 0x5c) out += "\\\\";
    else if (code === 0x0a) out += "\\n";
    else if (code === 0x0d) out += "\\r";
    else if (code === 0x09) out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, "0")}`;
    else out += value[i]!;
  }
  return `${out}"`;
}

class PbtxtWriter {
  constructor(
    private readonly source: string,
    private readonly lines: string[],
  ) {}

  private fail(path: string, problem: string): never {
    throw new OperonError("INVALID_ARG", `${this.source}: ${path || "<root>"}: ${problem}`);
  }

  /** The fields of one message, each on its own line(s) at `indent`. */
  fields(value: unknown, type: protobuf.Type, path: string, indent: string): void {
    if (!isPlainObject(value)) this.fail(path, `expected an object (${typeName(type)})`);
    const known = new Set(type.fieldsArray.map((field) => field.name));
    for (const key of Object.keys(value)) {
      if (!known.has(key)) this.fail(child(path, key), `unknown field '${key}' in ${typeName(type)}`);
    }
    const ordered = [...type.fieldsArray].sort((a, b) => a.id - b.id);
    for (const field of ordered) {
      if (!Object.prototype.hasOwnProperty.call(value, field.name)) continue;
      const fieldValue = value[field.name];
      if (fieldValue === undefined || fieldValue === null) continue;
      this.field(field, fieldValue, child(path, field.name), indent);
    }
  }

  private field(field: protobuf.Field, value: unknown, path: string, indent: string): void {
    const kind = fieldKind(field);
    const keyType = mapKeyType(field);
    if (keyType !== undefined) {
      if (!isPlainObject(value)) this.fail(path, "expected an object (a map)");
      const keys = Object.keys(value);
      if (keys.length === 0) this.lines.push(`${indent}${field.name}: [ ]`);
      for (const key of keys) {
        const entryPath = `${path}[${JSON.stringify(key)}]`;
        this.lines.push(`${indent}${field.name} {`);
        this.lines.push(`${indent}${INDENT}key: ${this.mapKey(key, keyType, entryPath)}`);
        this.single("value", kind, value[key], entryPath, `${indent}${INDENT}`);
        this.lines.push(`${indent}}`);
      }
      return;
    }
    if (!field.repeated) {
      this.single(field.name, kind, value, path, indent);
      return;
    }
    if (!Array.isArray(value)) this.fail(path, "expected an array (a repeated field)");
    if (kind.kind !== "message") {
      const items = value.map((item, index) => this.scalar(kind, item, `${path}[${index}]`));
      this.lines.push(`${indent}${field.name}: [ ${items.join(", ")}${items.length > 0 ? " " : ""}]`);
      return;
    }
    if (value.length === 0) {
      this.lines.push(`${indent}${field.name}: [ ]`);
      return;
    }
    this.lines.push(`${indent}${field.name} [`);
    value.forEach((item, index) => {
      this.lines.push(`${indent}${INDENT}{`);
      this.fields(item, kind.type, `${path}[${index}]`, `${indent}${INDENT}${INDENT}`);
      this.lines.push(`${indent}${INDENT}}${index + 1 < value.length ? "," : ""}`);
    });
    this.lines.push(`${indent}]`);
  }

  /** `name: scalar` or `name { ... }`. */
  private single(name: string, kind: FieldKind, value: unknown, path: string, indent: string): void {
    if (kind.kind !== "message") {
      this.lines.push(`${indent}${name}: ${this.scalar(kind, value, path)}`);
      return;
    }
    if (isPlainObject(value) && Object.keys(value).length === 0) {
      this.lines.push(`${indent}${name} { }`);
      return;
    }
    this.lines.push(`${indent}${name} {`);
    this.fields(value, kind.type, path, `${indent}${INDENT}`);
    this.lines.push(`${indent}}`);
  }

  private mapKey(key: string, keyType: string, path: string): string {
    if (keyType === "string") return quote(key, (problem) => this.fail(path, problem));
    if (keyType === "bool") {
      if (key !== "true" && key !== "false") this.fail(path, `map key must be "true" or "false"`);
      return key;
    }
    if (!/^-?\d+$/.test(key)) this.fail(path, `map key must be an integer (${keyType}), got ${JSON.stringify(key)}`);
    const checked = checkInteger(BigInt(key), keyType);
    if (typeof checked === "string") this.fail(path, checked);
    return key;
  }

  /**
   * 64-bit integers arrive as JS numbers, so the largest ones are rounded
   * (uint64 max reads as 2^64): a value that is out of range only because of
   * that rounding is written as the bound it stands for.
   */
  private integer(value: number, scalar: string, path: string): string {
    const exact = BigInt(value);
    const checked = checkInteger(exact, scalar);
    if (typeof checked !== "string") return exact.toString();
    for (const bound of [2n ** 64n - 1n, 2n ** 63n - 1n, -(2n ** 63n)]) {
      if (Number(bound) === value && typeof checkInteger(bound, scalar) !== "string") return bound.toString();
    }
    this.fail(path, checked);
  }

  private scalar(kind: FieldKind, value: unknown, path: string): string {
    if (kind.kind === "message") this.fail(path, "a message is not allowed here");
    if (kind.kind === "enum") {
      const name = typeof value === "string" || typeof value === "number" ? enumValueName(kind.type, value) : undefined;
      if (name === undefined) this.fail(path, `unknown value ${JSON.stringify(value)} for enum ${typeName(kind.type)}`);
      return name;
    }
    const scalar = kind.type;
    if (scalar === "string" || scalar === "bytes") {
      if (typeof value !== "string") this.fail(path, `expected a string, got ${typeof value}`);
      return quote(value, (problem) => this.fail(path, problem));
    }
    if (scalar === "bool") {
      if (typeof value !== "boolean") this.fail(path, `expected a boolean, got ${typeof value}`);
      return String(value);
    }
    if (isIntegerType(scalar)) {
      if (typeof value !== "number" || !Number.isInteger(value))
        this.fail(path, `expected an integer (${scalar}), got ${JSON.stringify(value)}`);
      return this.integer(value, scalar, path);
    }
    if (isFloatType(scalar)) {
      if (typeof value !== "number") this.fail(path, `expected a number, got ${typeof value}`);
      if (Number.isNaN(value)) return "nan";
      if (value === Infinity) return "inf";
      if (value === -Infinity) return "-inf";
      return Object.is(value, -0) ? "-0" : String(value);
    }
    this.fail(path, `unsupported field type '${scalar}'`);
  }
}
