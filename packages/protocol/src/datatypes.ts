/**
 * KServe v2 tensor datatypes and their model-config (`TYPE_*`) names.
 * Wire names are what requests carry ("FP32"); config names are what
 * config.pbtxt and the config JSON carry ("TYPE_FP32"). BYTES is TYPE_STRING.
 */
export const DATATYPES = [
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP16",
  "FP32",
  "FP64",
  "BYTES",
  "BF16",
] as const;

export type DataType = (typeof DATATYPES)[number];

const ELEMENT_BYTES: Record<Exclude<DataType, "BYTES">, number> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BF16: 2,
};

export function isDataType(value: string): value is DataType {
  return (DATATYPES as readonly string[]).includes(value);
}

/** Bytes per element, or undefined for BYTES (variable length). */
export function elementByteSize(datatype: DataType): number | undefined {
  return datatype === "BYTES" ? undefined : ELEMENT_BYTES[datatype];
}

/** "FP32" -> "TYPE_FP32"; "BYTES" -> "TYPE_STRING". */
export function toConfigDataType(datatype: DataType): string {
  return datatype === "BYTES" ? "TYPE_STRING" : `TYPE_${datatype}`;
}

/** "TYPE_FP32" -> "FP32"; "TYPE_STRING" -> "BYTES"; undefined for TYPE_INVALID or unknown names. */
export function fromConfigDataType(configType: string): DataType | undefined {
  if (configType === "TYPE_STRING") return "BYTES";
  const bare = configType.startsWith("TYPE_") ? configType.slice(5) : undefined;
  return bare !== undefined && isDataType(bare) && bare !== "BYTES" ? bare : undefined;
}

/** Number of elements of a shape; a scalar ([]) has one. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}
