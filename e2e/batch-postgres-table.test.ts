import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import type { RunningOperon } from "./support/operon-process.js";
import { parquetRows } from "./support/parquet-rows.js";

/**
 * A batch job over a PostgreSQL table (issue 24), through the real server:
 * the server is given a connection by name (--batch-postgres), an admin
 * makes a dataset of a table in it (an engineer may not, a URL is never
 * accepted through the API), and a job runs add_sub over the table's
 * real[] vectors: every row's outputs are checked.
 */
const URL = process.env["OPERON_TEST_POSTGRES_URL"] ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const SCHEMA = `operon_batch_table_${process.pid}`;
const ROWS = 40;
const ENGINEER = { email: "pat@example.com", password: "violet-harbor-lantern-95" };
const vector = (row: number) => Array.from({ length: 16 }, (_, i) => row + i);

describe("batch jobs over a PostgreSQL table (real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let engineer: ApiSession;
  const client = new pg.Client({ connectionString: URL });

  beforeAll(async () => {
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await client.query(`CREATE SCHEMA ${SCHEMA}`);
    await client.query(`CREATE TABLE ${SCHEMA}.vectors (id text PRIMARY KEY, a real[] NOT NULL, b real[] NOT NULL)`);
    for (let row = 0; row < ROWS; row += 1)
      await client.query(`INSERT INTO ${SCHEMA}.vectors VALUES ($1, $2, $3)`, [
        `v${row}`,
        vector(row),
        Array(16).fill(1),
      ]);
    server = await startControlPlaneServer(["--batch-postgres", `warehouse=${URL}`, "--batch-budget-ms", "100"], {
      timeoutMs: 150_000,
    });
    admin = await signedIn(server);
    await admin.client.users.create.mutate({ ...ENGINEER, role: "ENGINEER" });
    engineer = await signedIn(server, ENGINEER);
  }, 200_000);

  afterAll(async () => {
    await server?.stop();
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await client.end();
  });

  it("makes a dataset of a table for admins only, of a named connection only", async () => {
    const file = { kind: "postgres" as const, connection: "warehouse", table: `${SCHEMA}.vectors` };
    const engineerTry = await apiErrorOf(engineer.client.datasets.create.mutate({ name: "vectors", file }));
    expect(engineerTry).toMatchObject({ appCode: "FORBIDDEN", message: expect.stringMatching(/only admins/) });
    const unknown = await apiErrorOf(
      admin.client.datasets.create.mutate({ name: "vectors", file: { ...file, connection: URL } }),
    );
    expect(unknown.message).toMatch(/no PostgreSQL connection .* \(the server has warehouse; see operon serve/);
    const missing = await apiErrorOf(
      admin.client.datasets.create.mutate({ name: "vectors", file: { ...file, table: `${SCHEMA}.nothing` } }),
    );
    expect(missing.message).toMatch(/there is no table .*\.nothing of connection 'warehouse'/);

    const created = await admin.client.datasets.create.mutate({ name: "vectors", file, keyColumns: ["id"] });
    expect(created).toMatchObject({
      source: "POSTGRES",
      format: "POSTGRES_TABLE",
      file: `warehouse:${SCHEMA}.vectors`,
    });
    expect(created.preview.columns).toEqual([
      { name: "id", type: "VARCHAR" },
      { name: "a", type: "FLOAT[]" },
      { name: "b", type: "FLOAT[]" },
    ]);
    expect(created.preview.rowCount).toBe(ROWS);
  });

  it("runs add_sub over every row of the table", async () => {
    const [dataset] = await admin.client.datasets.list.query();
    const job = await admin.client.jobs.create.mutate({
      datasetId: dataset!.id,
      target: { kind: "MODEL", name: "add_sub" },
      mapping: [
        { input: "INPUT0", kind: "tensor", columns: ["a"] },
        { input: "INPUT1", kind: "tensor", columns: ["b"] },
      ],
    });
    const deadline = Date.now() + 90_000;
    let view = await admin.client.jobs.get.query({ id: job.id });
    while (view.state !== "DONE" && view.state !== "FAILED" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      view = await admin.client.jobs.get.query({ id: job.id });
    }
    expect(view).toMatchObject({ state: "DONE", totalRows: ROWS, doneRows: ROWS, failedRows: 0 });
    const cookie = [...admin.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(`${server.apiUrl}/api/jobs/${job.id}/result.parquet`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const file = join(server.dataDir, "vectors-result.parquet");
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const rows = await parquetRows(file);
    expect(rows).toHaveLength(ROWS);
    rows.forEach((row, index) => {
      expect(row["id"]).toBe(`v${index}`);
      expect(row["OUTPUT0"]).toEqual(vector(index).map((x) => x + 1));
      expect(row["OUTPUT1"]).toEqual(vector(index).map((x) => x - 1));
    });
  }, 120_000);
});
