import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { hashApiKey } from "@operon/protocol/api-keys";
import { createInProcessContext } from "../context.js";
import { createCaller } from "../root.js";
import {
  appCodeOf,
  createControlPlaneHarness,
  TEST_PASSWORD,
  type ControlPlaneHarness,
} from "../testing/control-plane-harness.js";

describe.each(testDatabaseBackends({ migrated: true }))("accounts, API keys and audit on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("reports who is signed in", async () => {
    expect((await h.as(null).auth.session()).user).toBeNull();
    expect((await h.as("ENGINEER").auth.session()).user?.email).toBe("engineer@example.com");
  });

  it("lets only admins manage users", async () => {
    expect(await appCodeOf(h.as(null).users.list())).toBe("UNAUTHENTICATED");
    expect(await appCodeOf(h.as("VIEWER").users.list())).toBe("FORBIDDEN");
    expect(
      await appCodeOf(
        h.as("ENGINEER").users.create({ email: "x@example.com", role: "VIEWER", password: TEST_PASSWORD }),
      ),
    ).toBe("FORBIDDEN");
    const created = await h
      .as("ADMIN")
      .users.create({ email: "New@Example.com", name: "New", role: "VIEWER", password: TEST_PASSWORD });
    expect(created.email).toBe("new@example.com");
    expect(created).not.toHaveProperty("passwordHash");
    const promoted = await h.as("ADMIN").users.setRole({ id: created.id, role: "ENGINEER" });
    expect(promoted.role).toBe("ENGINEER");
  });

  it("rejects bad account input with the field named", async () => {
    const admin = h.as("ADMIN");
    await expect(
      admin.users.create({ email: "not-an-email", role: "VIEWER", password: TEST_PASSWORD }),
    ).rejects.toThrow(/email/);
    await expect(admin.users.create({ email: "short@example.com", role: "VIEWER", password: "short" })).rejects.toThrow(
      /at least 10 characters/,
    );
    expect(
      await appCodeOf(admin.users.create({ email: "admin@example.com", role: "VIEWER", password: TEST_PASSWORD })),
    ).toBe("CONFLICT");
    expect(await db.prisma.user.count({ where: { email: "short@example.com" } })).toBe(0);
  });

  it("never leaves the platform without an enabled admin", async () => {
    expect(await appCodeOf(h.as("ADMIN").users.setRole({ id: h.users.ADMIN.id, role: "VIEWER" }))).toBe("CONFLICT");
    expect(await appCodeOf(h.as("ADMIN").users.setDisabled({ id: h.users.ADMIN.id, disabled: true }))).toBe("CONFLICT");
  });

  it("changes one's own password: checks the current one, signs out the other sessions, keeps this one", async () => {
    const { services } = h.controlPlane;
    const created = await h
      .as("ADMIN")
      .users.create({ email: "changer@example.com", role: "VIEWER", password: TEST_PASSWORD });
    const others = [await services.sessions.create(created.id, {}), await services.sessions.create(created.id, {})];
    const current = await services.sessions.create(created.id, {});
    const currentSession = (await services.sessions.resolve(current.token))!;
    const caller = createCaller({
      ...createInProcessContext(services, currentSession.user),
      sessionId: currentSession.sessionId,
    });

    await expect(
      caller.auth.changePassword({ currentPassword: "not the password", newPassword: "a brand new passphrase" }),
    ).rejects.toThrow(/the current password is wrong/);
    await expect(
      caller.auth.changePassword({ currentPassword: TEST_PASSWORD, newPassword: TEST_PASSWORD }),
    ).rejects.toThrow(/same as the current one/);
    await expect(caller.auth.changePassword({ currentPassword: TEST_PASSWORD, newPassword: "short" })).rejects.toThrow(
      /at least 10 characters/,
    );
    expect(await services.sessions.resolve(others[0]!.token)).not.toBeNull();

    const changed = await caller.auth.changePassword({
      currentPassword: TEST_PASSWORD,
      newPassword: "a brand new passphrase",
    });
    expect(changed.otherSessionsSignedOut).toBe(2);
    for (const other of others) expect(await services.sessions.resolve(other.token)).toBeNull();
    expect(await services.sessions.resolve(current.token)).not.toBeNull();
    expect(await appCodeOf(h.as(null).auth.signIn({ email: "changer@example.com", password: TEST_PASSWORD }))).toBe(
      "UNAUTHENTICATED",
    );
    expect(
      (await h.as(null).auth.signIn({ email: "changer@example.com", password: "a brand new passphrase" })).user.id,
    ).toBe(created.id);
    const { events } = await h.as("ADMIN").audit.list({ action: "user.changePassword", limit: 5 });
    expect(events.map((event) => [event.targetId, event.actorEmail])).toEqual([[created.id, "changer@example.com"]]);
    expect(JSON.stringify(events)).not.toContain("brand new");
  });

  it("limits wrong current passwords like sign-ins", async () => {
    const { services } = h.controlPlane;
    const created = await h
      .as("ADMIN")
      .users.create({ email: "guesser@example.com", role: "VIEWER", password: TEST_PASSWORD });
    const caller = createCaller(
      createInProcessContext(
        services,
        { id: created.id, email: created.email, name: null, role: "VIEWER" },
        { ip: "203.0.113.9" },
      ),
    );
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(
        await appCodeOf(
          caller.auth.changePassword({ currentPassword: `guess ${attempt}`, newPassword: "a brand new passphrase" }),
        ),
      ).toBe("VALIDATION_FAILED");
    }
    await expect(
      caller.auth.changePassword({ currentPassword: TEST_PASSWORD, newPassword: "a brand new passphrase" }),
    ).rejects.toThrow(/too many failed password checks; try again in \d+ s/);
  });

  it("lets admins reset another user's password, which signs that user out everywhere", async () => {
    const { services } = h.controlPlane;
    const created = await h
      .as("ADMIN")
      .users.create({ email: "forgetful@example.com", role: "ENGINEER", password: TEST_PASSWORD });
    const session = await services.sessions.create(created.id, {});
    expect(
      await appCodeOf(h.as("ENGINEER").users.resetPassword({ id: created.id, password: "reset by an admin" })),
    ).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").users.resetPassword({ id: created.id, password: "reset by an admin" }))).toBe(
      "FORBIDDEN",
    );
    await expect(h.as("ADMIN").users.resetPassword({ id: created.id, password: "short" })).rejects.toThrow(
      /at least 10 characters/,
    );
    await expect(
      h.as("ADMIN").users.resetPassword({ id: h.users.ADMIN.id, password: "reset by an admin" }),
    ).rejects.toThrow(/Change password/);
    expect(
      await appCodeOf(
        h
          .as("ADMIN")
          .users.resetPassword({ id: "00000000-0000-4000-8000-000000000000", password: "reset by an admin" }),
      ),
    ).toBe("NOT_FOUND");
    // Nothing changed so far: the old password still works, the session is alive.
    expect(await services.sessions.resolve(session.token)).not.toBeNull();
    expect((await h.as(null).auth.signIn({ email: "forgetful@example.com", password: TEST_PASSWORD })).user.id).toBe(
      created.id,
    );

    await h.as("ADMIN").users.resetPassword({ id: created.id, password: "reset by an admin" });
    expect(await services.sessions.resolve(session.token)).toBeNull();
    expect(await appCodeOf(h.as(null).auth.signIn({ email: "forgetful@example.com", password: TEST_PASSWORD }))).toBe(
      "UNAUTHENTICATED",
    );
    expect(
      (await h.as(null).auth.signIn({ email: "forgetful@example.com", password: "reset by an admin" })).user.id,
    ).toBe(created.id);
    const { events } = await h.as("ADMIN").audit.list({ action: "user.resetPassword", limit: 5 });
    expect(events.map((event) => [event.targetId, event.actorEmail])).toEqual([[created.id, "admin@example.com"]]);
  });

  it("issues an API key once, stores only its hash and publishes it to the gateway's grants", async () => {
    const seen: string[][] = [];
    const unsubscribe = h.controlPlane.services.apiKeys.subscribe((grants) =>
      seen.push(grants.map((grant) => grant.hash)),
    );
    const { key, summary } = await h.as("ENGINEER").apiKeys.create({ name: "ci", scopes: ["infer"], qpsQuota: 5 });
    expect(key).toMatch(/^opk_/);
    const row = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: summary.id } });
    expect(row.keyHash).toBe(hashApiKey(key));
    expect(JSON.stringify(row)).not.toContain(key);
    expect(seen.at(-1)).toContain(hashApiKey(key));
    expect((await h.as("ENGINEER").apiKeys.list()).map((k) => k.id)).toContain(summary.id);
    expect(JSON.stringify(await h.as("ENGINEER").apiKeys.list())).not.toContain(row.keyHash);

    // Only the owner or an admin may revoke; revoking removes the grant.
    const otherEngineer = await h
      .as("ADMIN")
      .users.create({ email: "eng2@example.com", role: "ENGINEER", password: TEST_PASSWORD });
    expect(otherEngineer.role).toBe("ENGINEER");
    expect(await appCodeOf(h.as("VIEWER").apiKeys.revoke({ id: summary.id }))).toBe("FORBIDDEN");
    await h.as("ADMIN").apiKeys.revoke({ id: summary.id });
    expect(seen.at(-1)).not.toContain(hashApiKey(key));
    expect(await appCodeOf(h.as("ENGINEER").apiKeys.revoke({ id: summary.id }))).toBe("CONFLICT");
    unsubscribe();
  });

  it("keeps the admin scope for admins", async () => {
    expect(await appCodeOf(h.as("ENGINEER").apiKeys.create({ name: "x", scopes: ["admin"] }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("ENGINEER").apiKeys.list({ all: true, includeRevoked: false }))).toBe("FORBIDDEN");
    const { summary } = await h.as("ADMIN").apiKeys.create({ name: "ops", scopes: ["admin", "infer"] });
    expect(summary.scopes).toEqual(["admin", "infer"]);
    expect(
      await appCodeOf(
        h.as("ADMIN").apiKeys.create({ name: "old", scopes: ["infer"], expiresAt: new Date(Date.now() - 1000) }),
      ),
    ).toBe("VALIDATION_FAILED");
  });

  it("drops the keys of a disabled user from the grants", async () => {
    const user = await h
      .as("ADMIN")
      .users.create({ email: "leaver@example.com", role: "ADMIN", password: TEST_PASSWORD });
    const { createCaller } = await import("../root.js");
    const { createInProcessContext } = await import("../context.js");
    const leaver = createCaller(
      createInProcessContext(h.controlPlane.services, { id: user.id, email: user.email, name: null, role: "ADMIN" }),
    );
    const { key } = await leaver.apiKeys.create({ name: "leaver", scopes: ["infer"] });
    const hashes = () => h.controlPlane.services.apiKeys.currentGrants().map((grant) => grant.hash);
    expect(hashes()).toContain(hashApiKey(key));
    await h.as("ADMIN").users.setDisabled({ id: user.id, disabled: true });
    expect(hashes()).not.toContain(hashApiKey(key));
  });

  it("writes an audit event for every state change, without secrets, readable by admins only", async () => {
    const { events } = await h.as("ADMIN").audit.list({ limit: 200 });
    const actions = events.map((event) => event.action);
    for (const action of ["user.create", "user.setRole", "apiKey.create", "apiKey.revoke", "user.disable"])
      expect(actions).toContain(action);
    expect(JSON.stringify(events)).not.toMatch(/passwordHash|keyHash|\$argon2/);
    const filtered = await h.as("ADMIN").audit.list({ action: "apiKey.", limit: 100 });
    expect(filtered.events.every((event) => event.action.startsWith("apiKey."))).toBe(true);
    const paged = await h.as("ADMIN").audit.list({ limit: 2 });
    expect(paged.nextCursor).not.toBeNull();
    const next = await h.as("ADMIN").audit.list({ limit: 2, cursor: paged.nextCursor! });
    expect(Number(next.events[0]!.id)).toBeLessThan(Number(paged.events[1]!.id));
    expect(await appCodeOf(h.as("ENGINEER").audit.list())).toBe("FORBIDDEN");
  });
});
