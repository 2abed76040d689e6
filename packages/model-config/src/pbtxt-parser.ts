/**
 * Protobuf text format (config.pbtxt) -> ModelConfig in Triton's JSON shape.
 *
 * Driven entirely by the reflection of model_config.proto (config-schema.ts):
 * field names, which fields are repeated / maps / oneof members, enum value
 * names and integer widths all come from the .proto. Accepts what protobuf's
 * C++ TextFormat parser (Triton's) accepts for this schema, minus extensions
 * and Any expansion, and octal integer literals (rejected rather than read
 * with a meaning the author may not expect).
 *
 * The result holds exactly the fields the text sets (so callers can tell
 * "max_batch_size: 0" from an absent max_batch_size); defaults are filled by
 * normalizeConfig(). Every error is OperonError INVALID_ARG
 * "<source>:<line>:<col>: <message>" pointing at the offending token.
 */
import type protobuf from "protobufjs";
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
import type { Token } from "./pbtxt-tokenizer.js";
import { PbtxtLexer, describeToken, pbtxtError } from "./pbtxt-tokenizer.js";

/** A field as the parser sees it; map entries' key/value get synthetic specs. */
interface FieldSpec {
  name: string;
  /** Full name of the message (or map entry) that declares the field. */
  owner: string;
  value: FieldKind;
  repeated: boolean;
  /** Present for map fields. */
  map?: { keyType: string; entryName: string };
  oneof?: string;
}

type Lookup = (name: string) => FieldSpec | undefined;
type Closer = "}" | ">";

const CLOSER_OF: Record<string, Closer> = { "{": "}", "<": ">" };
const TRUE_WORDS = new Set(["true", "True", "t"]);
const FALSE_WORDS = new Set(["false", "False", "f"]);

export function parsePbtxt(text: string, source: string): ModelConfigJson {
  const parser = new PbtxtParser(new PbtxtLexer(text, source), source);
  return parser.parseTop(modelConfigType()) as ModelConfigJson;
}

function specOf(field: protobuf.Field, owner: protobuf.Type): FieldSpec {
  const keyType = mapKeyType(field);
  const spec: FieldSpec = {
    name: field.name,
    owner: typeName(owner),
    value: fieldKind(field),
    repeated: field.repeated,
  };
  if (keyType !== undefined) {
    const entry = field.name.replace(/(?:^|_)([a-z])/g, (_, c: string) => c.toUpperCase());
    spec.map = { keyType, entryName: `${typeName(owner)}.${entry}Entry` };
  }
  if (field.partOf) spec.oneof = field.partOf.name;
  return spec;
}

function messageLookup(type: protobuf.Type): Lookup {
  return (written) => {
    const name = canonicalFieldName(type, written);
    const field = Object.prototype.hasOwnProperty.call(type.fields, name) ? type.fields[name] : undefined;
    return field === undefined ? undefined : specOf(field, type);
  };
}

function mapEntryLookup(spec: FieldSpec): Lookup {
  const owner = spec.map!.entryName;
  const key: FieldSpec = { name: "key", owner, value: { kind: "scalar", type: spec.map!.keyType }, repeated: false };
  const value: FieldSpec = { name: "value", owner, value: spec.value, repeated: false };
  return (name) => (name === "key" ? key : name === "value" ? value : undefined);
}

/** Own-property assignment that is safe for keys like "__proto__" (map keys are user text). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** proto3 default for a map value that the entry left out. */
function defaultValue(kind: FieldKind): unknown {
  if (kind.kind === "message") return {};
  if (kind.kind === "enum") return kind.type.valuesById[0] ?? Object.keys(kind.type.values)[0];
  if (kind.type === "string" || kind.type === "bytes") return "";
  if (kind.type === "bool") return false;
  return 0;
}

class PbtxtParser {
  constructor(
    private readonly lexer: PbtxtLexer,
    private readonly source: string,
  ) {}

  parseTop(type: protobuf.Type): Record<string, unknown> {
    return this.parseFields(messageLookup(type), typeName(type), undefined);
  }

  private fail(at: Token, message: string): never {
    throw pbtxtError(this.source, at, message);
  }

  private isPunct(token: Token, text: string): boolean {
    return token.kind === "punct" && token.text === text;
  }

