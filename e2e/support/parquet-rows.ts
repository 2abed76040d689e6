import { DuckDBInstance } from "@duckdb/node-api";

/** A job's result file (Parquet) as row objects in row order (`_row`), read with DuckDB as a user would. */
export async function parquetRows(file: string): Promise<Array<Record<string, unknown>>> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll(`SELECT * FROM read_parquet('${file}') ORDER BY _row`);
  const rows = reader.getRowObjectsJS() as Array<Record<string, unknown>>;
  connection.closeSync();
  instance.closeSync();
  return rows;
}
