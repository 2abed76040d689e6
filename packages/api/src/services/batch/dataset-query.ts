import type { DatasetFormat } from "@operon/db";
import { AppError } from "../../app-error.js";
import { openSandbox, type DuckSandbox } from "./duckdb-sandbox.js";
import { readerOf } from "./dataset-files.js";
import { createImageFolderSource } from "./image-folder.js";
import { createPostgresSource, tableRefOf } from "./postgres-table.js";

/**
 * A dataset's query: one SELECT (DuckDB SQL) over the view `source`, the
 * dataset's file. The query runs in a sandbox that can read that file only
 * (duckdb-sandbox.ts), and is checked to be exactly one SELECT before it
 * runs: a preview never writes, attaches or sets anything.
 */
export interface DatasetColumn {
  name: string;
  /** DuckDB's type, e.g. BIGINT, DOUBLE, VARCHAR, BLOB, FLOAT[]. */
  type: string;
}

export interface DatasetPreview {
  columns: DatasetColumn[];
  /** The first rows, JSON-safe (BIGINT as strings, BLOB as `\x..` text). */
  rows: Array<Record<string, unknown>>;
  /** All rows of the query. */
  rowCount: number;
}

export interface DatasetSourceFile {
  format: DatasetFormat;
  path: string;
  /** POSTGRES_TABLE: the URL of the dataset's connection (withConnection, postgres-table.ts). */
  connectionUrl?: string | undefined;
}

export const DEFAULT_QUERY = "SELECT * FROM source";
export const PREVIEW_ROWS = 20;

/** Opens a sandbox that reads the file as `source`; the caller closes it. */
export async function openDatasetSandbox(
  file: DatasetSourceFile,
  writeDirs: readonly string[] = [],
): Promise<DuckSandbox> {
  // An image folder or a PostgreSQL table is read by the control plane into a table: the SQL reads no file at all.
  const isFile = file.format !== "IMAGE_FOLDER" && file.format !== "POSTGRES_TABLE";
  const sandbox = await openSandbox({ readPaths: isFile ? [file.path] : [], writeDirs });
  try {
    if (file.format === "IMAGE_FOLDER") await createImageFolderSource(sandbox, file.path);
    else if (file.format === "POSTGRES_TABLE") {
      if (file.connectionUrl === undefined) throw new Error("the dataset's PostgreSQL connection was not resolved");
      await createPostgresSource(sandbox, file.connectionUrl, tableRefOf(file.path));
    } else await sandbox.connection.run(`CREATE VIEW source AS SELECT * FROM ${readerOf(file.format, file.path)}`);
  } catch (error) {
    sandbox.close();
    if (error instanceof AppError) throw error;
    throw new AppError("VALIDATION_FAILED", `the ${file.format} file cannot be read: ${firstLine(error)}`, {
      fieldErrors: [{ path: "file", message: "unreadable" }],
    });
  }
  return sandbox;
}

/** Refuses anything but exactly one SELECT, naming the problem (DuckDB's parser error included). */
export async function checkSelect(sandbox: DuckSandbox, query: string): Promise<void> {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path: "query", message }] });
  let count: number;
  try {
    count = (await sandbox.connection.extractStatements(query)).count;
  } catch (error) {
    throw refuse(`the query is not valid SQL: ${firstLine(error).replace(/^Failed to extract statements: /, "")}`);
  }
  if (count !== 1) throw refuse(`the query must be one SELECT statement, not ${count}`);
  let statementType: number;
  try {
    statementType = (await sandbox.connection.prepare(query)).statementType;
  } catch (error) {
    throw refuse(`the query cannot run: ${firstLine(error)}`);
  }
  // StatementType.SELECT is 1 in DuckDB's C API.
  if (statementType !== 1) throw refuse("the query must be a SELECT (it may read only the view `source`)");
}

/** The query's columns, its first rows and its row count. */
export async function previewQuery(
  file: DatasetSourceFile,
  query: string,
  limit = PREVIEW_ROWS,
): Promise<DatasetPreview> {
  const sandbox = await openDatasetSandbox(file);
  try {
    await checkSelect(sandbox, query);
    const inner = stripSemicolon(query);
    try {
      const reader = await sandbox.connection.runAndReadAll(`SELECT * FROM (\n${inner}\n) LIMIT ${Math.trunc(limit)}`);
      const names = reader.columnNames();
      const types = reader.columnTypes().map(String);
      const counted = await sandbox.connection.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM (\n${inner}\n)`);
      return {
        columns: names.map((name, index) => ({ name, type: types[index] ?? "UNKNOWN" })),
        rows: reader.getRowObjectsJson() as Array<Record<string, unknown>>,
        rowCount: Number(counted.getRows()[0]?.[0] ?? 0),
      };
    } catch (error) {
      throw new AppError("VALIDATION_FAILED", `the query failed: ${firstLine(error)}`, {
        fieldErrors: [{ path: "query", message: firstLine(error) }],
      });
    }
  } finally {
    sandbox.close();
  }
}

export function stripSemicolon(query: string): string {
  return query.trim().replace(/;+\s*$/, "");
}

export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}