  /** Fields up to the closer matching `open` (or end of input at top level). */
  private parseFields(lookup: Lookup, owner: string, open: Token | undefined): Record<string, unknown> {
    const closer = open === undefined ? undefined : CLOSER_OF[open.text];
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    const oneofMembers = new Map<string, string>();
    for (;;) {
      const token = this.lexer.peek();
      if (closer !== undefined && this.isPunct(token, closer)) {
        this.lexer.next();
        return out;
      }
      if (token.kind === "eof") {
        if (open === undefined) return out;
        this.fail(
          token,
          `unexpected end of input: missing '${closer}' to close '${open.text}' opened at ${open.line}:${open.col}`,
        );
      }
      if (token.kind !== "ident") {
        const expected = closer === undefined ? "a field name" : `a field name or '${closer}'`;
        this.fail(token, `expected ${expected}, got ${describeToken(token)}`);
      }
      this.lexer.next();
      const spec = lookup(token.text);
      if (spec === undefined) this.fail(token, `unknown field '${token.text}' in ${owner}`);
      if (!spec.repeated && spec.map === undefined) {
        if (seen.has(spec.name)) this.fail(token, `duplicate field '${spec.name}' in ${owner}`);
        seen.add(spec.name);
      }
      if (spec.oneof !== undefined) {
        const other = oneofMembers.get(spec.oneof);
        if (other !== undefined && other !== spec.name) {
          this.fail(
            token,
            `field '${spec.name}' conflicts with '${other}': both are in oneof '${spec.oneof}' of ${owner}`,
          );
        }
        oneofMembers.set(spec.oneof, spec.name);
      }
      this.parseField(spec, out);
      const separator = this.lexer.peek();
      if (this.isPunct(separator, ",") || this.isPunct(separator, ";")) this.lexer.next();
    }
  }

  /** After the field name: optional/required ':' then one value or a '[...]' list. */
  private parseField(spec: FieldSpec, out: Record<string, unknown>): void {
    const messageLike = spec.map !== undefined || spec.value.kind === "message";
    let token = this.lexer.peek();
    if (this.isPunct(token, ":")) {
      this.lexer.next();
      token = this.lexer.peek();
    } else if (!messageLike) {
      if (this.isPunct(token, "{") || this.isPunct(token, "<")) this.wrongKind(spec, token);
      this.fail(token, `expected ':' after field '${spec.name}', got ${describeToken(token)}`);
    }
    if (!this.isPunct(token, "[")) {
      this.store(spec, out, this.parseValue(spec));
      return;
    }
    if (!spec.repeated && spec.map === undefined) {
      this.fail(token, `field '${spec.name}' of ${spec.owner} is not repeated; a list '[...]' is not allowed`);
    }
    this.lexer.next();
    if (this.isPunct(this.lexer.peek(), "]")) {
      this.lexer.next();
      this.store(spec, out, undefined);
      return;
    }
    for (;;) {
      this.store(spec, out, this.parseValue(spec));
      const after = this.lexer.next();
      if (this.isPunct(after, "]")) return;
      if (!this.isPunct(after, ","))
        this.fail(after, `expected ',' or ']' in the list of '${spec.name}', got ${describeToken(after)}`);
    }
  }

  /** Adds one value; `undefined` (an empty list) only materialises the container. */
  private store(spec: FieldSpec, out: Record<string, unknown>, value: unknown): void {
    if (spec.map !== undefined) {
      const map = (out[spec.name] ??= {}) as Record<string, unknown>;
      if (value !== undefined) {
        const [key, entryValue] = value as [string, unknown];
        setOwn(map, key, entryValue); // a repeated key wins, as in protobuf
      }
    } else if (spec.repeated) {
      const list = (out[spec.name] ??= []) as unknown[];
      if (value !== undefined) list.push(value);
    } else {
      out[spec.name] = value;
    }
  }

  private wrongKind(spec: FieldSpec, token: Token): never {
    if (spec.map !== undefined) {
      this.fail(
        token,
        `field '${spec.name}' of ${spec.owner} is a map; expected an entry '{ key: ... value: ... }', got ${describeToken(token)}`,
      );
    }
    if (spec.value.kind === "message") {
      this.fail(
        token,
        `field '${spec.name}' of ${spec.owner} expects a message (${kindLabel(spec.value)}), got ${describeToken(token)}`,
      );
    }
    this.fail(
      token,
      `field '${spec.name}' of ${spec.owner} expects ${kindLabel(spec.value)}, got ${describeToken(token)}`,
    );
  }

  /** One value of the field: a block for messages / map entries, else a scalar or enum. */
  private parseValue(spec: FieldSpec): unknown {
    const token = this.lexer.peek();
    const kind = spec.value;
    if (spec.map !== undefined || kind.kind === "message") {
      if (!this.isPunct(token, "{") && !this.isPunct(token, "<")) this.wrongKind(spec, token);
      this.lexer.next();
      if (spec.map !== undefined) return this.parseMapEntry(spec, token);
      if (kind.kind === "message") return this.parseFields(messageLookup(kind.type), typeName(kind.type), token);
    }
    if (kind.kind === "enum") return this.parseEnum(spec, kind.type);
    return this.parseScalar(spec, kind.type as string);
  }

