import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { TEST_ADMIN, signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { runOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";
import { parquetRows } from "./support/parquet-rows.js";

/**
 * `operon job run` (issue 24) as a script runs it: the real CLI process
 * against a real server, over an operator and a named dataset, and over a
 * local file it uploads; its output, exit status and the results it writes.
 */

// Y = 2·x0 + x1; x0 = 13 fails the request (so a job has failed rows).
const SCORER_MODEL = `export default class {
  execute(requests, ctx) {
    return requests.map((request) => {
      const x = request.input("X").toFloat32Array();
      if (x[0] === 13) return ctx.error("INVALID_ARG", "thirteen is unlucky");
      return { outputs: [ctx.tensor.float32("Y", [1], [2 * x[0] + x[1]])] };
    });
  }
}`;
const SCORER_CONFIG = `name: "scorer"
backend: "typescript"
max_batch_size: 0
input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]`;
const SCORE_OPERATOR = {
  inputs: [{ name: "X", datatype: "FP32", dims: [2] }],
  outputs: [{ name: "Y", datatype: "FP32", dims: [1] }],
  steps: [{ id: "score", kind: "model", model: "scorer", inputs: { X: "X" }, outputs: { Y: "Y" } }],
};

function csv(rows: number): string {
  return `${["id,a,b", ...Array.from({ length: rows }, (_, i) => `k${i},${i % 50},${i % 7}`)].join("\n")}\n`;
}

describe("operon job run (real CLI, real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let work: string;
  let passwordFile: string;
  const signIn = () => ["--api-url", server.apiUrl!, "--email", TEST_ADMIN.email, "--password-file", passwordFile];

  beforeAll(async () => {
    const repository = tempRepository();
    mkdirSync(join(repository, "scorer", "1"), { recursive: true });
    writeFileSync(join(repository, "scorer", "1", "model.js"), SCORER_MODEL);
    writeFileSync(join(repository, "scorer", "config.pbtxt"), SCORER_CONFIG);
    server = await startControlPlaneServer(["--model-repository", repository, "--load-model", "scorer"], {
      timeoutMs: 150_000,
    });
    admin = await signedIn(server);
    await admin.client.operators.create.mutate({ name: "score_op", spec: SCORE_OPERATOR });
    await admin.client.datasets.create.mutate({
      name: "cli-rows",
      file: { kind: "upload", fileName: "rows.csv", contentBase64: Buffer.from(csv(500)).toString("base64") },
      keyColumns: ["id"],
    });
    work = join(server.dataDir, "cli");
    mkdirSync(work, { recursive: true });
    passwordFile = join(work, "password");
    writeFileSync(passwordFile, `${TEST_ADMIN.password}\n`, { mode: 0o600 });
  }, 200_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("runs an operator over a named dataset to the end, reports failed rows and writes the results", async () => {
    const out = join(work, "scores.parquet");
    const run = await runOperon(
      ["job", "run", "--operator", "score_op", "--dataset", "cli-rows", ...signIn(), "--out", out],
      120_000,
    );
    expect(run.stderr).toMatch(/^job \S+ queued$/m);
    const id = /^job (\S+) queued$/m.exec(run.stderr)![1]!;
    // 10 rows have x0 = 13 (rows 13, 63, ...).
    expect(run.stdout).toContain(`job ${id} done: 490 of 500 rows with results, 10 failed\n`);
    expect(run.stdout).toContain(`results: ${server.apiUrl}/api/jobs/${id}/result.parquet\n`);
    expect(run.stdout).toContain("failed rows: in the console's Jobs page");
    expect(run.stdout).toContain(`wrote ${out}\n`);
    // The progress bar (plain lines: stderr is not a terminal) ends at every row.
    expect(run.stderr).toMatch(/100% \| 500\/500 rows \| \S+ rows\/s \| .* \| 10 failed \| done/);
    expect(run.code).toBe(0);
    const rows = await parquetRows(out);
    expect(rows).toHaveLength(490);
    for (const row of rows) {
      const i = Number(row._row);
      expect(row.id).toBe(`k${i}`);
      expect(row.Y).toBe(2 * (i % 50) + (i % 7));
    }
    const job = await admin.client.jobs.get.query({ id });
    expect(job).toMatchObject({ state: "DONE", target: { kind: "OPERATOR", name: "score_op" }, failedRows: 10 });
  }, 150_000);

  it("uploads a local file as a dataset with a query, a key and a mapping, and returns at once with --no-wait", async () => {
    const file = join(work, "local.csv");
    writeFileSync(file, csv(300));
    const run = await runOperon(
      [
        "job",
        "run",
        "--model",
        "scorer",
        "--dataset",
        file,
        "--query",
        "SELECT id, b AS first, a AS second FROM source WHERE a <> 13",
        "--key",
        "id",
        "--map",
        "X=second,first",
        "--rows-per-request",
        "1",
        "--no-wait",
        ...signIn(),
      ],
      60_000,
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^uploaded .*local\.csv as dataset 'local-\S+' \(294 rows\)$/m);
    const id = run.stdout.trim();
    expect(run.stderr).toContain(`job ${id} queued`);
    const deadline = Date.now() + 90_000;
    let job = await admin.client.jobs.get.query({ id });
    while (job.state !== "DONE" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      job = await admin.client.jobs.get.query({ id });
    }
    expect(job).toMatchObject({ state: "DONE", totalRows: 294, doneRows: 294, failedRows: 0 });
    expect(job.mapping).toEqual([{ input: "X", kind: "tensor", columns: ["second", "first"] }]);
    expect(job.rowsPerRequest).toBe(1);
  }, 120_000);

  it("exits 2 naming the problem on a bad request, and starts nothing", async () => {
    const before = (await admin.client.jobs.list.query()).length;
    const missing = await runOperon(["job", "run", "--operator", "score_op", "--dataset", "nope", ...signIn()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/operon job run: no dataset named 'nope' \(and no such file\); yours: .*cli-rows/);
    const both = await runOperon([
      "job",
      "run",
      "--operator",
      "score_op",
      "--model",
      "scorer",
      "--dataset",
      "cli-rows",
      ...signIn(),
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give exactly one of --operator and --model");
    const wrongKind = await runOperon(["job", "run", "--operator", "scorer", "--dataset", "cli-rows", ...signIn()]);
    expect(wrongKind.code).toBe(2);
    expect(wrongKind.stderr).toMatch(/'scorer' is a model; use --model/);
    // scorer does not batch: one row a request is all it takes.
    const joined = await runOperon([
      "job",
      "run",
      "--model",
      "scorer",
      "--map",
      "X=a,b",
      "--rows-per-request",
      "2",
      "--dataset",
      "cli-rows",
      ...signIn(),
    ]);
    expect(joined.code).toBe(2);
    expect(joined.stderr).toContain(
      "operon job run: rows per request 2: model 'scorer' does not batch (max_batch_size 0); give 1",
    );
    const notANumber = await runOperon([
      "job",
      "run",
      "--model",
      "scorer",
      "--rows-per-request",
      "two",
      "--dataset",
      "cli-rows",
      ...signIn(),
    ]);
    expect(notANumber.code).not.toBe(0);
    expect(notANumber.stderr).toContain("'two' is not a whole number of rows >= 1");
    expect(await admin.client.jobs.list.query()).toHaveLength(before);
  }, 120_000);
});
