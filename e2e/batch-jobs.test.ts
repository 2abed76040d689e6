import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { tempRepository, type RunningOperon } from "./support/operon-process.js";
import { parquetRows } from "./support/parquet-rows.js";

/**
 * Batch jobs through the real server: datasets (uploads, server paths,
 * DuckDB queries and their sandbox), jobs over them through the gateway
 * (type checks, failed rows, retry, pause/resume, cancel, results as
 * Parquet and as a dataset), ownership, and a kill -9 of the server in the
 * middle of a job: after the restart every row has exactly one result.
 */

// Y = 2·x0 + x1, 1 ms a request (a timer: the worker's CPU stays free); x0 = 13 fails the request.
const SCORER_MODEL = `export default class {
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return requests.map((request) => {
      const x = request.input("X").toFloat32Array();
      if (x[0] === 13) return ctx.error("INVALID_ARG", "thirteen is unlucky");
      return { outputs: [ctx.tensor.float32("Y", [1], [2 * x[0] + x[1]])] };
    });
  }
}`;
// One step around the scorer, so a job can target an operator.
const SCORE_OPERATOR = {
  inputs: [{ name: "X", datatype: "FP32", dims: [2] }],
  outputs: [{ name: "Y", datatype: "FP32", dims: [1] }],
  steps: [{ id: "score", kind: "model", model: "scorer", inputs: { X: "X" }, outputs: { Y: "Y" } }],
};
const SCORER_CONFIG = `name: "scorer"
backend: "typescript"
max_batch_size: 0
input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 2 } ]`;

function csv(rows: number, options: { nullAt?: number[] } = {}): string {
  const lines = ["id,a,b,label"];
  for (let i = 0; i < rows; i += 1) {
    const a = options.nullAt?.includes(i) ? "" : String(i % 50);
    lines.push(`k${i},${a},${i % 7},row ${i}`);
  }
  return `${lines.join("\n")}\n`;
}

const b64 = (text: string | Buffer) => Buffer.from(text).toString("base64");

