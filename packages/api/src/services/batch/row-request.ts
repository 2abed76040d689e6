import { readFile, realpath, stat } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { isWithin } from "./dataset-files.js";
import type { PlannedInput } from "./input-mapping.js";

/**
 * One dataset row as one KServe v2 inference request (the JSON header and,
 * for image inputs, binary tensors). A value that does not fit (a NULL, a
 * list of the wrong length, an image path outside the allowed folders)
 * throws RowError: that row fails with the reason, the job goes on.
 */
export class RowError extends Error {}

export interface ImageAccess {
  /** Relative image paths resolve against this folder (the dataset file's). */
  baseDir: string;
  /** Real paths an image file must lie under. */
  roots: readonly string[];
}

/** The largest image file a row may name. */
export const MAX_IMAGE_BYTES = 32 * 1024 * 1024;

export interface RowRequest {
  header: {
    inputs: Array<Record<string, unknown>>;
    outputs?: Array<{ name: string }>;
    parameters?: Record<string, unknown>;
  };
  binaries: Buffer[];
}

/** The column a mapping reads, as the snapshot names it (input-mapping columns keep their names). */
export async function rowRequest(
  planned: readonly PlannedInput[],
  row: Record<string, unknown>,
  images: ImageAccess,
  outputs: readonly string[],
): Promise<RowRequest> {
  const inputs: Array<Record<string, unknown>> = [];
  const binaries: Buffer[] = [];
  for (const plan of planned) {
    const { mapping } = plan;
    if (mapping.kind === "tensor") {
      const values = plan.listColumn
        ? listOf(row[mapping.columns[0] ?? ""], mapping.columns[0] ?? "")
        : mapping.columns.map((name) => numberOf(row[name], name));
      inputs.push({
        name: mapping.input,
        datatype: plan.datatype,
        shape: shapeFor(plan.shape, values.length, mapping.input),
        data: values,
      });
      continue;
    }
    const value = row[mapping.column];
    if (value === null || value === undefined) throw new RowError(`column '${mapping.column}' is NULL`);
    let bytes: Buffer;
    if (mapping.kind === "text") {
      bytes = Buffer.from(String(value), "utf8");
    } else if (mapping.kind === "image-bytes") {
      if (!(value instanceof Uint8Array)) throw new RowError(`column '${mapping.column}' does not hold bytes`);
      bytes = Buffer.from(value);
    } else {
      bytes = await readImage(String(value), images);
    }
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    const tensor = Buffer.concat([length, bytes]);
    inputs.push({
      name: mapping.input,
      datatype: "BYTES",
      shape: shapeFor(plan.shape, 1, mapping.input),
      parameters: { binary_data_size: tensor.length },
    });
    binaries.push(tensor);
  }
  return {
    header: { inputs, ...(outputs.length > 0 ? { outputs: outputs.map((name) => ({ name })) } : {}) },
    binaries,
  };
}

function numberOf(value: unknown, column: string): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value === null || value === undefined) throw new RowError(`column '${column}' is NULL`);
  throw new RowError(`column '${column}' holds ${typeof value}, not a number`);
}

function listOf(value: unknown, column: string): number[] {
  if (value === null || value === undefined) throw new RowError(`column '${column}' is NULL`);
  if (!Array.isArray(value)) throw new RowError(`column '${column}' does not hold a list`);
  return value.map((item, index) => numberOf(item, `${column}[${index}]`));
}

/** The shape with its one -1 (if any) set so that it holds `count` elements. */
function shapeFor(shape: readonly number[], count: number, input: string): number[] {
  const fixed = shape.filter((dim) => dim >= 0).reduce((product, dim) => product * dim, 1);
  if (!shape.some((dim) => dim < 0)) {
    if (fixed !== count) throw new RowError(`input '${input}' takes ${fixed} value(s), the row has ${count}`);
    return [...shape];
  }
  if (fixed === 0 || count % fixed !== 0)
    throw new RowError(`input '${input}' of shape [${shape.join(", ")}] cannot take ${count} value(s)`);
  return shape.map((dim) => (dim < 0 ? count / fixed : dim));
}

async function readImage(path: string, access: ImageAccess): Promise<Buffer> {
  const full = isAbsolute(path) ? path : resolve(access.baseDir, path);
  let real: string;
  try {
    real = await realpath(full);
  } catch {
    throw new RowError(`image '${path}' does not exist`);
  }
  // Symbolic links resolved first: a link inside the folder must not reach outside it.
  if (!access.roots.some((root) => isWithin(root, real)))
    throw new RowError(`image '${path}' is outside the folders this dataset may read`);
  const info = await stat(real);
  if (!info.isFile()) throw new RowError(`image '${path}' is not a file`);
  if (info.size > MAX_IMAGE_BYTES) throw new RowError(`image '${path}' is over ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`);
  return readFile(real);
}

/** Where relative image paths of a dataset resolve: the folder of an image-folder dataset, else the file's folder. */
export function imageBaseOf(dataset: { format: string; path: string }): string {
  return dataset.format === "IMAGE_FOLDER" ? dataset.path : dirname(dataset.path);
}
