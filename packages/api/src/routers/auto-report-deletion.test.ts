import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { createInProcessContext } from "../context.js";
import { createCaller } from "../root.js";
import { createUser } from "../services/accounts/user-accounts.js";
import {
  appCodeOf,
  createControlPlaneHarness,
  TEST_PASSWORD,
  type ControlPlaneHarness,
} from "../testing/control-plane-harness.js";

// Issue 27 item 10: who may delete automatic reports. Decided (services/ownership): an automatic report (no
// creator: the platform queued it) goes with its target. Of an upload or a console operator: its owner or an admin,
// not another engineer (it is the owner's record of their versions, and the scheduler's capacity). Of a repository
// model (no owner, the host's): any engineer, as for loading it. A manual report: whoever started it, or an admin.
// Copies of the run's migrated template database: migrating them, as the set-up below does, finds nothing to apply.
const backends = testDatabaseBackends({ migrated: true });
describe.each(backends)("who may delete automatic perf reports, on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let other: ReturnType<typeof createCaller>;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
    const bob = await createUser(
      db.prisma,
      { userId: null },
      { email: "bob@example.com", name: "Bob", role: "ENGINEER", password: TEST_PASSWORD },
    );
    other = createCaller(
      createInProcessContext(h.controlPlane.services, {
        id: bob.id,
        email: bob.email,
        name: bob.name,
        role: "ENGINEER",
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  /** A finished automatic report of `targetName` (the platform's: no creator). */
  const automatic = async (targetName: string, targetKind: "MODEL" | "OPERATOR" = "MODEL") =>
    (
      await db.prisma.perfReport.create({
        data: { targetName, targetKind, status: "SUCCEEDED", trigger: "AUTOMATIC", cause: "model.upload version 1" },
      })
    ).id;

  it("an upload's automatic reports: its owner or an admin, not another engineer", async () => {
    await db.prisma.model.create({
      data: {
        name: "owned",
        ownerId: h.users.ENGINEER.id,
        versions: { create: [{ version: 1, artifactUri: "file:///x", sizeBytes: 1n, sha256: "0".repeat(64) }] },
      },
    });
    const first = await automatic("owned");
    const refused = other.perf.delete({ id: first });
    await expect(refused).rejects.toThrow(
      `perf run ${first} (automatic, of model 'owned') belongs to engineer@example.com: only its owner or an admin may change it`,
    );
    expect(await appCodeOf(other.perf.delete({ id: first }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").perf.delete({ id: first }))).toBe("FORBIDDEN");
    expect(await db.prisma.perfReport.count({ where: { id: first } })).toBe(1);
    await h.as("ENGINEER").perf.delete({ id: first });
    const second = await automatic("owned");
    await h.as("ADMIN").perf.delete({ id: second });
    expect(await db.prisma.perfReport.count({ where: { targetName: "owned" } })).toBe(0);
  });

  it("a console operator's automatic reports go with the operator's owner too", async () => {
    await db.prisma.operator.create({ data: { name: "owned_op", ownerId: h.users.ENGINEER.id, spec: {} } });
    const report = await automatic("owned_op", "OPERATOR");
    expect(await appCodeOf(other.perf.delete({ id: report }))).toBe("FORBIDDEN");
    await h.as("ENGINEER").perf.delete({ id: report });
  });

  it("a repository model's automatic reports: any engineer (the host's models belong to nobody)", async () => {
    const report = await automatic("add_sub");
    await other.perf.delete({ id: report });
    expect(await db.prisma.perfReport.count({ where: { id: report } })).toBe(0);
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.delete", limit: 10 });
    expect(events.map((event) => event.targetId)).toContain(report);
  });
});
