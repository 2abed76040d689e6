import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn } from "./support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, runOperon, type RunningOperon } from "./support/operon-process.js";
import { PG_ADMIN_URL, startTestCluster, type TestCluster } from "./support/test-cluster.js";

// Issue 23: one control plane and two gateways on one PostgreSQL, as the Kubernetes base runs them
// (`operon serve --role control-plane` and `--role gateway`), each a real process on its own ports,
// on a fresh database, sharing one model store folder (the volume). API keys, uploaded models and
// operators made in the console reach both gateways (LISTEN/NOTIFY, then a re-read); a gateway that
// loses the database keeps serving with what it has; a gateway killed under load leaves the other
// serving and the control plane's workers view without it.

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

async function infer(server: RunningOperon, key: string, model = "add_sub"): Promise<number> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: ADD_SUB_BODY,
  });
  await response.arrayBuffer();
  return response.status;
}

/** Milliseconds until every gateway answers `status` for this key (and model); fails after `withinMs`. */
async function untilAll(
  gateways: RunningOperon[],
  key: string,
  status: number | "refused",
  withinMs: number,
  model = "add_sub",
): Promise<number> {
  const started = performance.now();
  for (;;) {
    const statuses = await Promise.all(gateways.map((gateway) => infer(gateway, key, model)));
    const elapsed = performance.now() - started;
    if (statuses.every((s) => (status === "refused" ? s >= 400 : s === status))) return elapsed;
    if (elapsed > withinMs) throw new Error(`after ${Math.round(elapsed)} ms the gateways answer ${statuses}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe("--role: one control plane and two gateways on one PostgreSQL", () => {
  let cluster: TestCluster | undefined;
  let name = "";
  let controlPlane: RunningOperon;
  let gateways: RunningOperon[] = [];

  beforeAll(async () => {
    // On an empty database: the one cluster whose control plane's first start migrates PostgreSQL.
    cluster = await startTestCluster({ prefix: "operon_roles", migrated: false });
    ({ name, controlPlane, gateways } = cluster);
  }, 300_000);

  afterAll(async () => {
    if (cluster === undefined) return;
    cluster.gateways = gateways; // as the tests left them
    await cluster.stop();
  }, 60_000);

  it("refuses a cluster role without PostgreSQL, naming the flag", async () => {
    const result = await runOperon([
      "serve",
      "--role",
      "gateway",
      "--database-url",
      "memory:",
      "--model-repository",
      EXAMPLE_REPOSITORY,
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toMatch(/--role gateway needs PostgreSQL \(--database-url/);
  });

  it("a key created in the console works on both gateways within 1 s; revoked, both refuse it within 1 s", async () => {
    for (const gateway of gateways)
      expect(gateway.output()).toMatch(/API keys, models and operators follow the database/);
    const session = await signedIn(controlPlane);
    const created = await session.client.apiKeys.create.mutate({ name: "shared", scopes: ["infer"] });
    const works = await untilAll(gateways, created.key, 200, 1000);
    await session.client.apiKeys.revoke.mutate({ id: created.summary.id });
    const refused = await untilAll(gateways, created.key, 401, 1000);
    console.log(`key reached 2 gateways in ${works.toFixed(0)} ms; revocation in ${refused.toFixed(0)} ms`);
  }, 30_000);

  it("a gateway's model control needs an admin key, even on loopback before any was made", async () => {
    const response = await fetch(`${gateways[0]!.httpUrl}/v2/repository/models/add_sub/unload`, { method: "POST" });
    expect(response.status).toBe(401);
  });

  it("a model uploaded in the console serves from both gateways; deleted, from neither", async () => {
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "models", scopes: ["infer"] });
    const onnx = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));
    const begun = await session.client.models.upload.begin.mutate({
      name: "uploaded_adder",
      fileName: "model.onnx",
      sizeBytes: onnx.length,
      sha256: createHash("sha256").update(onnx).digest("hex"),
    });
    await session.client.models.upload.chunk.mutate({
      uploadId: begun.uploadId,
      offset: 0,
      data: onnx.toString("base64"),
    });
    const started = performance.now();
    await session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
    const serves = await untilAll(gateways, key, 200, 15_000, "uploaded_adder");
    console.log(
      `uploaded model served by 2 gateways ${(performance.now() - started).toFixed(0)} ms after upload.finish was called (${serves.toFixed(0)} ms of polling)`,
    );
    await session.client.models.delete.mutate({ name: "uploaded_adder" });
    // Unloaded (503 while the gateway still lists it as unavailable) or unknown (404): not served.
    await untilAll(gateways, key, "refused", 15_000, "uploaded_adder");
  }, 60_000);

  it("an operator registered once serves from both gateways; changed and deleted, on both", async () => {
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "operators", scopes: ["infer"] });
    const spec = (second: string) => ({
      inputs: [
        { name: "INPUT0", datatype: "FP32", dims: [16] },
        { name: "INPUT1", datatype: "FP32", dims: [16] },
      ],
      outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
      maxBatchSize: 8,
      steps: [
        {
          id: "first",
          kind: "model",
          model: "add_sub",
          inputs: { INPUT0: "INPUT0", INPUT1: "INPUT1" },
          outputs: { OUTPUT0: "sum" },
        },
        {
          id: second,
          kind: "model",
          model: "add_sub",
          inputs: { INPUT0: "sum", INPUT1: "INPUT1" },
          outputs: { OUTPUT0: "Y" },
        },
      ],
    });
    await session.client.operators.create.mutate({ name: "add_twice", spec: spec("second") });
    const registered = await untilAll(gateways, key, 200, 5000, "add_twice");
    console.log(`operator served by 2 gateways within ${registered.toFixed(0)} ms`);
    await session.client.operators.update.mutate({ name: "add_twice", spec: spec("again") });
    const stepsOf = async (gateway: RunningOperon) => {
      const response = await fetch(`${gateway.httpUrl}/v2/operators`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await response.json()) as {
        operators?: Array<{ name: string; spec: { steps: Array<{ id: string }> } }>;
      };
      return body.operators?.find((o) => o.name === "add_twice")?.spec.steps.map((step) => step.id);
    };
    for (const gateway of gateways) {
      const deadline = Date.now() + 5000;
      while ((await stepsOf(gateway))?.[1] !== "again") {
        if (Date.now() > deadline) throw new Error(`the gateway serves ${await stepsOf(gateway)}`);
        await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      }
    }
    await session.client.operators.delete.mutate({ name: "add_twice" });
    await untilAll(gateways, key, 404, 5000, "add_twice");
  }, 60_000);

  it("a gateway that loses the database keeps serving what it has, says so, and catches up", async () => {
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "kept", scopes: ["infer"] });
    await untilAll(gateways, key, 200, 1000);
    // The database goes away for this test's processes (the shared server stays up for everyone else).
    await admin(async (client) => {
      await client.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [name]);
    });
    try {
      for (const gateway of gateways) {
        await gateway.waitForOutput(
          /lost the database's change notifications: serving with the API keys, models/,
          10_000,
        );
        expect(await infer(gateway, key)).toBe(200);
        // Still ready (it serves), with the reason beside the status for whoever looks.
        const ready = await fetch(`${gateway.httpUrl}/v2/health/ready`);
        expect(ready.status).toBe(200);
        expect(ready.headers.get("operon-readiness-detail")).toMatch(
          /^shared state stale since \S+: not connected for change notifications/,
        );
      }
    } finally {
      await admin((client) => client.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`));
    }
    for (const gateway of gateways) {
      await gateway.waitForOutput(/change notifications from the database again/, 10_000);
      const deadline = Date.now() + 5000;
      while ((await fetch(`${gateway.httpUrl}/v2/health/ready`)).headers.has("operon-readiness-detail")) {
        if (Date.now() > deadline) throw new Error("the readiness detail stayed after the database came back");
        await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      }
    }
    // Changes flow again: a key revoked now is refused by both.
    const kept = (await session.client.apiKeys.list.query({})).find((k) => k.name === "kept")!;
    await session.client.apiKeys.revoke.mutate({ id: kept.id });
    await untilAll(gateways, key, 401, 1000);
  }, 60_000);

  it("killing one gateway under load leaves the other serving, and the workers view shows it gone", async () => {
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "load", scopes: ["infer"] });
    await untilAll(gateways, key, 200, 1000);
    const listed = async () => (await session.client.workers.list.query()).gateways.map((g) => g.httpPort);
    const ports = gateways.map((gateway) => Number(new URL(gateway.httpUrl).port));
    expect((await listed()).sort()).toEqual([...ports].sort());
    const [victim, survivor] = gateways as [RunningOperon, RunningOperon];
    // Load on both: 4 clients each, back to back, until told to stop.
    let running = true;
    const results = { survivor: { ok: 0, failed: 0 }, victim: { ok: 0, failed: 0 } };
    const client = async (gateway: RunningOperon, tally: { ok: number; failed: number }) => {
      while (running) {
        const status = await infer(gateway, key).catch(() => 0);
        if (status === 200) tally.ok += 1;
        else tally.failed += 1;
      }
    };
    const load = [
      ...Array.from({ length: 4 }, () => client(survivor, results.survivor)),
      ...Array.from({ length: 4 }, () => client(victim, results.victim)),
    ];
    await new Promise((resolveWait) => setTimeout(resolveWait, 1000));
    const beforeKill = results.survivor.ok;
    victim.process.kill("SIGKILL");
    await victim.exited;
    const killedAt = performance.now();
    let goneMs = Number.NaN;
    while (performance.now() - killedAt < 10_000) {
      if (!(await listed()).includes(ports[0]!)) {
        goneMs = performance.now() - killedAt;
        break;
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 1000));
    running = false;
    await Promise.all(load);
    console.log(
      `killed gateway gone from the workers view after ${goneMs.toFixed(0)} ms; survivor: ${results.survivor.ok} ok, ${results.survivor.failed} failed; victim: ${results.victim.ok} ok before the kill, ${results.victim.failed} failed after`,
    );
    expect(goneMs).toBeLessThan(10_000);
    expect(await listed()).toEqual([ports[1]]);
    expect(results.survivor.failed).toBe(0);
    expect(results.survivor.ok).toBeGreaterThan(beforeKill);
    gateways = [survivor];
  }, 60_000);
});
