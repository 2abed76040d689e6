import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AppError } from "../../app-error.js";
import { openSandbox, sqlIdentifier, sqlString, type DuckSandbox } from "./duckdb-sandbox.js";
import {
  checkSelect,
  type DatasetColumn,
  type DatasetSourceFile,
  firstLine,
  openDatasetSandbox,
  stripSemicolon,
} from "./dataset-query.js";
import type { TensorSpec } from "./input-mapping.js";
import type { RowRange } from "./row-ranges.js";

/**
 * A job's files, all in its own folder: the snapshot of the dataset taken
 * when the job first starts (the query's rows with a stable `_row` index,
 * so a restart reads the same rows), one Parquet part per checkpointed
 * chunk (`_row` + outputs), and the merged results (`_row`, the key
 * columns, the outputs). Every file is written under a temporary name and
 * renamed, so a crash leaves a whole file or none.
 */
export const ROW_COLUMN = "_row";

export class JobFiles {
  constructor(readonly dir: string) {}

  get snapshot(): string {
    return join(this.dir, "snapshot.parquet");
  }
  get partsDir(): string {
    return join(this.dir, "parts");
  }
  get result(): string {
    return join(this.dir, "result.parquet");
  }

  /** A sandbox that reads and writes this job's folder only. */
  async open(): Promise<DuckSandbox> {
    await mkdir(this.partsDir, { recursive: true });
    return openSandbox({ writeDirs: [this.dir] });
  }

  /** Runs the dataset's query once into the snapshot; returns its row count. */
  async takeSnapshot(dataset: DatasetSourceFile & { query: string }): Promise<number> {
    await mkdir(this.partsDir, { recursive: true });
    const sandbox = await openDatasetSandbox(dataset, [this.dir]);
    try {
      await checkSelect(sandbox, dataset.query);
      const temporary = `${this.snapshot}.tmp`;
      try {
        await sandbox.connection.run(
          `COPY (SELECT (row_number() OVER () - 1)::BIGINT AS ${ROW_COLUMN}, * FROM (\n${stripSemicolon(dataset.query)}\n)) TO ${sqlString(temporary)} (FORMAT parquet)`,
        );
      } catch (error) {
        throw new AppError("VALIDATION_FAILED", `the dataset's query failed: ${firstLine(error)}`);
      }
      await rename(temporary, this.snapshot);
      const counted = await sandbox.connection.runAndReadAll(
        `SELECT count(*)::BIGINT FROM read_parquet(${sqlString(this.snapshot)})`,
      );
      return Number(counted.getRows()[0]?.[0] ?? 0);
    } finally {
      sandbox.close();
    }
  }

  async snapshotColumns(sandbox: DuckSandbox): Promise<DatasetColumn[]> {
    const reader = await sandbox.connection.runAndReadAll(
      `SELECT * FROM read_parquet(${sqlString(this.snapshot)}) LIMIT 0`,
    );
    const types = reader.columnTypes().map(String);
    return reader.columnNames().map((name, index) => ({ name, type: types[index] ?? "UNKNOWN" }));
  }

  /** Rows [start, end) of the snapshot, as JS values, in order. */
  async readRows(sandbox: DuckSandbox, [start, end]: RowRange): Promise<Array<Record<string, unknown>>> {
    const reader = await sandbox.connection.runAndReadAll(
      `SELECT * FROM read_parquet(${sqlString(this.snapshot)}) WHERE ${ROW_COLUMN} >= ${start} AND ${ROW_COLUMN} < ${end} ORDER BY ${ROW_COLUMN}`,
    );
    return reader.getRowObjectsJS() as Array<Record<string, unknown>>;
  }

  /** Writes one part: `_row` and the outputs of the rows that succeeded (JSON values). */
  async writePart(
    sandbox: DuckSandbox,
    name: string,
    outputs: readonly OutputColumn[],
    rows: ReadonlyArray<Record<string, unknown>>,
  ): Promise<void> {
    const lines = join(this.dir, `${name}.jsonl.tmp`);
    const temporary = join(this.partsDir, `${name}.parquet.tmp`);
    await writeFile(lines, rows.map((row) => JSON.stringify(row)).join("\n") + (rows.length > 0 ? "\n" : ""));
    const columns = [
      `${sqlString(ROW_COLUMN)}: 'BIGINT'`,
      ...outputs.map((out) => `${sqlString(out.name)}: ${sqlString(out.type)}`),
    ];
    try {
      await sandbox.connection.run(
        `COPY (SELECT * FROM read_json(${sqlString(lines)}, format = 'newline_delimited', columns = {${columns.join(", ")}})) TO ${sqlString(temporary)} (FORMAT parquet)`,
      );
      await rename(temporary, join(this.partsDir, `${name}.parquet`));
    } finally {
      await rm(lines, { force: true });
    }
  }

