import type { Parsed } from "./tensor-values";

/**
 * A numeric input's values from a file the person picks in Try it (issue 27
 * item 6: a CNN's 27,648 numbers are not typed by hand):
 * - `.npy` (NumPy's format, what `np.save` writes): its dtype and shape;
 * - `.json`: a JSON array, nested arrays giving the shape;
 * - anything else: raw little-endian values of the input's declared datatype
 *   (what `tensor.tofile()` or a C program writes), the shape left as typed.
 * Values come back as JS numbers (booleans for BOOL); the form checks them
 * against the datatype and the shape as it checks typed values.
 */
export interface NumericFileValues {
  values: Array<number | boolean>;
  /** The shape the file declares (.npy, nested .json); undefined for raw bytes. */
  shape?: number[];
}

/** Element reader per KServe datatype: byte size and how one little-endian element reads. */
const RAW_READERS: Record<string, { size: number; read: (view: DataView, offset: number) => number | boolean }> = {
  BOOL: { size: 1, read: (view, offset) => view.getUint8(offset) !== 0 },
  UINT8: { size: 1, read: (view, offset) => view.getUint8(offset) },
  INT8: { size: 1, read: (view, offset) => view.getInt8(offset) },
  UINT16: { size: 2, read: (view, offset) => view.getUint16(offset, true) },
  INT16: { size: 2, read: (view, offset) => view.getInt16(offset, true) },
  UINT32: { size: 4, read: (view, offset) => view.getUint32(offset, true) },
  INT32: { size: 4, read: (view, offset) => view.getInt32(offset, true) },
  UINT64: { size: 8, read: (view, offset) => Number(view.getBigUint64(offset, true)) },
  INT64: { size: 8, read: (view, offset) => Number(view.getBigInt64(offset, true)) },
  FP16: { size: 2, read: (view, offset) => halfToNumber(view.getUint16(offset, true)) },
  BF16: { size: 2, read: (view, offset) => bfloat16ToNumber(view.getUint16(offset, true)) },
  FP32: { size: 4, read: (view, offset) => view.getFloat32(offset, true) },
  FP64: { size: 8, read: (view, offset) => view.getFloat64(offset, true) },
};

/** NumPy dtype strings (little-endian or byte-order-free) and the datatype they hold. */
const NPY_DTYPES: Record<string, string> = {
  "|b1": "BOOL",
  "|u1": "UINT8",
  "|i1": "INT8",
  "<u2": "UINT16",
  "<i2": "INT16",
  "<u4": "UINT32",
  "<i4": "INT32",
  "<u8": "UINT64",
  "<i8": "INT64",
  "<f2": "FP16",
  "<f4": "FP32",
  "<f8": "FP64",
};

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"

export function numericFileValues(bytes: Uint8Array, fileName: string, datatype: string): Parsed<NumericFileValues> {
  if (datatype === "BYTES") return { ok: false, message: "BYTES inputs take the file itself, not values read from it" };
  if (NPY_MAGIC.every((byte, index) => bytes[index] === byte)) return npyValues(bytes, fileName);
  if (fileName.toLowerCase().endsWith(".json")) return jsonValues(bytes, fileName);
  return rawValues(bytes, fileName, datatype);
}

function rawValues(bytes: Uint8Array, fileName: string, datatype: string): Parsed<NumericFileValues> {
  const reader = RAW_READERS[datatype];
  if (reader === undefined) return { ok: false, message: `${fileName}: raw values of ${datatype} cannot be read` };
  if (bytes.length % reader.size !== 0) {
    return {
      ok: false,
      message: `${fileName} is ${bytes.length} bytes, not a whole number of ${datatype} values (${reader.size} bytes each); give a .npy or .json file, or raw little-endian ${datatype}`,
    };
  }
  return { ok: true, value: { values: readAll(bytes, reader) } };
}

function readAll(
  bytes: Uint8Array,
  reader: { size: number; read: (view: DataView, offset: number) => number | boolean },
): Array<number | boolean> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values = new Array<number | boolean>(bytes.length / reader.size);
  for (let index = 0; index < values.length; index += 1) values[index] = reader.read(view, index * reader.size);
  return values;
}

function npyValues(bytes: Uint8Array, fileName: string): Parsed<NumericFileValues> {
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const wide = major !== undefined && major >= 2;
  if (bytes.length < (wide ? 12 : 10)) return { ok: false, message: `${fileName}: the .npy header is cut short` };
  const headerLength = wide ? view.getUint32(8, true) : view.getUint16(8, true);
  const dataStart = (wide ? 12 : 10) + headerLength;
  if (dataStart > bytes.length) return { ok: false, message: `${fileName}: the .npy header is cut short` };
  const header = new TextDecoder().decode(bytes.subarray(wide ? 12 : 10, dataStart));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) {
    return { ok: false, message: `${fileName}: not a .npy header NumPy writes (descr, fortran_order, shape)` };
  }
  if (fortran === "True") {
    return { ok: false, message: `${fileName} is in Fortran (column-major) order; save it with np.ascontiguousarray` };
  }
  const datatype = NPY_DTYPES[descr];
  if (datatype === undefined) {
    return {
      ok: false,
      message: `${fileName} holds dtype '${descr}'; Try it reads little-endian ${Object.keys(NPY_DTYPES).join(", ")}`,
    };
  }
  const shape = shapeText
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map(Number);
  const reader = RAW_READERS[datatype]!;
  const count = shape.reduce((total, dim) => total * dim, 1);
  const data = bytes.subarray(dataStart);
  if (data.length !== count * reader.size) {
    return {
      ok: false,
      message: `${fileName}: its shape [${shape.join(", ")}] holds ${count} values, the file ${Math.floor(data.length / reader.size)}`,
    };
  }
  return { ok: true, value: { values: readAll(data, reader), shape } };
}

function jsonValues(bytes: Uint8Array, fileName: string): Parsed<NumericFileValues> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    return { ok: false, message: `${fileName} is not valid JSON: ${(error as Error).message}` };
  }
  const shape: number[] = [];
  for (let level: unknown = value; Array.isArray(level); level = level[0]) shape.push(level.length);
  if (shape.length === 0) return { ok: false, message: `${fileName}: expected a JSON array of numbers` };
  const values = (value as unknown[]).flat(shape.length) as unknown[];
  if (values.length !== shape.reduce((total, dim) => total * dim, 1)) {
    return { ok: false, message: `${fileName}: the nested arrays are ragged (rows of different lengths)` };
  }
  if (values.some((item) => typeof item !== "number" && typeof item !== "boolean")) {
    return { ok: false, message: `${fileName}: every element must be a number or true/false` };
  }
  return { ok: true, value: { values: values as Array<number | boolean>, shape } };
}

/** IEEE 754 half precision to a JS number. */
function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** bfloat16 (the upper half of a float32) to a JS number. */
function bfloat16ToNumber(bits: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, bits << 16);
  return view.getFloat32(0);
}
