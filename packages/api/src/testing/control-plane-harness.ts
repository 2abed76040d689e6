import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Role } from "@operon/db";
import { migrate, type Database } from "@operon/db";
import { createInProcessContext } from "../context.js";
import { ControlPlane } from "../control-plane.js";
import type { ControlPlaneOptions } from "../options.js";
import { createCaller } from "../root.js";
import type { SessionUser } from "../services/accounts/session-store.js";
import { createUser } from "../services/accounts/user-accounts.js";

/**
 * A control plane over a test database (see @operon/db/testing/test-databases)
 * with one user per role, and tRPC callers acting as each. Router tests run
 * it against both the embedded database and PostgreSQL.
 */
export const TEST_PASSWORD = "correct horse battery";

export interface ControlPlaneHarness {
  controlPlane: ControlPlane;
  users: Record<Role, SessionUser>;
  /** A caller signed in as the user of that role (null = signed out). */
  as(role: Role | null): ReturnType<typeof createCaller>;
  /** Folders the harness made (model store, staging); removed by close(). */
  dir: string;
  close(): Promise<void>;
}

/**
 * Automatic perf runs are off in the harness unless `autoPerf` is set: a
 * router test that uploads a model or registers an operator should not
 * find a background load test measuring beside it.
 */
export async function createControlPlaneHarness(
  db: Database,
  overrides: Partial<ControlPlaneOptions> = {},
  harness: { autoPerf?: boolean } = {},
): Promise<ControlPlaneHarness> {
  await migrate(db);
  const enabled = harness.autoPerf ?? false;
  await db.prisma.autoPerfSettings.upsert({
    where: { id: "default" },
    create: { id: "default", enabled },
    update: { enabled },
  });
  const dir = mkdtempSync(join(tmpdir(), "operon-api-"));
  const controlPlane = await ControlPlane.create({
    db,
    gateway: { httpUrl: "http://127.0.0.1:9" },
    modelStoreDir: join(dir, "models"),
    uploadStagingDir: join(dir, "staging"),
    usageSampleIntervalSecs: 0,
    // No background scheduling: tests that drive a gateway must not see their models rescaled.
    resourceScheduler: { periodSecs: 0 },
    ...overrides,
  });
  const users = {} as Record<Role, SessionUser>;
  for (const role of ["ADMIN", "ENGINEER", "VIEWER"] as const) {
    const created = await createUser(
      db.prisma,
      { userId: null },
      { email: `${role.toLowerCase()}@example.com`, name: role, role, password: TEST_PASSWORD },
    );
    users[role] = { id: created.id, email: created.email, name: created.name, role };
  }
  return {
    controlPlane,
    users,
    dir,
    as: (role) => createCaller(createInProcessContext(controlPlane.services, role ? users[role] : null)),
    async close() {
      await controlPlane.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The app error code of a failed call, for `await expect(...).rejects` style checks. */
export async function appCodeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    if (cause && typeof cause.code === "string") return cause.code;
    const trpcCode = (error as { code?: string }).code;
    return `TRPC:${trpcCode ?? "unknown"}`;
  }
  throw new Error("expected the call to fail, and it succeeded");
}
