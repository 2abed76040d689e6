import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedEmbeddedDatabase } from "@operon/db/testing/embedded-template";
import { afterAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Finding 3: when the last admin-scope key expired, the next key change (or a
// restart) dropped it and model control reopened to anonymous callers on
// loopback, silently. Finding 4: with model control open on loopback, an
// infer-scoped key unloaded a model; gateway-side changes were not audited.

const unload = (server: RunningOperon, key?: string): Promise<Response> =>
  fetch(`${server.httpUrl}/v2/repository/models/add_sub/unload`, {
    method: "POST",
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
const load = (server: RunningOperon, key?: string): Promise<Response> =>
  fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, {
    method: "POST",
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });

describe("model control stays locked once keys exist", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "operon-sec-mc-"));
  // A copy of the run's migrated embedded database, as startOperon gives a folder it makes itself (initdb took 7 to 50 s
  // on the loaded host); the restarts below reopen this folder.
  seedEmbeddedDatabase(join(dataDir, "db"), { migrated: true });
  let server: RunningOperon | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it("does not reopen when the last admin key expires, on the next key change or after a restart", async () => {
    server = await startControlPlaneServer([], { dataDir });
    await server.waitForOutput(/model control \(load\/unload\) is open to any local client without a key/, 10_000);
    const admin = await signedIn(server);
    await admin.client.apiKeys.create.mutate({
      name: "short-lived",
      scopes: ["admin", "infer"],
      expiresAt: new Date(Date.now() + 2_500),
    });
    expect((await unload(server)).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // A key change makes the control plane reload its keys, dropping the expired one.
    const { summary } = await admin.client.apiKeys.create.mutate({ name: "temp", scopes: ["infer"] });
    await admin.client.apiKeys.revoke.mutate({ id: summary.id });
    expect((await unload(server)).status).toBe(401);

    await server.stop();
    server = await startControlPlaneServer([], { dataDir });
    expect((await unload(server)).status).toBe(401);
    await server.waitForOutput(/model control \(load\/unload\) needs an admin-scoped API key/, 10_000);
  }, 120_000);

  it("reopens on loopback only with --anonymous-model-control, warning at start; a key sent is still checked for its scope", async () => {
    await server?.stop();
    server = await startControlPlaneServer(["--anonymous-model-control"], { dataDir });
    await server.waitForOutput(
      /model control \(load\/unload\) is open to any local client without a key because of --anonymous-model-control/,
      10_000,
    );
    const admin = await signedIn(server);
    const { key: inferKey } = await admin.client.apiKeys.create.mutate({ name: "client", scopes: ["infer"] });
    const refused = await unload(server, inferKey);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/lacks the 'admin' scope/);
    expect((await load(server)).status).toBe(200);
  }, 120_000);

  it("writes gateway-side load and unload to the audit log with the key and its owner", async () => {
    const admin = await signedIn(server!);
    const { key, summary } = await admin.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin"] });
    expect((await unload(server!, key)).status).toBe(200);
    expect((await load(server!, key)).status).toBe(200);
    expect((await unload(server!)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { events } = await admin.client.audit.list.query({ action: "gateway.model", limit: 10 });
    const byKey = events.filter((event) => event.apiKeyId === summary.id).map((event) => event.action);
    expect(byKey).toEqual(expect.arrayContaining(["gateway.model.unload", "gateway.model.load"]));
    const anonymous = events.find((event) => event.action === "gateway.model.unload" && event.apiKeyId === null);
    expect(anonymous?.targetId).toBe("add_sub");
  }, 60_000);
});
