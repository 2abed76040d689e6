import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn, TEST_ADMIN } from "./support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, runOperon, startOperon, type RunningOperon } from "./support/operon-process.js";

// Issue 23: one control plane and two gateways on one PostgreSQL, as the Kubernetes base runs them
// (`operon serve --role control-plane` and `--role gateway`), each a real process on its own ports,
// on a fresh database. API keys made in the console reach both gateways through the database
// (LISTEN/NOTIFY), and a gateway that loses the database keeps serving with the keys it has.

const PG_ADMIN_URL = process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

async function infer(server: RunningOperon, key: string): Promise<number> {
  const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: ADD_SUB_BODY,
  });
  await response.arrayBuffer();
  return response.status;
}

/** Milliseconds until every gateway answers `status` for this key; fails after `withinMs`. */
async function untilAll(gateways: RunningOperon[], key: string, status: number, withinMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const statuses = await Promise.all(gateways.map((gateway) => infer(gateway, key)));
    const elapsed = performance.now() - started;
    if (statuses.every((s) => s === status)) return elapsed;
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
  const name = `operon_roles_${randomBytes(5).toString("hex")}`;
  let url = "";
  let controlPlane: RunningOperon;
  let gateways: RunningOperon[] = [];
  const gatewayArgs = (): string[] => [
    "--role",
    "gateway",
    "--database-url",
    url,
    "--model-repository",
    EXAMPLE_REPOSITORY,
    "--model-control-mode",
    "explicit",
    "--load-model",
    "add_sub",
    "--require-api-key",
  ];

  beforeAll(async () => {
    await admin((client) => client.query(`CREATE DATABASE "${name}"`));
    const parsed = new URL(PG_ADMIN_URL);
    parsed.pathname = `/${name}`;
    url = parsed.toString();
    controlPlane = await startOperon(
      [
        "--role",
        "control-plane",
        "--control-plane",
        "--console=false",
        "--api-port",
        "0",
        "--database-url",
        url,
        "--model-repository",
        EXAMPLE_REPOSITORY,
        "--model-store",
        mkdtempSync(join(tmpdir(), "operon-roles-store-")),
        "--model-control-mode",
        "explicit",
        "--load-model",
        "add_sub",
        "--admin-email",
        TEST_ADMIN.email,
      ],
      { env: { OPERON_ADMIN_PASSWORD: TEST_ADMIN.password } },
    );
    gateways = await Promise.all([startOperon(gatewayArgs()), startOperon(gatewayArgs())]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...gateways, controlPlane].filter(Boolean).map((server) => server.stop()));
    await admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
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
    for (const gateway of gateways) expect(gateway.output()).toMatch(/API keys follow the database/);
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

  it("a gateway that loses the database keeps serving the keys it has, says so, and catches up", async () => {
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
          /lost the database's change notifications: serving with the keys read last/,
          10_000,
        );
        expect(await infer(gateway, key)).toBe(200);
      }
    } finally {
      await admin((client) => client.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`));
    }
    for (const gateway of gateways) await gateway.waitForOutput(/API keys follow the database again/, 10_000);
    // Changes flow again: a key revoked now is refused by both.
    const revoked = (await session.client.apiKeys.list.query({})).find((k) => k.name === "kept")!;
    await session.client.apiKeys.revoke.mutate({ id: revoked.id });
    await untilAll(gateways, key, 401, 1000);
  }, 60_000);
});
