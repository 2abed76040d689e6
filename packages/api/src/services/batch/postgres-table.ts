import { DOUBLE, FLOAT, INTEGER, LIST } from "@duckdb/node-api";
import pg from "pg";
import { AppError } from "../../app-error.js";
import type { DuckSandbox } from "./duckdb-sandbox.js";
import { sqlIdentifier } from "./duckdb-sandbox.js";

/**
 * A PostgreSQL table as a dataset (issue 24). The database is one of the
 * connections the server was started with (`--batch-postgres NAME=URL`):
 * an admin names the connection and the table, never a URL, so credentials
 * never pass through the API, the audit log or the Dataset table, and the
 * databases a dataset may read are the operator's choice. Only admins make
 * one (datasets.ts), as for server paths: a table is the server's data.
 *
 * Each time the dataset's query runs (a preview, a job's snapshot) the table
 * is read into DuckDB's table `source`: in one READ ONLY transaction
 * (repeatable read, so the rows are one snapshot), through a cursor in
 * batches of FETCH_ROWS, with a statement timeout; DuckDB's postgres
 * extension is not used (extensions cannot be downloaded here, and the
 * sandbox loads none). More than MAX_POSTGRES_ROWS rows are refused, not cut
 * short: filter them into a view and make the dataset of that.
 *
 * Columns keep their kind: integers, floating point (numeric as DOUBLE),
 * booleans, text (text, varchar, char, uuid, json, dates and times as their
 * text), bytea as BLOB, and one-dimensional arrays of numbers as lists
 * (float4[] → FLOAT[], so a vector column maps to a tensor input). Other
 * types are read as their text.
 */
export const MAX_POSTGRES_ROWS = 1_000_000;
export const FETCH_ROWS = 1_000;
const STATEMENT_TIMEOUT_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;

