import { realpath, stat } from "node:fs/promises";
import { extname, isAbsolute, relative, sep } from "node:path";
import type { DatasetFormat } from "@operon/db";
import { AppError } from "../../app-error.js";
import { sqlString } from "./duckdb-sandbox.js";

/**
 * Which files a dataset may read, and how DuckDB reads each format. Uploaded
 * files live in the control plane's batch folder; a server path must lie,
 * after resolving symbolic links, under one of the allowed roots
 * (--batch-data-root; default: the data directory only), and only admins
 * may name one (routers/datasets-router.ts): a path on the server is the
 * server's data, not an engineer's. A server path may also be a folder of
 * images (image-folder.ts).
 */
export const FORMAT_OF_EXTENSION: Record<string, DatasetFormat> = {
  ".csv": "CSV",
  ".tsv": "CSV",
  ".jsonl": "JSONL",
  ".ndjson": "JSONL",
  ".json": "JSONL",
  ".parquet": "PARQUET",
};

export function formatOfFile(name: string, field = "file"): DatasetFormat {
  const format = FORMAT_OF_EXTENSION[extname(name).toLowerCase()];
  if (format === undefined) {
    throw new AppError(
      "VALIDATION_FAILED",
      `'${name}' is not a dataset file: use .csv, .tsv, .jsonl/.ndjson/.json (one object a line) or .parquet`,
      { fieldErrors: [{ path: field, message: "unknown format" }] },
    );
  }
  return format;
}

/** The SQL expression that reads the file (the dataset query sees it as the view `source`); not for image folders. */
export function readerOf(format: DatasetFormat, path: string): string {
  switch (format) {
    case "IMAGE_FOLDER":
    case "POSTGRES_TABLE":
      throw new Error(`a ${format} dataset is read into a table by the control plane, not by SQL`);
    case "CSV":
      return `read_csv(${sqlString(path)})`;
    case "JSONL":
      return `read_json(${sqlString(path)}, format = 'newline_delimited')`;
    case "PARQUET":
      return `read_parquet(${sqlString(path)})`;
  }
}

/** True when `path` is `root` or lies below it (both resolved). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * A server path a dataset may read: absolute, an existing regular file or
 * folder, whose real path (symbolic links resolved) lies under an allowed
 * root. Returns the real path, and whether it is a folder.
 */
export async function resolveServerPath(
  path: string,
  roots: readonly string[],
  field = "path",
): Promise<{ real: string; folder: boolean }> {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path: field, message }] });
  if (!isAbsolute(path)) throw refuse(`the server path '${path}' must be absolute`);
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    throw refuse(`the server path '${path}' does not exist or cannot be read`);
  }
  const realRoots = await Promise.all(roots.map((root) => realpath(root).catch(() => root)));
  if (!realRoots.some((root) => isWithin(root, real))) {
    throw refuse(
      `the server path '${path}' is outside the folders datasets may read (${realRoots.join(", ") || "none"}; see --batch-data-root)`,
    );
  }
  const info = await stat(real);
  if (!info.isFile() && !info.isDirectory())
    throw refuse(`the server path '${path}' is neither a regular file nor a folder`);
  return { real, folder: info.isDirectory() };
}
