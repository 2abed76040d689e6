import { mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { signedIn } from "./support/control-plane-server.js";
import type { RunningOperon } from "./support/operon-process.js";
import { parquetRows } from "./support/parquet-rows.js";
import { sql, startTestCluster, type TestCluster } from "./support/test-cluster.js";

/**
 * Issue 24, beyond one host: one control plane and two gateways (`--role
 * gateway`) on one PostgreSQL. A job's rows go to both gateways (its key
 * reaches them through the database, as a hash), each gateway's share is
 * recorded and shown by jobs.get, and every row has exactly one result;
 * with one gateway killed (SIGKILL) mid-job, the job still finishes on the
 * other with exactly one result per row.
 */

// Y = 2·x0 + x1, 15 ms a request (a timer), two instances: one gateway serves about 130 rows/s, so a
// job of 2,400 rows runs for seconds, long enough to kill a gateway in the middle of it.
const SLOW_MODEL = `export default class {
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 15));
    return requests.map((request) => {
      const x = request.input("X").toFloat32Array();
      return { outputs: [ctx.tensor.float32("Y", [1], [2 * x[0] + x[1]])] };
    });
  }
}`;
const SLOW_CONFIG = `name: "slow_scorer"
backend: "typescript"
max_batch_size: 0
input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 2 } ]`;

const ROWS = 2400;
const csv = (rows: number): string =>
  `${["id,a,b", ...Array.from({ length: rows }, (_, i) => `k${i},${i % 50},${i % 7}`)].join("\n")}\n`;

type Job = Awaited<ReturnType<ApiSession["client"]["jobs"]["get"]["query"]>>;

describe("a batch job over two gateways (one control plane, two --role gateway, one PostgreSQL)", () => {
  let cluster: TestCluster | undefined;
  let controlPlane: RunningOperon;
  let gateways: RunningOperon[] = [];
  let admin: ApiSession;
  let datasetId = "";
  const hostOf = (gateway: RunningOperon): string => `${hostname()}:${new URL(gateway.httpUrl).port}`;

  beforeAll(async () => {
    cluster = await startTestCluster({
      prefix: "operon_batch_cluster",
      // Short windows, chunks and lane refreshes: the test watches a job of seconds.
      controlPlaneArgs: ["--batch-window-ms", "250", "--batch-budget-ms", "2000"],
      prepareStore: (store) => {
        mkdirSync(join(store, "slow_scorer", "1"), { recursive: true });
        writeFileSync(join(store, "slow_scorer", "config.pbtxt"), SLOW_CONFIG);
        writeFileSync(join(store, "slow_scorer", "1", "model.js"), SLOW_MODEL);
      },
    });
    ({ controlPlane, gateways } = cluster);
    admin = await signedIn(controlPlane);
    const dataset = await admin.client.datasets.create.mutate({
      name: "vectors",
      file: { kind: "upload", fileName: "vectors.csv", contentBase64: Buffer.from(csv(ROWS)).toString("base64") },
      keyColumns: ["id"],
    });
    datasetId = dataset.id;
  }, 300_000);

  afterAll(async () => {
    if (cluster === undefined) return;
    cluster.gateways = gateways;
    await cluster.stop();
  }, 60_000);

  async function startJob(): Promise<string> {
    const job = await admin.client.jobs.create.mutate({
      datasetId,
      target: { kind: "MODEL", name: "slow_scorer" },
      mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    });
    return job.id;
  }

  async function waitFor(id: string, done: (job: Job) => boolean, timeoutMs = 120_000): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await admin.client.jobs.get.query({ id });
      if (done(job)) return job;
      if (Date.now() > deadline)
        throw new Error(
          `job ${id} stuck: ${JSON.stringify(job)}\ncontrol plane:\n${controlPlane.output().slice(-4000)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The result file's rows: exactly one per row of the dataset, each with the model's answer for it. */
  async function expectOneResultPerRow(id: string): Promise<void> {
    const cookie = [...admin.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(`${controlPlane.apiUrl}/api/jobs/${id}/result.parquet`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const file = join(controlPlane.dataDir, `result-${id}.parquet`);
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const rows = await parquetRows(file);
    expect(rows).toHaveLength(ROWS);
    rows.forEach((row, i) => {
      expect(Number(row["_row"])).toBe(i);
      expect(row["id"]).toBe(`k${i}`);
      expect(row["Y"]).toBe(2 * (i % 50) + (i % 7));
    });
  }

  it("spreads the rows over both gateways, records each one's share, and keeps one result per row", async () => {
    const id = await startJob();
    // While it runs, jobs.get names both gateways with a concurrency of their own.
    const running = await waitFor(
      id,
      (job) => job.state === "RUNNING" && job.gateways.filter((gateway) => gateway.concurrency !== null).length === 2,
    );
    expect(running.gateways.map((gateway) => gateway.gateway).sort()).toEqual(gateways.map(hostOf).sort());
    const done = await waitFor(id, (job) => job.state === "DONE" || job.state === "FAILED");
    expect(done).toMatchObject({ state: "DONE", doneRows: ROWS, failedRows: 0 });
    const served = Object.fromEntries(done.gateways.map((gateway) => [gateway.gateway, gateway.rows]));
    for (const gateway of gateways) expect(served[hostOf(gateway)]).toBeGreaterThan(ROWS / 10);
    expect(Object.values(served).reduce((sum, rows) => sum + rows, 0)).toBe(ROWS);
    expect(served["control-plane"]).toBeUndefined();
    await expectOneResultPerRow(id);
    // The job's key hash is cleared once it stops running: the gateways no longer accept its key.
    const keys = await sql<{ keyHash: string | null }>(cluster!.url, `SELECT "keyHash" FROM "BatchJob" WHERE id = $1`, [
      id,
    ]);
    expect(keys[0]!.keyHash).toBeNull();
  }, 180_000);

  it("finishes on the other gateway with exactly one result per row when one is killed mid-job", async () => {
    const id = await startJob();
    const [victim, survivor] = gateways as [RunningOperon, RunningOperon];
    // Both gateways hold requests of the job, and some rows are checkpointed, before the kill.
    await waitFor(
      id,
      (job) =>
        job.state === "RUNNING" &&
        job.doneRows >= 256 &&
        job.doneRows < ROWS / 2 &&
        job.gateways.filter((gateway) => (gateway.concurrency ?? 0) > 0).length === 2,
    );
    victim.process.kill("SIGKILL");
    await victim.exited;
    gateways = [survivor];
    const done = await waitFor(id, (job) => job.state === "DONE" || job.state === "FAILED");
    expect(done).toMatchObject({ state: "DONE", doneRows: ROWS, failedRows: 0 });
    const served = Object.fromEntries(done.gateways.map((gateway) => [gateway.gateway, gateway.rows]));
    expect(Object.values(served).reduce((sum, rows) => sum + rows, 0)).toBe(ROWS);
    expect(served[hostOf(survivor)]).toBeGreaterThan(ROWS / 2);
    expect(controlPlane.output()).toMatch(/a gateway (is away|left the cluster)/);
    await expectOneResultPerRow(id);
  }, 180_000);
});