export interface PostgresTableRef {
  connection: string;
  schema: string;
  table: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** "schema.table" or "table" (schema public); plain identifiers only, so what is read is what was named. */
export function parseTableName(name: string, field = "file.table"): { schema: string; table: string } {
  const parts = name.split(".");
  const [schema, table] = parts.length === 1 ? ["public", parts[0]!] : parts;
  if (
    parts.length > 2 ||
    schema === undefined ||
    table === undefined ||
    !IDENTIFIER.test(schema) ||
    !IDENTIFIER.test(table)
  )
    throw new AppError(
      "VALIDATION_FAILED",
      `'${name}' is not a table name: write table or schema.table (letters, digits, _)`,
      {
        fieldErrors: [{ path: field, message: "schema.table" }],
      },
    );
  return { schema, table };
}

/** The Dataset row's `path` of a table: `<connection>:<schema>.<table>`. */
export function tablePath(ref: PostgresTableRef): string {
  return `${ref.connection}:${ref.schema}.${ref.table}`;
}

export function tableRefOf(path: string): PostgresTableRef {
  const colon = path.indexOf(":");
  const { schema, table } = parseTableName(path.slice(colon + 1));
  return { connection: path.slice(0, colon), schema, table };
}

/** The dataset as the query reads it: a PostgreSQL table with its connection's URL, anything else as it is. */
export function withConnection<T extends { format: string; path: string }>(
  dataset: T,
  connections: Readonly<Record<string, string>>,
): T & { connectionUrl?: string | undefined } {
  if (dataset.format !== "POSTGRES_TABLE") return dataset;
  const ref = tableRefOf(dataset.path);
  return { ...dataset, connectionUrl: connectionUrl(connections, ref.connection) };
}

/** The URL of a configured connection; an unknown name is refused with the names there are. */
export function connectionUrl(
  connections: Readonly<Record<string, string>>,
  name: string,
  field = "file.connection",
): string {
  const url = connections[name];
  if (url === undefined)
    throw new AppError(
      "VALIDATION_FAILED",
      `no PostgreSQL connection '${name}' (the server has ${Object.keys(connections).join(", ") || "none"}; see operon serve --batch-postgres)`,
      { fieldErrors: [{ path: field, message: "unknown connection" }] },
    );
  return url;
}

interface ColumnPlan {
  name: string;
  duckType: string;
  append: (appender: Appender, text: string) => void;
}

type Appender = Awaited<ReturnType<DuckSandbox["connection"]["createAppender"]>>;

/** A one-dimensional array of numbers in PostgreSQL's text form, `{1,2.5,NULL}`. */
const numberList = (text: string): Array<number | null> =>
  text === "{}"
    ? []
    : text
        .slice(1, -1)
        .split(",")
        .map((item) => (item === "NULL" ? null : Number(item)));

/** How a column of the PostgreSQL type `oid` becomes a DuckDB column. */
function planColumn(name: string, oid: number): ColumnPlan {
  const scalar = (duckType: string, append: ColumnPlan["append"]): ColumnPlan => ({ name, duckType, append });
  switch (oid) {
    case 16:
      return scalar("BOOLEAN", (a, text) => a.appendBoolean(text === "t"));
    case 21:
      return scalar("SMALLINT", (a, text) => a.appendSmallInt(Number(text)));
    case 23:
      return scalar("INTEGER", (a, text) => a.appendInteger(Number(text)));
    case 20:
      return scalar("BIGINT", (a, text) => a.appendBigInt(BigInt(text)));
    case 700:
      return scalar("FLOAT", (a, text) => a.appendFloat(Number(text)));
    case 701:
    case 1700:
      return scalar("DOUBLE", (a, text) => a.appendDouble(Number(text)));
    case 17:
      // bytea's text form (hex output, PostgreSQL's default): \x0a1b…
      return scalar("BLOB", (a, text) => a.appendBlob(Buffer.from(text.slice(2), "hex")));
    case 1021:
      return scalar("FLOAT[]", (a, text) => a.appendList(numberList(text), LIST(FLOAT)));
    case 1022:
    case 1231:
      return scalar("DOUBLE[]", (a, text) => a.appendList(numberList(text), LIST(DOUBLE)));
    case 1007:
    case 1005:
      return scalar("INTEGER[]", (a, text) => a.appendList(numberList(text), LIST(INTEGER)));
    default:
      return scalar("VARCHAR", (a, text) => a.appendVarchar(text));
  }
}

/** Reads the table into the sandbox's table `source`; returns its rows. */
export async function createPostgresSource(sandbox: DuckSandbox, url: string, ref: PostgresTableRef): Promise<number> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: "operon-batch-dataset",
    // Every value as PostgreSQL's text: planColumn converts it, so nothing is rounded on the way (int8, numeric).
    types: { getTypeParser: () => (value: string) => value },
  });
  const what = `table ${ref.schema}.${ref.table} of connection '${ref.connection}'`;
  try {
    await client.connect();
  } catch (error) {
    throw new AppError(
      "VALIDATION_FAILED",
      `cannot connect to PostgreSQL connection '${ref.connection}': ${(error as Error).message}`,
    );
  }
  try {
    await client.query("BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
    await client.query(`SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
    const exists = await client.query<{ found: string | null }>("SELECT to_regclass($1)::text AS found", [
      `${quote(ref.schema)}.${quote(ref.table)}`,
    ]);
    if (exists.rows[0]?.found == null)
      throw new AppError("VALIDATION_FAILED", `there is no ${what} (or this connection's role may not see it)`, {
        fieldErrors: [{ path: "file.table", message: "no such table" }],
      });
    await client.query(
      `DECLARE dataset_rows NO SCROLL CURSOR FOR SELECT * FROM ${quote(ref.schema)}.${quote(ref.table)}`,
    );
    let plans: ColumnPlan[] | undefined;
    let appender: Appender | undefined;
    let rows = 0;
    try {
      for (;;) {
        const batch = await client.query({ text: `FETCH ${FETCH_ROWS} FROM dataset_rows`, rowMode: "array" });
        if (plans === undefined) {
          plans = batch.fields.map((field) => planColumn(field.name, field.dataTypeID));
          if (plans.length === 0) throw new AppError("VALIDATION_FAILED", `the ${what} has no columns`);
          await sandbox.connection.run(
            `CREATE TABLE source (${plans.map((plan) => `${sqlIdentifier(plan.name)} ${plan.duckType}`).join(", ")})`,
          );
          appender = await sandbox.connection.createAppender("source");
        }
        for (const row of batch.rows as Array<Array<string | null>>) {
          plans.forEach((plan, index) => {
            const value = row[index];
            if (value === null || value === undefined) appender!.appendNull();
            else plan.append(appender!, value);
          });
          appender!.endRow();
        }
        rows += batch.rows.length;
        if (rows > MAX_POSTGRES_ROWS)
          throw new AppError(
            "VALIDATION_FAILED",
            `the ${what} has more than ${MAX_POSTGRES_ROWS.toLocaleString("en")} rows; make a view of the rows you need and a dataset of it`,
            { fieldErrors: [{ path: "file.table", message: "too many rows" }] },
          );
        if (batch.rows.length < FETCH_ROWS) break;
      }
      appender?.flushSync();
    } finally {
      appender?.closeSync();
    }
    return rows;
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError("VALIDATION_FAILED", `the ${what} cannot be read: ${(error as Error).message}`, {
      fieldErrors: [{ path: "file.table", message: "unreadable" }],
    });
  } finally {
    // Read only: nothing to keep. end() also ends a transaction a failure left open.
    await client.query("ROLLBACK").catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}
