import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { previewQuery } from "./dataset-query.js";
import { parseTableName, tablePath, withConnection } from "./postgres-table.js";

// The PostgreSQL the tests run beside (trust auth); a schema of this test's own, dropped after.
const URL = process.env["OPERON_TEST_POSTGRES_URL"] ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const SCHEMA = `operon_table_dataset_${process.pid}`;
const connections = { warehouse: URL };
const client = new pg.Client({ connectionString: URL });

beforeAll(async () => {
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await client.query(`CREATE SCHEMA ${SCHEMA}`);
  await client.query(`CREATE TABLE ${SCHEMA}.items (
    id bigint PRIMARY KEY, big bigint, price numeric(10, 2), score real, ok boolean, label text,
    embedding real[], raw bytea, seen timestamptz)`);
  await client.query(`INSERT INTO ${SCHEMA}.items VALUES
    (1, 9007199254740993, 12.50, 0.25, true, 'first', '{1,2.5,-3}', '\\x0aff', '2026-12-05 12:00:00+00'),
    (2, NULL, NULL, NULL, false, NULL, '{}', NULL, NULL)`);
});

afterAll(async () => {
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await client.end();
});

const table = (name: string) =>
  withConnection({ format: "POSTGRES_TABLE" as const, path: `warehouse:${name}` }, connections);

describe("PostgreSQL tables as datasets", () => {
  it("reads the table into `source` with its columns' kinds, NULLs kept and int8 not rounded", async () => {
    const preview = await previewQuery(table(`${SCHEMA}.items`), "SELECT * FROM source ORDER BY id");
    expect(preview.columns).toEqual([
      { name: "id", type: "BIGINT" },
      { name: "big", type: "BIGINT" },
      { name: "price", type: "DOUBLE" },
      { name: "score", type: "FLOAT" },
      { name: "ok", type: "BOOLEAN" },
      { name: "label", type: "VARCHAR" },
      { name: "embedding", type: "FLOAT[]" },
      { name: "raw", type: "BLOB" },
      { name: "seen", type: "VARCHAR" },
    ]);
    expect(preview.rowCount).toBe(2);
    expect(preview.rows[0]).toMatchObject({
      id: "1",
      big: "9007199254740993",
      price: 12.5,
      score: 0.25,
      ok: true,
      label: "first",
      embedding: [1, 2.5, -3],
      seen: "2026-12-05 12:00:00+00",
    });
    expect(preview.rows[1]).toMatchObject({ id: "2", big: null, price: null, label: null, embedding: [], raw: null });
    // The dataset's own SQL runs on DuckDB's copy: it can compute, and still reads no file.
    const summed = await previewQuery(table(`${SCHEMA}.items`), "SELECT sum(list_sum(embedding)) AS s FROM source");
    expect(summed.rows).toEqual([{ s: 0.5 }]);
    await expect(previewQuery(table(`${SCHEMA}.items`), "SELECT * FROM read_text('/etc/passwd')")).rejects.toThrow();
  });

  it("names a missing table, a bad name and an unknown connection", async () => {
    await expect(previewQuery(table(`${SCHEMA}.nope`), "SELECT * FROM source")).rejects.toThrow(
      new RegExp(`there is no table ${SCHEMA}\\.nope of connection 'warehouse'`),
    );
    expect(() => parseTableName("items; DROP TABLE x")).toThrow(/is not a table name/);
    expect(() => parseTableName("a.b.c")).toThrow(/is not a table name/);
    expect(parseTableName("items")).toEqual({ schema: "public", table: "items" });
    expect(() =>
      withConnection(
        { format: "POSTGRES_TABLE", path: tablePath({ connection: "other", schema: "s", table: "t" }) },
        connections,
      ),
    ).toThrow(/no PostgreSQL connection 'other' \(the server has warehouse/);
  });

  it("refuses a connection that cannot be reached, with the reason", async () => {
    const unreachable = withConnection(
      { format: "POSTGRES_TABLE" as const, path: "down:public.items" },
      { down: "postgresql://postgres@127.0.0.1:1/postgres" },
    );
    await expect(previewQuery(unreachable, "SELECT * FROM source")).rejects.toThrow(
      /cannot connect to PostgreSQL connection 'down': .*ECONNREFUSED/,
    );
  });
});
