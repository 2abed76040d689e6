/**
 * The reflected ModelConfig schema. model_config.proto (in @operon/protocol)
 * is the single source of truth: the pbtxt parser and the JSON validator
 * walk these protobufjs reflection objects instead of hand-written field
 * lists, so a field added to the .proto is accepted everywhere at once.
 *
 * Also holds the small scalar-type rules (integer bounds, enum lookup) that
 * both readers share, so text and JSON configs are judged identically.
 */
import { join } from "node:path";
import { PROTO_DIR } from "@operon/protocol/proto-dir";
// protobufjs is CommonJS: only its default export exists at runtime under ESM.
import protobuf from "protobufjs";

const PROTO_PATH = join(PROTO_DIR, "model_config.proto");

let root: protobuf.Root | undefined;

/** The loaded root (keepCase, so field names stay snake_case); loaded once. */
export function modelConfigRoot(): protobuf.Root {
  if (root === undefined) {
    const loaded = new protobuf.Root().loadSync(PROTO_PATH, { keepCase: true });
    loaded.resolveAll();
    root = loaded;
  }
  return root;
}

/** The reflected `inference.ModelConfig` message type. */
export function modelConfigType(): protobuf.Type {
  return modelConfigRoot().lookupType("inference.ModelConfig");
}

/** "inference.ModelConfig" (protobufjs keeps a leading dot on full names). */
export function typeName(type: protobuf.ReflectionObject): string {
  return type.fullName.replace(/^\./, "");
}

/** What a field holds once its type is resolved. */
export type FieldKind =
  | { kind: "message"; type: protobuf.Type }
  | { kind: "enum"; type: protobuf.Enum }
  | { kind: "scalar"; type: string };

/** Resolves a field's value type (for a map field: the map's value type). */
export function fieldKind(field: protobuf.FieldBase): FieldKind {
  const resolved = field.resolve().resolvedType;
  if (resolved instanceof protobuf.Type) return { kind: "message", type: resolved };
  if (resolved instanceof protobuf.Enum) return { kind: "enum", type: resolved };
  return { kind: "scalar", type: field.type };
}

/** Label used in messages: "int32", "inference.DataType", "inference.ModelInput". */
export function kindLabel(kind: FieldKind): string {
  return kind.kind === "scalar" ? kind.type : typeName(kind.type);
}

const INTEGER_BOUNDS: Record<string, readonly [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

export function isIntegerType(scalar: string): boolean {
  return scalar in INTEGER_BOUNDS;
}

export function isFloatType(scalar: string): boolean {
  return scalar === "float" || scalar === "double";
}

/**
 * Range-checks an integer for a proto integer type and returns it as a JS
 * number (64-bit values beyond 2^53 lose precision, as in Triton's JSON).
 * Returns an error message instead when it does not fit.
 */
export function checkInteger(value: bigint, scalar: string): number | string {
  const bounds = INTEGER_BOUNDS[scalar];
  if (bounds === undefined) return `'${scalar}' is not an integer type`;
  if (value < bounds[0] || value > bounds[1]) {
    return `integer ${value} out of range for ${scalar} [${bounds[0]}, ${bounds[1]}]`;
  }
  return Number(value);
}

/** Enum value name for a name or number, or undefined when the enum has no such value. */
export function enumValueName(enumType: protobuf.Enum, value: string | number): string | undefined {
  if (typeof value === "number") return enumType.valuesById[value];
  return Object.prototype.hasOwnProperty.call(enumType.values, value) ? value : undefined;
}

/** The map field's key type ("string", "uint64", ...), or undefined for non-map fields. */
export function mapKeyType(field: protobuf.FieldBase): string | undefined {
  return field instanceof protobuf.MapField ? field.keyType : undefined;
}

/**
 * Other names accepted for a field, by message type: Triton's docs and
 * configs in the wild use both names for ModelEnsembling's field 2, so a
 * config written either way loads (the canonical name is what is served).
 */
const FIELD_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "inference.ModelEnsembling": { max_inflight_requests: "max_inflight_responses" },
};

/** The canonical field name for `name` in `type` (itself when it is no alias). */
export function canonicalFieldName(type: protobuf.Type, name: string): string {
  return FIELD_ALIASES[typeName(type)]?.[name] ?? name;
}
