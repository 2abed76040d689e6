import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { seedEmbeddedDatabase } from "@operon/db/testing/embedded-template";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, apiSession } from "./support/api-client.js";
import { EXAMPLE_REPOSITORY, runOperon, startOperon, type RunningOperon } from "./support/operon-process.js";

// The control plane as a user runs it: `operon migrate`, `operon admin create`,
// `operon keys create`, and `operon serve` with the database, the API and
// gateway API keys (console off: the browser tests cover it).

const ADMIN = { email: "admin@example.com", password: "s3cret-admin-pass" };
const PG_ADMIN_URL = process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

function infer(server: RunningOperon, key?: string): Promise<Response> {
  return fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: ADD_SUB_BODY,
  });
}

function loadModel(server: RunningOperon, key?: string): Promise<Response> {
  return fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, {
    method: "POST",
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
}

function controlPlaneArgs(): string[] {
  return [
    "--control-plane",
    "--console=false",
    "--api-port",
    "0",
    "--model-repository",
    EXAMPLE_REPOSITORY,
    "--model-control-mode",
    "explicit",
    "--load-model",
    "add_sub",
  ];
}

describe("operon migrate, admin create and keys create", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "operon-cp-cli-"));

  it("migrates a fresh embedded database once, then reports it up to date", async () => {
    const first = await runOperon(["migrate", "--data-dir", dataDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/applied \d+ migration\(s\) to the embedded database in .*_init/);
    const second = await runOperon(["migrate", "--data-dir", dataDir]);
    expect(second.stdout).toMatch(/is up to date/);
  });

  it("migrates a PostgreSQL database named by --database-url", async () => {
    const name = `operon_cli_${randomBytes(5).toString("hex")}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    try {
      const url = new URL(PG_ADMIN_URL);
      url.pathname = `/${name}`;
      const result = await runOperon(["migrate", "--database-url", url.toString()]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/applied \d+ migration\(s\) to the PostgreSQL/);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    }
  });

  it("says what is wrong with a database URL it cannot use", async () => {
    const result = await runOperon(["migrate", "--database-url", "mysql://nope"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unsupported database URL/);
  });

  it("creates an admin from flags and refuses duplicates and missing passwords", async () => {
    const missing = await runOperon(["admin", "create", "--email", "x@example.com", "--data-dir", dataDir]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--password .* required/);
    const weak = await runOperon([
      "admin",
      "create",
      "--email",
      "x@example.com",
      "--password",
      "short",
      "--data-dir",
      dataDir,
    ]);
    expect(weak.code).toBe(1);
    expect(weak.stderr).toMatch(/at least 10 characters/);
    const created = await runOperon([
      "admin",
      "create",
      "--email",
      ADMIN.email,
      "--password",
      ADMIN.password,
      "--data-dir",
      dataDir,
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/created admin admin@example.com/);
    const again = await runOperon([
      "admin",
      "create",
      "--email",
      ADMIN.email,
      "--password",
      ADMIN.password,
      "--data-dir",
      dataDir,
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
  });

  it("issues a key for an existing account only", async () => {
    const unknown = await runOperon([
      "keys",
      "create",
      "--owner",
      "ghost@example.com",
      "--name",
      "x",
      "--data-dir",
      dataDir,
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no account with email ghost@example.com/);
    const created = await runOperon([
      "keys",
      "create",
      "--owner",
      ADMIN.email,
      "--name",
      "ci",
      "--scopes",
      "infer",
      "--data-dir",
      dataDir,
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toMatch(/^opk_[a-z2-7]{8}_\S+$/);
  });
});

describe("operon serve with the control plane", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "operon-cp-serve-"));
  let server: RunningOperon;

  beforeAll(async () => {
    server = await startOperon(
      [...controlPlaneArgs(), "--admin-email", ADMIN.email, "--admin-password", ADMIN.password],
      { dataDir },
    );
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("starts on the embedded database, migrated, with the first admin from the flags", async () => {
    expect(server.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await server.waitForOutput(/model control \(load\/unload\) is open to any local client without a key/, 10_000);
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    const signedIn = await session.client.auth.signIn.mutate(ADMIN);
    expect(signedIn.user.role).toBe("ADMIN");
    expect((await session.client.auth.session.query()).user?.email).toBe(ADMIN.email);
  });

  it("keeps other processes out of its embedded database, saying why", async () => {
    const result = await runOperon([
      "admin",
      "create",
      "--email",
      "second@example.com",
      "--password",
      ADMIN.password,
      "--data-dir",
      dataDir,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`in use by process ${server.pid}`));
    // keys create says where a key comes from while the server runs: the console's API keys page.
    const keys = await runOperon([
      "keys",
      "create",
      "--owner",
      ADMIN.email,
      "--name",
      "ops",
      "--scopes",
      "admin,infer",
      "--data-dir",
      dataDir,
    ]);
    expect(keys.code).toBe(1);
    expect(keys.stderr).toMatch(new RegExp(`in use by process ${server.pid}`));
    expect(keys.stderr).toContain("create the key in its console instead: API keys → Create a key");
  });

  it("keeps the session cookie httpOnly and refuses mutations without the CSRF token", async () => {
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    const response = await fetch(`${server.apiUrl}/api/trpc/auth.signIn`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        cookie: `operon_csrf=${session.cookies.get("operon_csrf")}`,
        "x-csrf-token": session.cookies.get("operon_csrf")!,
      },
      body: JSON.stringify(ADMIN),
    });
    expect(response.status).toBe(200);
    const setCookie = response.headers.getSetCookie().find((line) => line.startsWith("operon_session="))!;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    session.sendCsrf = false;
    const refused = await apiErrorOf(session.client.auth.signIn.mutate(ADMIN));
    expect(refused.appCode).toBe("CSRF_FAILED");
    expect(refused.httpStatus).toBe(403);
  });

  it("turns API keys made in the API into gateway access at once, and revocation too", async () => {
    const admin = apiSession(server.apiUrl!);
    await admin.client.auth.session.query();
    await admin.client.auth.signIn.mutate(ADMIN);

    // No admin key configured and loopback only: model control is open, as in Triton.
    expect((await loadModel(server)).status).toBe(200);
    expect((await infer(server)).status).toBe(200);

    const { key: inferKey, summary } = await admin.client.apiKeys.create.mutate({ name: "client", scopes: ["infer"] });
    expect((await infer(server, inferKey)).status).toBe(200);
    const garbage = await infer(server, "opk_aaaaaaaa_" + "x".repeat(32));
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get("www-authenticate")).toMatch(/Bearer/);

    // The first admin-scoped key closes model control to callers without one.
    const { key: adminKey } = await admin.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin", "infer"] });
    expect((await loadModel(server)).status).toBe(401);
    expect((await loadModel(server, inferKey)).status).toBe(403);
    expect((await loadModel(server, adminKey)).status).toBe(200);

    await admin.client.apiKeys.revoke.mutate({ id: summary.id });
    const revoked = await infer(server, inferKey);
    expect(revoked.status).toBe(401);
    expect(await revoked.text()).toMatch(/not valid/);

    const { events } = await admin.client.audit.list.query({ limit: 100 });
    const actions = events.map((event) => event.action);
    expect(actions).toEqual(expect.arrayContaining(["auth.signIn", "apiKey.create", "apiKey.revoke"]));
  });

  it("rate-limits failed sign-ins and says when to retry", async () => {
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(
        (
          await apiErrorOf(
            session.client.auth.signIn.mutate({ email: "victim@example.com", password: "wrong-password" }),
          )
        ).appCode,
      ).toBe("UNAUTHENTICATED");
    }
    const limited = await apiErrorOf(
      session.client.auth.signIn.mutate({ email: "victim@example.com", password: "wrong-password" }),
    );
    expect(limited.appCode).toBe("RATE_LIMITED");
    expect(limited.httpStatus).toBe(429);
    expect(limited.message).toMatch(/try again in \d+ s/);
  });

  it("counts sign-in failures by the caller's own address: an X-Forwarded-For sent straight to the API is not believed", async () => {
    const url = `${server.apiUrl!}/api/trpc`;
    const first = await fetch(`${url}/auth.session`);
    const csrf = /operon_csrf=([^;]+)/.exec(first.headers.getSetCookie().join("; "))![1]!;
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt++) {
      const response = await fetch(`${url}/auth.signIn`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          cookie: `operon_csrf=${csrf}`,
          "x-csrf-token": csrf,
          "x-forwarded-for": `203.0.113.${attempt}`,
          "x-operon-proxy-token": "a guess",
        },
        body: JSON.stringify({ email: "target@example.com", password: "wrong-password" }),
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it("keeps accounts and keys across a restart on the same data directory", async () => {
    await server.stop();
    server = await startOperon(controlPlaneArgs(), { dataDir });
    // The admin key made before the restart still protects model control.
    expect((await loadModel(server)).status).toBe(401);
    await server.waitForOutput(/model control \(load\/unload\) needs an admin-scoped API key/, 10_000);
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    expect((await session.client.auth.signIn.mutate(ADMIN)).user.email).toBe(ADMIN.email);
    expect(server.output()).not.toMatch(/First run/);
  }, 120_000);
});

describe("operon serve --require-api-key", () => {
  it("refuses inference without a key and serves it with one made by operon keys create", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "operon-cp-require-"));
    // A copy of the run's migrated embedded database, as startOperon gives every test: this test is not about a first
    // start (the "operon serve with the control plane" tests are), and initdb took 7 to 50 s on the loaded host.
    seedEmbeddedDatabase(join(dataDir, "db"), { migrated: true });
    expect(
      (
        await runOperon([
          "admin",
          "create",
          "--email",
          ADMIN.email,
          "--password",
          ADMIN.password,
          "--data-dir",
          dataDir,
        ])
      ).code,
    ).toBe(0);
    const key = (
      await runOperon(["keys", "create", "--owner", ADMIN.email, "--name", "batch", "--data-dir", dataDir])
    ).stdout.trim();
    const server = await startOperon([...controlPlaneArgs(), "--require-api-key"], { dataDir });
    try {
      const anonymous = await infer(server);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.text()).toMatch(/needs an API key/);
      expect((await infer(server, key)).status).toBe(200);
      expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 120_000);
});

describe("model control beyond loopback", () => {
  it("refuses to start when model control would be open to the network", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "operon-cp-exposed-"));
    // A copy of the run's migrated embedded database, as startOperon gives every test: this test is not about a first
    // start (the "operon serve with the control plane" tests are), and initdb took 7 to 50 s on the loaded host.
    seedEmbeddedDatabase(join(dataDir, "db"), { migrated: true });
    const result = await runOperon([
      "serve",
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--http-address",
      "0.0.0.0",
      "--http-port",
      "0",
      "--grpc-port",
      "0",
      "--metrics-port",
      "0",
      "--api-port",
      "0",
      "--console=false",
      "--data-dir",
      dataDir,
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toMatch(/refusing to expose model control/);
    // Longer than runOperon's own 60 s: on a loaded machine its timer, which kills the server, must fire before the
    // test is abandoned (an abandoned run left a server listening on 0.0.0.0 behind it once).
  }, 90_000);
});