async function waitForJob(
  admin: ApiSession,
  id: string,
  done: (job: Awaited<ReturnType<ApiSession["client"]["jobs"]["get"]["query"]>>) => boolean,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await admin.client.jobs.get.query({ id });
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stuck: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function resultRows(
  server: RunningOperon,
  session: ApiSession,
  id: string,
): Promise<Array<Record<string, unknown>>> {
  const cookie = [...session.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  const response = await fetch(`${server.apiUrl}/api/jobs/${id}/result.parquet`, { headers: { cookie } });
  expect(response.status).toBe(200);
  const file = join(server.dataDir, `download-${id}.parquet`);
  writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  return parquetRows(file);
}

describe("batch jobs (real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let engineer: ApiSession;
  let repository: string;
  let dataDir: string;
  const ENGINEER = { email: "eve@example.com", password: "violet-harbor-lantern-93" };
  const args = () => ["--model-repository", repository, "--load-model", "scorer", "--batch-budget-ms", "50"];

  beforeAll(async () => {
    repository = tempRepository();
    mkdirSync(join(repository, "scorer", "1"), { recursive: true });
    writeFileSync(join(repository, "scorer", "1", "model.js"), SCORER_MODEL);
    writeFileSync(join(repository, "scorer", "config.pbtxt"), SCORER_CONFIG);
    server = await startControlPlaneServer(args(), { timeoutMs: 150_000 });
    dataDir = server.dataDir;
    admin = await signedIn(server);
    await admin.client.users.create.mutate({ ...ENGINEER, role: "ENGINEER" });
    engineer = await signedIn(server, ENGINEER);
  }, 200_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("previews an uploaded CSV with its schema, and refuses bad SQL, writes and reads outside the file", async () => {
    const created = await engineer.client.datasets.create.mutate({
      name: "small",
      file: { kind: "upload", fileName: "small.csv", contentBase64: b64(csv(30)) },
      query: "SELECT id, a, b, label FROM source WHERE b < 6",
      keyColumns: ["id"],
    });
    expect(created.preview.columns).toEqual([
      { name: "id", type: "VARCHAR" },
      { name: "a", type: "BIGINT" },
      { name: "b", type: "BIGINT" },
      { name: "label", type: "VARCHAR" },
    ]);
    expect(created.preview.rowCount).toBe(26);
    expect(created.preview.rows[0]).toEqual({ id: "k0", a: "0", b: "0", label: "row 0" });
    const bad = (query: string) =>
      apiErrorOf(
        engineer.client.datasets.create.mutate({
          name: `bad-${Math.random().toString(36).slice(2)}`,
          file: { kind: "upload", fileName: "x.csv", contentBase64: b64(csv(3)) },
          query,
        }),
      );
    expect(await bad("SELEC * FROM source")).toMatchObject({
      appCode: "VALIDATION_FAILED",
      message: expect.stringMatching(/not valid SQL.*syntax error/),
    });
    expect((await bad("SELECT nope FROM source")).message).toMatch(/cannot run.*nope/);
    expect((await bad("SELECT 1; SELECT 2")).message).toMatch(/one SELECT statement, not 2/);
    expect((await bad("COPY (SELECT 1) TO '/tmp/owned.csv'")).message).toMatch(/must be a SELECT|Permission Error/);
    expect((await bad("ATTACH '/tmp/other.duckdb'")).message).toMatch(/must be a SELECT|Permission Error/);
    expect((await bad("SELECT * FROM read_csv('/etc/passwd')")).message).toMatch(
      /Permission Error|disabled by configuration/,
    );
    const broken = await apiErrorOf(
      engineer.client.datasets.create.mutate({
        name: "broken",
        file: { kind: "upload", fileName: "broken.parquet", contentBase64: b64("not parquet at all") },
      }),
    );
    expect(broken).toMatchObject({
      appCode: "VALIDATION_FAILED",
      message: expect.stringMatching(/PARQUET file cannot be read/),
    });
    expect(await engineer.client.datasets.list.query()).toHaveLength(1);
  });

  it("lets only admins name server paths, and only under the allowed roots", async () => {
    const inside = join(dataDir, "datasets", "server.jsonl");
    writeFileSync(inside, `${JSON.stringify({ id: "s1", a: 1, b: 2 })}\n${JSON.stringify({ id: "s2", a: 3, b: 4 })}\n`);
    const engineerTry = await apiErrorOf(
      engineer.client.datasets.create.mutate({ name: "srv", file: { kind: "serverPath", path: inside } }),
    );
    expect(engineerTry).toMatchObject({ appCode: "FORBIDDEN", message: expect.stringMatching(/only admins/) });
    const outside = await apiErrorOf(
      admin.client.datasets.create.mutate({ name: "srv", file: { kind: "serverPath", path: "/etc/passwd" } }),
    );
    expect(outside.message).toMatch(/outside the folders datasets may read/);
    const escape = await apiErrorOf(
      admin.client.datasets.create.mutate({
        name: "srv",
        file: { kind: "serverPath", path: join(dataDir, "datasets", "..", "batch", "x.csv") },
      }),
    );
    expect(escape.message).toMatch(/does not exist|outside/);
    const created = await admin.client.datasets.create.mutate({
      name: "srv",
      file: { kind: "serverPath", path: inside },
    });
    expect(created.preview.rowCount).toBe(2);
    // An engineer does not see the admin's dataset (nor its path).
    expect((await engineer.client.datasets.list.query()).map((d) => d.name)).toEqual(["small"]);
    expect((await apiErrorOf(engineer.client.datasets.preview.query({ id: created.id }))).appCode).toBe("NOT_FOUND");
  });

  it("type-checks the column mapping before a job starts", async () => {
    const [small] = await engineer.client.datasets.list.query();
    const target = { kind: "MODEL" as const, name: "scorer" };
    const wrongKind = await apiErrorOf(
      engineer.client.jobs.create.mutate({
        datasetId: small!.id,
        target,
        mapping: [{ input: "X", kind: "text", column: "label" }],
      }),
    );
    expect(wrongKind.message).toMatch(/input 'X' is FP32: text columns go into BYTES inputs/);
    const notNumeric = await apiErrorOf(
      engineer.client.jobs.create.mutate({
        datasetId: small!.id,
        target,
        mapping: [{ input: "X", kind: "tensor", columns: ["a", "label"] }],
      }),
    );
    expect(notNumeric.message).toMatch(/column 'label' \(VARCHAR\) is not numeric/);
    const wrongCount = await apiErrorOf(
      engineer.client.jobs.create.mutate({
        datasetId: small!.id,
        target,
        mapping: [{ input: "X", kind: "tensor", columns: ["a"] }],
      }),
    );
    expect(wrongCount.message).toMatch(/shape \[2\] does not take 1 value/);
    const noSuch = await apiErrorOf(
      engineer.client.jobs.create.mutate({ datasetId: small!.id, target: { kind: "OPERATOR", name: "scorer" } }),
    );
    expect(noSuch.message).toMatch(/'scorer' is a model/);
    expect(await engineer.client.jobs.list.query()).toEqual([]);
  });

  it("runs a job to results with exactly one result per row, keeps failed rows with their keys, retries them", async () => {
    const dataset = await engineer.client.datasets.create.mutate({
      name: "scores",
      file: { kind: "upload", fileName: "scores.csv", contentBase64: b64(csv(600, { nullAt: [5, 77] })) },
      keyColumns: ["id"],
    });
    const job = await engineer.client.jobs.create.mutate({
      datasetId: dataset.id,
      target: { kind: "MODEL", name: "scorer" },
      mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    });
    const done = await waitForJob(engineer, job.id, (j) => j.state === "DONE");
    // The job did not ask: jobs.get says what the server's default gave it (the scorer does not batch: 1).
    expect(done).toMatchObject({ rowsPerRequest: 1, rowsPerRequestDefault: true });
    const unexpected = (await engineer.client.jobs.failures.query({ id: job.id })).filter(
      (f) => !/NULL|thirteen/.test(f.error),
    );
    expect(unexpected.slice(0, 2)).toEqual([]);
    // x0 = 13 fails in the model (rows 13, 63, ...: 12 of them), two rows have a NULL.
    const thirteens = Array.from({ length: 600 }, (_, i) => i).filter((i) => i % 50 === 13);
    expect(done).toMatchObject({ totalRows: 600, doneRows: 600, failedRows: thirteens.length + 2 });
    const failures = await engineer.client.jobs.failures.query({ id: job.id });
    expect(failures.map((f) => f.row)).toEqual(
      [5, ...thirteens.slice(0, 1), 63, 77, ...thirteens.slice(2)].sort((a, b) => a - b),
    );
    expect(failures.find((f) => f.row === 5)).toMatchObject({ error: "column 'a' is NULL", key: { id: "k5" } });
    expect(failures.find((f) => f.row === 13)!.error).toMatch(/thirteen is unlucky/);
    const rows = await resultRows(server, engineer, job.id);
    expect(rows).toHaveLength(600 - failures.length);
    expect(new Set(rows.map((row) => Number(row._row))).size).toBe(rows.length);
    for (const row of rows) {
      const i = Number(row._row);
      expect(row.id).toBe(`k${i}`);
      expect(row.Y).toBe(2 * (i % 50) + (i % 7));
    }
    // Retrying: the same rows fail again (the data did not change), one attempt more each.
    await engineer.client.jobs.retryFailed.mutate({ id: job.id });
    const retried = await waitForJob(engineer, job.id, (j) => j.state === "DONE");
    expect(retried.failedRows).toBe(failures.length);
    expect((await engineer.client.jobs.failures.query({ id: job.id })).every((f) => f.attempts === 2)).toBe(true);
    expect(await resultRows(server, engineer, job.id)).toHaveLength(rows.length);
    // The results as a dataset, queried like any other.
    const registered = await engineer.client.jobs.registerResult.mutate({ id: job.id, name: "scores-out" });
    const preview = await engineer.client.datasets.preview.query({ id: registered.datasetId });
    expect(preview.preview.columns.map((c) => c.name)).toEqual(["_row", "id", "Y"]);
    expect(preview.preview.rowCount).toBe(rows.length);
    // Another engineer's job is not there for someone else; the admin sees it.
    expect((await admin.client.jobs.list.query()).map((j) => j.id)).toContain(job.id);
  }, 120_000);

  it("pauses, resumes and cancels", async () => {
    const dataset = await engineer.client.datasets.create.mutate({
      name: "long",
      file: { kind: "upload", fileName: "long.csv", contentBase64: b64(csv(2000)) },
      query: "SELECT * FROM source WHERE a <> 13",
    });
    const job = await engineer.client.jobs.create.mutate({
      datasetId: dataset.id,
      target: { kind: "MODEL", name: "scorer" },
      mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    });
    await waitForJob(engineer, job.id, (j) => j.doneRows > 0);
    const paused = await engineer.client.jobs.pause.mutate({ id: job.id });
    expect(paused.state).toBe("PAUSED");
    const atPause = paused.doneRows;
    expect(atPause).toBeLessThan(paused.totalRows!);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await engineer.client.jobs.get.query({ id: job.id })).doneRows).toBe(atPause);
    expect((await apiErrorOf(engineer.client.jobs.pause.mutate({ id: job.id }))).appCode).toBe("CONFLICT");
    await engineer.client.jobs.resume.mutate({ id: job.id });
    const done = await waitForJob(engineer, job.id, (j) => j.state === "DONE", 120_000);
    expect(done.failedRows).toBe(0);
    const rows = await resultRows(server, engineer, job.id);
    expect(rows).toHaveLength(done.totalRows!);
    expect(new Set(rows.map((row) => Number(row._row))).size).toBe(rows.length);

    const second = await engineer.client.jobs.create.mutate({
      datasetId: dataset.id,
      target: { kind: "MODEL", name: "scorer" },
      mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    });
    await waitForJob(engineer, second.id, (j) => j.doneRows > 0 || j.state === "DONE");
    const cancelled = await admin.client.jobs.cancel.mutate({ id: second.id });
    expect(cancelled.state).toBe("CANCELLED");
    expect((await apiErrorOf(engineer.client.jobs.resume.mutate({ id: second.id }))).appCode).toBe("CONFLICT");
    const noResult = await fetch(`${server.apiUrl}/api/jobs/${second.id}/result.parquet`, {
      headers: { cookie: [...engineer.cookies].map(([n, v]) => `${n}=${v}`).join("; ") },
    });
    expect(noResult.status).toBe(409);
    const anonymous = await fetch(`${server.apiUrl}/api/jobs/${job.id}/result.parquet`);
    expect(anonymous.status).toBe(401);
  }, 180_000);

  // Over an operator: the gateway learns stored operators again at start, and
  // that must happen before the interrupted job resumes (it once did not).
  it("resumes an operator job after kill -9 of the server in the middle of it, each row with exactly one result", async () => {
    await admin.client.operators.create.mutate({ name: "score_op", spec: SCORE_OPERATOR });
    const dataset = await engineer.client.datasets.create.mutate({
      name: "restart",
      file: { kind: "upload", fileName: "restart.csv", contentBase64: b64(csv(6000)) },
      query: "SELECT * FROM source WHERE a <> 13",
      keyColumns: ["id"],
    });
    const job = await engineer.client.jobs.create.mutate({
      datasetId: dataset.id,
      target: { kind: "OPERATOR", name: "score_op" },
    });
    const atKill = await waitForJob(engineer, job.id, (j) => j.doneRows >= 300);
    await server.stop("SIGKILL");
    // Killed in the middle: rows were left to do.
    expect(atKill.state).toBe("RUNNING");
    expect(atKill.doneRows).toBeLessThan(atKill.totalRows!);
    server = await startControlPlaneServer(args(), { dataDir, timeoutMs: 150_000 });
    const again = await signedIn(server, ENGINEER);
    engineer = again;
    const done = await waitForJob(again, job.id, (j) => j.state === "DONE", 120_000);
    expect(done.failedRows).toBe(0);
    const rows = await resultRows(server, again, job.id);
    expect(rows).toHaveLength(done.totalRows!);
    const indices = rows.map((row) => Number(row._row));
    expect(new Set(indices).size).toBe(rows.length);
    expect(Math.max(...indices)).toBe(done.totalRows! - 1);
    expect(readFileSync(join(dataDir, "batch", "jobs", job.id, "result.parquet")).length).toBeGreaterThan(0);
  }, 300_000);
});
