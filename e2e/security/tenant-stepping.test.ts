import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf } from "../support/api-client.js";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Issue 28, item 13: a REFUSE tenant's member minted a fresh key outside any group, or sent no key
// at all, and got full service; a share of 1e-300 starved the other tenants after it stopped.

const MEMBER = { email: "member@example.com", password: "a member's passphrase" };

async function shareMetric(server: RunningOperon, tenant: string): Promise<number | undefined> {
  const text = await (await fetch(server.metricsUrl)).text();
  const line = text.split("\n").find((row) => row.startsWith(`operon_tenant_share{tenant="${tenant}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 100 && !done(value); i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

describe("tenant shares cannot be stepped around", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("a member's new key belongs to the member's tenant; an admin can still move it", async () => {
    const admin = await signedIn(server);
    await admin.client.users.create.mutate({ ...MEMBER, role: "ENGINEER" });
    const member = await signedIn(server, MEMBER);
    const first = await member.client.apiKeys.create.mutate({ name: "first", scopes: ["infer"] });
    const tight = await admin.client.tenants.create.mutate({ name: "tight", share: 0.5, policy: "REFUSE" });
    await admin.client.tenants.assignKey.mutate({ keyId: first.summary.id, tenantId: tight.id });
    // The member revokes the grouped key and mints a fresh one: it lands in the same tenant.
    await member.client.apiKeys.revoke.mutate({ id: first.summary.id });
    const fresh = await member.client.apiKeys.create.mutate({ name: "fresh", scopes: ["infer"] });
    const tenants = await admin.client.tenants.list.query();
    expect(tenants.find((tenant) => tenant.id === tight.id)!.keys.map((key) => key.id)).toContain(fresh.summary.id);
    expect(
      tenants.some((tenant) => tenant.kind === "owner" && tenant.keys.some((key) => key.id === fresh.summary.id)),
    ).toBe(false);
    // What an admin decides stands.
    await admin.client.tenants.assignKey.mutate({ keyId: fresh.summary.id, tenantId: null });
    const moved = await admin.client.tenants.list.query();
    expect(moved.find((tenant) => tenant.id === tight.id)!.keys.map((key) => key.id)).not.toContain(fresh.summary.id);
  });

  it("requests without a key count as the least-favoured tenant while tenants exist", async () => {
    // The gateway knows the tenants its key grants name: put the member's live key back in 'tight' (0.5, REFUSE).
    const admin = await signedIn(server);
    const tenants = await admin.client.tenants.list.query();
    const tight = tenants.find((tenant) => tenant.name === "tight")!;
    const fresh = tenants.flatMap((tenant) => tenant.keys).find((key) => key.name === "fresh")!;
    await admin.client.tenants.assignKey.mutate({ keyId: fresh.id, tenantId: tight.id });
    // Anonymous traffic gets the least-favoured tenant's share and policy, not share 1.
    expect(
      await until(
        () => shareMetric(server, "anonymous"),
        (share) => share === 0.5,
      ),
    ).toBe(0.5);
    await admin.client.tenants.update.mutate({ id: tight.id, share: 3 });
    expect(
      await until(
        () => shareMetric(server, "anonymous"),
        (share) => share === 1,
      ),
    ).toBe(1);
  });

  it("refuses shares outside 0.001 to 1000, naming the range", async () => {
    const admin = await signedIn(server);
    for (const share of [1e-300, 0, 1001, -1]) {
      const error = await apiErrorOf(admin.client.tenants.create.mutate({ name: `bad-${share}`, share }));
      expect(error.appCode).toBe("VALIDATION_FAILED");
      expect(error.message).toMatch(share > 1000 ? /at most 1000/ : /at least 0.001/);
    }
    const tight = (await admin.client.tenants.list.query()).find((tenant) => tenant.name === "tight")!;
    expect((await apiErrorOf(admin.client.tenants.update.mutate({ id: tight.id, share: 1e-300 }))).message).toMatch(
      /at least 0.001/,
    );
  });
});