  private parseMapEntry(spec: FieldSpec, open: Token): [string, unknown] {
    const entry = this.parseFields(mapEntryLookup(spec), spec.map!.entryName, open);
    const key = entry.key ?? defaultValue({ kind: "scalar", type: spec.map!.keyType });
    const value = Object.prototype.hasOwnProperty.call(entry, "value") ? entry.value : defaultValue(spec.value);
    return [String(key), value];
  }

  private parseEnum(spec: FieldSpec, enumType: protobuf.Enum): string {
    const token = this.lexer.peek();
    if (token.kind === "ident") {
      this.lexer.next();
      const name = enumValueName(enumType, token.text);
      if (name === undefined)
        this.fail(token, `unknown value '${token.text}' for enum ${typeName(enumType)} (field '${spec.name}')`);
      return name;
    }
    if (token.kind === "number" || this.isPunct(token, "-")) {
      const number = this.parseInteger(spec, "int32");
      const name = enumValueName(enumType, number);
      if (name === undefined)
        this.fail(token, `unknown value ${number} for enum ${typeName(enumType)} (field '${spec.name}')`);
      return name;
    }
    this.wrongKind(spec, token);
  }

  private parseScalar(spec: FieldSpec, scalar: string): unknown {
    if (scalar === "string" || scalar === "bytes") return this.parseString(spec);
    if (scalar === "bool") return this.parseBool(spec);
    if (isIntegerType(scalar)) return this.parseInteger(spec, scalar);
    if (isFloatType(scalar)) return this.parseFloat(spec);
    this.fail(this.lexer.peek(), `unsupported field type '${scalar}' for '${spec.name}'`);
  }

  /** Adjacent string literals concatenate, as in C. */
  private parseString(spec: FieldSpec): string {
    const first = this.lexer.peek();
    if (first.kind !== "string") this.wrongKind(spec, first);
    let value = "";
    while (this.lexer.peek().kind === "string") value += this.lexer.next().value ?? "";
    return value;
  }

  private parseBool(spec: FieldSpec): boolean {
    const token = this.lexer.peek();
    const word = token.kind === "ident" || token.kind === "number" ? token.text : undefined;
    if (word !== undefined && (TRUE_WORDS.has(word) || word === "1")) {
      this.lexer.next();
      return true;
    }
    if (word !== undefined && (FALSE_WORDS.has(word) || word === "0")) {
      this.lexer.next();
      return false;
    }
    this.wrongKind(spec, token);
  }

  /** Optional '-' then a decimal or hex integer, range-checked for `scalar`. */
  private parseInteger(spec: FieldSpec, scalar: string): number {
    const start = this.lexer.peek();
    const negative = this.isPunct(start, "-");
    if (negative) this.lexer.next();
    const token = this.lexer.peek();
    if (token.kind !== "number") {
      if (negative) this.fail(token, `expected a number after '-', got ${describeToken(token)}`);
      this.wrongKind(spec, token);
    }
    const text = token.text;
    let magnitude: bigint;
    if (/^0[xX]/.test(text)) {
      magnitude = BigInt(text);
    } else if (/^\d+$/.test(text)) {
      if (text.length > 1 && text.startsWith("0")) this.fail(token, `octal integer '${text}' is not supported`);
      magnitude = BigInt(text);
    } else {
      this.fail(
        token,
        `field '${spec.name}' of ${spec.owner} expects an integer (${scalar}), got number ${negative ? "-" : ""}${text}`,
      );
    }
    this.lexer.next();
    const checked = checkInteger(negative ? -magnitude : magnitude, scalar);
    if (typeof checked === "string") this.fail(start, `${checked} (field '${spec.name}')`);
    return checked;
  }

  private parseFloat(spec: FieldSpec): number {
    const start = this.lexer.peek();
    const negative = this.isPunct(start, "-");
    if (negative) this.lexer.next();
    const token = this.lexer.peek();
    let value: number;
    if (token.kind === "number") {
      value = /^0[xX]/.test(token.text) ? Number(BigInt(token.text)) : Number(token.text.replace(/[fF]$/, ""));
    } else if (token.kind === "ident" && /^(inf|infinity)f?$/i.test(token.text)) {
      value = Infinity;
    } else if (token.kind === "ident" && /^nanf?$/i.test(token.text)) {
      value = NaN;
    } else {
      if (negative) this.fail(token, `expected a number after '-', got ${describeToken(token)}`);
      this.wrongKind(spec, token);
    }
    this.lexer.next();
    return negative ? -value : value;
  }
}