  /**
   * Removes parts the checkpoint does not hold (written before a crash, or a
   * chunk a pause left unfinished): their rows are run again, so they must not
   * count twice. `keep` says which part names the checkpoint covers.
   */
  async removeUncommittedParts(keep: (name: string) => boolean): Promise<number> {
    await mkdir(this.partsDir, { recursive: true });
    let removed = 0;
    for (const file of await readdir(this.partsDir)) {
      const name = file.replace(/\.parquet$/, "");
      if (file.endsWith(".parquet") && keep(name)) continue;
      await rm(join(this.partsDir, file), { force: true });
      removed += 1;
    }
    return removed;
  }

  /** Merges the parts into the results: `_row`, the key columns from the snapshot, the outputs; one row per succeeded row. */
  async writeResult(
    sandbox: DuckSandbox,
    keyColumns: readonly string[],
    outputs: readonly OutputColumn[],
  ): Promise<number> {
    const temporary = `${this.result}.tmp`;
    const keys = keyColumns.map((key) => `s.${sqlIdentifier(key)}`);
    const outs = outputs.map((out) => `p.${sqlIdentifier(out.name)}`);
    const parts = (await readdir(this.partsDir)).filter((file) => file.endsWith(".parquet"));
    const from =
      parts.length > 0
        ? `read_parquet(${sqlString(join(this.partsDir, "*.parquet"))})`
        : `(SELECT NULL::BIGINT AS ${ROW_COLUMN}${outputs.map((out) => `, NULL::${out.type} AS ${sqlIdentifier(out.name)}`).join("")} LIMIT 0)`;
    await sandbox.connection.run(
      `COPY (SELECT s.${ROW_COLUMN}${[...keys, ...outs].map((column) => `, ${column}`).join("")} FROM read_parquet(${sqlString(this.snapshot)}) s JOIN ${from} p ON s.${ROW_COLUMN} = p.${ROW_COLUMN} ORDER BY s.${ROW_COLUMN}) TO ${sqlString(temporary)} (FORMAT parquet)`,
    );
    await rename(temporary, this.result);
    const counted = await sandbox.connection.runAndReadAll(
      `SELECT count(*)::BIGINT FROM read_parquet(${sqlString(this.result)})`,
    );
    return Number(counted.getRows()[0]?.[0] ?? 0);
  }
}

/** An output as a results column: its name and DuckDB type (a list for more than one element). */
export interface OutputColumn {
  name: string;
  type: string;
}

const DUCK_TYPE_OF: Record<string, string> = {
  BOOL: "BOOLEAN",
  UINT8: "UTINYINT",
  UINT16: "USMALLINT",
  UINT32: "UINTEGER",
  UINT64: "UBIGINT",
  INT8: "TINYINT",
  INT16: "SMALLINT",
  INT32: "INTEGER",
  INT64: "BIGINT",
  FP16: "FLOAT",
  BF16: "FLOAT",
  FP32: "FLOAT",
  FP64: "DOUBLE",
  BYTES: "VARCHAR",
};

export function outputColumnsOf(outputs: readonly TensorSpec[], maxBatchSize: number): OutputColumn[] {
  return outputs.map((spec) => {
    const dims = maxBatchSize > 0 ? spec.shape.slice(1) : spec.shape;
    const scalar = dims.every((dim) => dim === 1);
    const base = DUCK_TYPE_OF[spec.datatype] ?? "VARCHAR";
    return { name: spec.name, type: scalar ? base : `${base}[]` };
  });
}

/** A chunk's part name; a retry's. */
export function partName([start, end]: RowRange): string {
  return `rows-${String(start).padStart(10, "0")}-${String(end).padStart(10, "0")}`;
}

export function rangeOfPart(name: string): RowRange | undefined {
  const match = /^rows-(\d+)-(\d+)$/.exec(name);
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}
