// Applies the committed migrations in prisma/migrations to a database, keeping
// Prisma's own bookkeeping table (_prisma_migrations) so that stock Prisma
// (`prisma migrate deploy/status`) sees the same history. Works offline, with
// no Prisma engine: migrations are plain PostgreSQL SQL.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** A single connection able to run scripts and parameterised queries. */
export interface SqlConnection {
  /** Runs a (possibly multi-statement) SQL script without parameters. */
  exec(sql: string): Promise<void>;
  query<T extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  release(): Promise<void>;
}

export interface MigrationSource {
  /** Opens one dedicated connection for the migration run. */
  connectForMigrations(): Promise<SqlConnection>;
}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly migration?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MigrationError";
  }
}

/** Same lock key as Prisma's schema engine, so the two never run at once. */
const ADVISORY_LOCK_KEY = 72707369;

// Prisma's own DDL for its bookkeeping table (PostgreSQL connector).
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
);`;

/** prisma/migrations at the repository root (src/ or dist/ → ../../../prisma). */
export function defaultMigrationsDir(): string {
  const env = process.env.OPERON_MIGRATIONS_DIR;
  if (env) return resolve(env);
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, "..", "..", "..", "prisma", "migrations");
}

export function checksumOf(sql: string | Buffer): string {
  return createHash("sha256").update(sql).digest("hex");
}

/** Migration folders in the order Prisma applies them (lexicographic names). */
export function readMigrations(dir = defaultMigrationsDir()): MigrationFile[] {
  if (!existsSync(dir)) throw new MigrationError(`migrations directory not found: ${dir}`);
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort()
    .flatMap((name) => {
      const file = join(dir, name, "migration.sql");
      if (!existsSync(file)) return [];
      const bytes = readFileSync(file);
      return [{ name, sql: bytes.toString("utf8"), checksum: checksumOf(bytes) }];
    });
}

interface MigrationRow extends Record<string, unknown> {
  migration_name: string;
  checksum: string;
  finished_at: unknown;
  rolled_back_at: unknown;
}

/**
 * Applies pending migrations in order, each in its own transaction together
 * with its _prisma_migrations row: a failing migration is rolled back
 * entirely and reported as a MigrationError. Idempotent.
 */
export async function migrate(db: MigrationSource, options: { migrationsDir?: string } = {}): Promise<MigrateResult> {
  const migrations = readMigrations(options.migrationsDir);
  const conn = await db.connectForMigrations();
  const result: MigrateResult = { applied: [], alreadyApplied: [] };
  try {
    await conn.exec(CREATE_MIGRATIONS_TABLE);
    for (const m of migrations) {
      await conn.exec("BEGIN");
      try {
        await conn.query(`SELECT pg_advisory_xact_lock(${ADVISORY_LOCK_KEY})`);
        const rows = await conn.query<MigrationRow>(
          `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE migration_name = $1 AND rolled_back_at IS NULL`,
          [m.name],
        );
        const failed = rows.find((r) => r.finished_at === null);
        if (failed) {
          throw new MigrationError(
            `migration ${m.name} is recorded as started but not finished (a failed run of stock Prisma?); resolve it with \`prisma migrate resolve\` before migrating`,
            m.name,
          );
        }
        const done = rows.find((r) => r.finished_at !== null);
        if (done) {
          if (done.checksum !== m.checksum) {
            throw new MigrationError(
              `migration ${m.name} was modified after it was applied (checksum ${done.checksum} in the database, ${m.checksum} on disk)`,
              m.name,
            );
          }
          await conn.exec("COMMIT");
          result.alreadyApplied.push(m.name);
          continue;
        }
        try {
          await conn.exec(m.sql);
        } catch (err) {
          throw new MigrationError(
            `migration ${m.name} failed and was rolled back: ${(err as Error).message}`,
            m.name,
            { cause: err },
          );
        }
        await conn.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count) VALUES ($1, $2, now(), $3, NULL, NULL, now(), 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        await conn.exec("COMMIT");
        result.applied.push(m.name);
      } catch (err) {
        await conn.exec("ROLLBACK").catch(() => undefined);
        throw err;
      }
    }
  } finally {
    await conn.release();
  }
  return result;
}
