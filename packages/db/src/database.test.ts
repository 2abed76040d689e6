import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "./database.js";
import { checksumOf, defaultMigrationsDir, migrate, readMigrations } from "./migrate.js";
import pg from "pg";
import { postgresBackend, TEST_POSTGRES_ADMIN_URL, testDatabaseBackends } from "./testing/test-databases.js";

describe.each(testDatabaseBackends())("data layer on $name", (backend) => {
  let db: Database;

  beforeAll(async () => {
    db = await backend.setup();
  });
  afterAll(async () => {
    await db?.close();
    await backend.teardown();
  });

  it("opens the expected kind", () => {
    expect(db.kind).toBe(backend.name);
  });

  it("applies the committed migrations, then migrating again is a no-op", async () => {
    const all = readMigrations().map((m) => m.name);
    expect(all.length).toBeGreaterThan(0);
    const first = await migrate(db);
    expect(first.applied).toEqual(all);
    expect(first.alreadyApplied).toEqual([]);
    const second = await migrate(db);
    expect(second.applied).toEqual([]);
    expect(second.alreadyApplied).toEqual(all);
  });

  it("records Prisma's bookkeeping with sha256 checksums of migration.sql", async () => {
    const rows = await db.prisma.$queryRawUnsafe<
      {
        migration_name: string;
        checksum: string;
        finished_at: Date | null;
        rolled_back_at: Date | null;
        applied_steps_count: number;
      }[]
    >(
      `SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    const files = readMigrations();
    expect(rows.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    for (const [i, f] of files.entries()) {
      const row = rows[i]!;
      expect(row.checksum).toBe(createHash("sha256").update(f.sql).digest("hex"));
      expect(row.checksum).toBe(checksumOf(f.sql));
      expect(row.finished_at).not.toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(Number(row.applied_steps_count)).toBe(1);
    }
  });

  it("round-trips users, API keys, models, operators and audit events", async () => {
    const { prisma } = db;
    const user = await prisma.user.create({ data: { email: "eng@example.com", name: "Eng", role: "ENGINEER" } });
    expect(user.role).toBe("ENGINEER");

    const secret = "op_live_" + randomBytes(16).toString("hex");
    const key = await prisma.apiKey.create({
      data: {
        name: "ci",
        keyHash: createHash("sha256").update(secret).digest("hex"),
        prefix: secret.slice(0, 12),
        scopes: ["infer", "models:read"],
        ownerId: user.id,
        priorityLevel: 2,
        qpsQuota: 50,
        expiresAt: new Date("2030-01-01T00:00:00Z"),
      },
    });
    const foundKey = await prisma.apiKey.findUniqueOrThrow({
      where: { keyHash: createHash("sha256").update(secret).digest("hex") },
      include: { owner: true },
    });
    expect(foundKey.id).toBe(key.id);
    expect(foundKey.prefix).toBe(secret.slice(0, 12));
    expect(foundKey.scopes).toEqual(["infer", "models:read"]);
    expect(foundKey.owner.email).toBe("eng@example.com");
    expect(foundKey.qpsQuota).toBe(50);

    const model = await prisma.model.create({
      data: {
        name: "resnet50",
        ownerId: user.id,
        versions: {
          create: {
            version: 1,
            artifactUri: "s3://bucket/resnet50/1/model.onnx",
            sizeBytes: 102_400_000_000n,
            sha256: "a".repeat(64),
            config: { max_batch_size: 8, input: [{ name: "x", dims: [3, 224, 224] }] },
            state: "READY",
            uploadedById: user.id,
          },
        },
      },
      include: { versions: true },
    });
    expect(model.versions).toHaveLength(1);
    const version = await prisma.modelVersion.findUniqueOrThrow({
      where: { modelId_version: { modelId: model.id, version: 1 } },
      include: { uploadedBy: true },
    });
    expect(version.sizeBytes).toBe(102_400_000_000n);
    expect(version.config).toEqual({ max_batch_size: 8, input: [{ name: "x", dims: [3, 224, 224] }] });
    expect(version.uploadedBy?.id).toBe(user.id);
    await expect(
      prisma.modelVersion.create({
        data: { modelId: model.id, version: 1, artifactUri: "x", sizeBytes: 1n, sha256: "b".repeat(64) },
      }),
    ).rejects.toThrow();

    const spec = {
      steps: [
        { name: "pre", model: "tokenizer" },
        { name: "infer", model: "resnet50", after: ["pre"] },
      ],
    };
    const operator = await prisma.operator.create({
      data: {
        name: "classify",
        description: "tokenize then classify",
        ownerId: user.id,
        spec,
        versions: { create: { version: 1, spec, createdById: user.id } },
      },
    });
    const gotOperator = await prisma.operator.findUniqueOrThrow({
      where: { name: "classify" },
      include: { versions: true },
    });
    expect(gotOperator.id).toBe(operator.id);
    expect(gotOperator.spec).toEqual(spec);
    expect(gotOperator.versions[0]?.spec).toEqual(spec);

    const event = await prisma.auditEvent.create({
      data: {
        actorId: user.id,
        apiKeyId: key.id,
        action: "model.version.create",
        targetType: "ModelVersion",
        targetId: version.id,
        before: undefined,
        after: { state: "READY", version: 1 },
      },
    });
    expect(typeof event.id).toBe("bigint");
    const events = await prisma.auditEvent.findMany({ where: { actorId: user.id }, orderBy: { at: "desc" } });
    expect(events).toHaveLength(1);
    expect(events[0]?.after).toEqual({ state: "READY", version: 1 });
    expect(events[0]?.before).toBeNull();

    // Deleting the user cascades to keys and keeps models/audit with a null owner.
    await prisma.user.delete({ where: { id: user.id } });
    expect(await prisma.apiKey.count()).toBe(0);
    expect((await prisma.model.findUniqueOrThrow({ where: { id: model.id } })).ownerId).toBeNull();
    expect((await prisma.auditEvent.findFirstOrThrow()).actorId).toBeNull();
  });

  it("rolls back a failing migration entirely and reports it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "operon-mig-"));
    try {
      const { mkdirSync, writeFileSync, cpSync } = await import("node:fs");
      for (const m of readMigrations())
        cpSync(join(defaultMigrationsDir(), m.name), join(dir, m.name), { recursive: true });
      mkdirSync(join(dir, "99999999999999_broken"));
      writeFileSync(
        join(dir, "99999999999999_broken", "migration.sql"),
        `CREATE TABLE "half_done" ("id" INTEGER);\nSELECT * FROM "no_such_table";\n`,
      );
      await expect(migrate(db, { migrationsDir: dir })).rejects.toThrow(
        /99999999999999_broken failed and was rolled back/,
      );
      const tables = await db.prisma.$queryRawUnsafe<{ n: bigint | number }[]>(
        `SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'half_done'`,
      );
      expect(Number(tables[0]?.n)).toBe(0);
      const rows = await db.prisma.$queryRawUnsafe<{ n: bigint | number }[]>(
        `SELECT count(*) AS n FROM "_prisma_migrations" WHERE migration_name = '99999999999999_broken'`,
      );
      expect(Number(rows[0]?.n)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("embedded database", () => {
  it("persists data and migration history across reopen of its data directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "operon-db-reopen-"));
    try {
      const url = `file:${join(dir, "db")}`;
      const first = await openDatabase({ url });
      expect((await migrate(first)).applied.length).toBeGreaterThan(0);
      await first.prisma.user.create({ data: { email: "admin@example.com", role: "ADMIN" } });
      await first.close();

      const second = await openDatabase({ url });
      try {
        expect((await migrate(second)).applied).toEqual([]);
        const admin = await second.prisma.user.findUniqueOrThrow({ where: { email: "admin@example.com" } });
        expect(admin.role).toBe("ADMIN");
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("PostgreSQL database", () => {
  it("survives the server dropping its idle connections: the next query opens a new one", async () => {
    const backend = postgresBackend();
    const db = await backend.setup();
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      await db.prisma.$queryRawUnsafe("SELECT 1");
      const ours = await db.prisma.$queryRawUnsafe<{ pid: number }[]>("SELECT pg_backend_pid() AS pid");
      // Terminate every session of this database from another connection, as a server restart would.
      const admin = new pg.Client({ connectionString: TEST_POSTGRES_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        await admin.query("SELECT pg_terminate_backend($1)", [ours[0]!.pid]);
      } finally {
        await admin.end();
      }
      await expect
        .poll(() => warnings.some((message) => /PostgreSQL dropped an idle connection/.test(message)), {
          timeout: 5000,
        })
        .toBe(true);
      const rows = await db.prisma.$queryRawUnsafe<{ one: number }[]>("SELECT 1 AS one");
      expect(rows[0]!.one).toBe(1);
    } finally {
      process.off("warning", onWarning);
      await db.close();
      await backend.teardown();
    }
  });
});
