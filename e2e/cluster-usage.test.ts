import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn } from "./support/control-plane-server.js";
import type { RunningOperon } from "./support/operon-process.js";
import { sql, startTestCluster, type TestCluster } from "./support/test-cluster.js";

// Issue 23: usage, costs and tenant usage per gateway host, and summed. One control plane and two gateways on one
// PostgreSQL; the gateways require API keys, so the control plane reads them only with its internal key,
// which it stores (hash only) at start and every gateway reads from the database. Traffic sent to each
// gateway shows in the usage rows per gateway and summed in the usage and cost API; a gateway killed
// leaves the other sampled; the internal key revoked by hand is refused by the gateways, and the control
// plane says so in its log.

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

async function status(server: RunningOperon, key: string): Promise<number> {
  const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: ADD_SUB_BODY,
  });
  await response.arrayBuffer();
  return response.status;
}

async function infer(server: RunningOperon, key: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) expect(await status(server, key)).toBe(200);
}

const sleep = (ms: number): Promise<void> => new Promise((resolveWait) => setTimeout(resolveWait, ms));

/** Polls `read` until `done` holds; fails naming the last value after `withinMs`. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${withinMs} ms`);
    await sleep(200);
  }
}

describe("usage per gateway host: one control plane and two gateways on one PostgreSQL", () => {
  let cluster: TestCluster | undefined;
  let url = "";
  let controlPlane: RunningOperon;
  let gateways: RunningOperon[] = [];
  const hostOf = (gateway: RunningOperon): string => `${hostname()}:${new URL(gateway.httpUrl).port}`;

  /** Σ requests of add_sub's rows per gatewayHost ('own' for the control plane's gateway). */
  const requestsByGateway = async (): Promise<Record<string, number>> => {
    const rows = await sql<{ gateway: string; requests: string }>(
      url,
      `SELECT coalesce(s."gatewayHost", 'own') AS gateway, sum(s."requests")::text AS requests
       FROM "UsageSample" s JOIN "Model" m ON m."id" = s."modelId" WHERE m."name" = 'add_sub' GROUP BY 1`,
    );
    return Object.fromEntries(rows.map((row) => [row.gateway, Number(row.requests)]));
  };

  beforeAll(async () => {
    cluster = await startTestCluster({ prefix: "operon_usage", controlPlaneArgs: ["--usage-sample-secs", "1"] });
    ({ url, controlPlane, gateways } = cluster);
  }, 300_000);

  afterAll(async () => {
    if (cluster === undefined) return;
    cluster.gateways = gateways; // as the tests left them
    await cluster.stop();
  }, 60_000);

  it("stores the control plane's internal key as a hash only, outside every user's keys", async () => {
    const rows = await sql<{ keyHash: string; prefix: string; revokedAt: Date | null }>(
      url,
      `SELECT "keyHash", "prefix", "revokedAt" FROM "ControlPlaneKey"`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.revokedAt).toBeNull();
    expect(controlPlane.output()).not.toMatch(new RegExp(`opk_${rows[0]!.prefix}_`));
    // An admin's view of the keys: the internal key is not among them, so no user can see or revoke it.
    const session = await signedIn(controlPlane);
    const listed = await session.client.apiKeys.list.query({ all: true, includeRevoked: true });
    expect(listed.map((key) => key.prefix)).not.toContain(rows[0]!.prefix);
    // What the database holds is not a key: sent as one, a gateway refuses it (its admin endpoint too).
    for (const gateway of gateways) {
      const response = await fetch(`${gateway.httpUrl}/v2/operon/workers`, {
        headers: { authorization: `Bearer ${rows[0]!.keyHash}` },
      });
      await response.arrayBuffer();
      expect(response.status).toBe(401);
    }
  });

  it("samples each gateway with the internal key and sums them in the usage and cost API", async () => {
    const session = await signedIn(controlPlane);
    // Traffic shares on (a tenant group exists): every grant then names its tenant, and the gateways count per tenant.
    await session.client.tenants.create.mutate({ name: "others", share: 1 });
    const { key } = await session.client.apiKeys.create.mutate({ name: "traffic", scopes: ["infer"] });
    // Both gateways are sampled (with the internal key: they require keys) before the traffic is sent.
    // add_sub has no traffic yet: its rows (zero requests) still name each gateway once its baseline was taken.
    await until(
      () => sql<{ n: string }>(url, `SELECT count(DISTINCT "gatewayHost")::text AS n FROM "UsageSample"`),
      (rows) => Number(rows[0]!.n) >= 2,
      30_000,
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; control plane log:\n${controlPlane.output().slice(-3000)}`);
    });
    const startedAt = new Date();
    // The new key reaches both gateways within a second; the first request that passes counts.
    await until(
      () => status(gateways[0]!, key),
      (code) => code === 200,
      2000,
    );
    await until(
      () => status(gateways[1]!, key),
      (code) => code === 200,
      2000,
    );
    await infer(gateways[0]!, key, 4);
    await infer(gateways[1]!, key, 6);
    const [a, b] = [hostOf(gateways[0]!), hostOf(gateways[1]!)];
    const byGateway = await until(requestsByGateway, (value) => value[a] === 5 && value[b] === 7, 15_000);
    expect(byGateway.own ?? 0).toBe(0);

    // CPU and memory of a gateway's workers come from its admin-only workers endpoint: the internal key works there.
    const workerRows = await sql<{ instances: number }>(
      url,
      `SELECT max("instanceCount") AS instances FROM "UsageSample" WHERE "gatewayHost" = $1`,
      [b],
    );
    expect(workerRows[0]!.instances).toBeGreaterThan(0);

    const range = { from: new Date(startedAt.getTime() - 120_000), to: new Date(Date.now() + 60_000) };
    const series = await session.client.metrics.timeSeries.query({ ...range, model: "add_sub", bucketSecs: 600 });
    const total = series.overall.reduce((sum, point) => sum + point.requests, 0);
    expect(total).toBe(12);
    const costs = await session.client.metrics.costs.query(range);
    const addSub = [...costs.models, ...costs.unprofiled].find((entry) => entry.model === "add_sub");
    expect(addSub?.inferences).toBe(12);

    // Tenants too: the key's tenant (its owner, `user:<id>`) per gateway, each read with its own previous reading,
    // and summed in the tenants' usage.
    const tenantRequests = (): Promise<Record<string, number>> =>
      sql<{ gateway: string; requests: string }>(
        url,
        `SELECT coalesce("gatewayHost", 'own') AS gateway, sum("requests")::text AS requests
         FROM "TenantUsageSample" WHERE "tenant" LIKE 'user:%' GROUP BY 1`,
      ).then((rows) => Object.fromEntries(rows.map((row) => [row.gateway, Number(row.requests)])));
    const byTenantGateway = await until(tenantRequests, (value) => value[a] === 5 && value[b] === 7, 15_000);
    expect(byTenantGateway.own ?? 0).toBe(0);
    const tenantUsage = await session.client.tenants.usage.query(range);
    const summed = tenantUsage.points
      .flatMap((point) => Object.entries(point.tenants))
      .filter(([tenant]) => tenant.startsWith("user:"))
      .reduce((sum, [, entry]) => sum + entry.requests, 0);
    expect(summed).toBe(12);
  }, 90_000);

  it("keeps sampling the other gateway when one is killed", async () => {
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "after-kill", scopes: ["infer"] });
    const [victim, survivor] = gateways as [RunningOperon, RunningOperon];
    await until(
      () => status(survivor, key),
      (code) => code === 200,
      2000,
    );
    // Past the sample that counted that request: `before` then holds it.
    await sleep(2500);
    const before = await requestsByGateway();
    victim.process.kill("SIGKILL");
    await victim.exited;
    gateways = [survivor];
    await infer(survivor, key, 6);
    const after = await until(
      requestsByGateway,
      (value) => value[hostOf(survivor)] === before[hostOf(survivor)]! + 6,
      15_000,
    );
    expect(after[hostOf(victim)]).toBe(before[hostOf(victim)]);
  }, 60_000);

  it("the internal key revoked by hand is refused by the gateway, and the control plane logs it", async () => {
    await sql(url, `UPDATE "ControlPlaneKey" SET "revokedAt" = now() WHERE "revokedAt" IS NULL`);
    await sql(url, `SELECT pg_notify('operon_changes', 'api-keys')`);
    await controlPlane.waitForOutput(/refused the control plane's internal key: it was revoked/, 15_000);
  }, 30_000);
});
