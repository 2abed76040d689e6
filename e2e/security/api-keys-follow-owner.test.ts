import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Finding 2: demoting a user or resetting their password left their
// admin-scope API keys working at the gateway (the key ring was not reloaded).
// Keys now follow their owner's current role and state at once.

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

describe("API keys follow their owner's role and state", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const load = (key: string): Promise<Response> =>
    fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
  const infer = (key: string): Promise<Response> =>
    fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: ADD_SUB_BODY,
    });

  it("a demoted admin's admin-scope key loses model control at once, and keeps only what the new role allows", async () => {
    const admin = await signedIn(server);
    const ops = { email: "ops@example.com", password: "operations-passphrase-1" };
    const created = await admin.client.users.create.mutate({ ...ops, role: "ADMIN" });
    const opsSession = await signedIn(server, ops);
    const { key } = await opsSession.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin", "infer"] });
    expect((await load(key)).status).toBe(200);

    await admin.client.users.setRole.mutate({ id: created.id, role: "ENGINEER" });
    const refused = await load(key);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/admin/);
    expect((await infer(key)).status).toBe(200);

    await admin.client.users.setRole.mutate({ id: created.id, role: "VIEWER" });
    expect((await infer(key)).status).toBe(401);

    await admin.client.users.setRole.mutate({ id: created.id, role: "ADMIN" });
    expect((await load(key)).status).toBe(200);
  });

  it("resetting a user's password revokes their keys", async () => {
    const admin = await signedIn(server);
    const user = { email: "eng@example.com", password: "a fine engineer passphrase" };
    const created = await admin.client.users.create.mutate({ ...user, role: "ADMIN" });
    const session = await signedIn(server, user);
    const { key } = await session.client.apiKeys.create.mutate({ name: "ci", scopes: ["admin", "infer"] });
    expect((await infer(key)).status).toBe(200);
    await admin.client.users.resetPassword.mutate({ id: created.id, password: "a-new-password-2" });
    expect((await infer(key)).status).toBe(401);
    expect((await load(key)).status).toBe(401);
    const keys = await admin.client.apiKeys.list.query({ all: true, includeRevoked: true });
    expect(keys.find((k) => k.ownerEmail === user.email)?.revokedAt).not.toBeNull();
  });
});
