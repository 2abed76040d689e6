// Opens the control plane's database: PostgreSQL when the URL says so,
// otherwise an embedded PostgreSQL (PGlite) persisted in a data directory.
// Both run the same Prisma schema and the same migration history.
import { mkdirSync } from "node:fs";
import { acquireDataDirLock } from "./data-dir-lock.js";
import { resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "./generated/prisma/client.js";
import { migrate, type MigrateResult, type MigrationSource, type SqlConnection } from "./migrate.js";
import { postgresAdvisoryLocks, singleProcessLocks, type AdvisoryLocks } from "./advisory-locks.js";

export type DatabaseKind = "postgres" | "embedded";

export interface OpenDatabaseOptions {
  /**
   * postgres:// or postgresql:// → PostgreSQL; file:<dir> → embedded, persisted
   * in <dir>; memory: → embedded, in memory. Without one, the embedded
   * database in `dataDir`. The package reads no environment: DATABASE_URL is
   * the CLI's to read (apps/cli/src/environment.ts), once.
   */
  url?: string;
  /** Embedded data directory when no URL names one (default .operon/db). */
  dataDir?: string;
}

export interface Database extends MigrationSource {
  prisma: PrismaClient;
  kind: DatabaseKind;
  /** Where the data lives: a redacted URL or the embedded data directory. */
  location: string;
  /** Named locks shared by every process on this database (advisory-locks.ts). */
  locks: AdvisoryLocks;
  close(): Promise<void>;
}

export const DEFAULT_DATA_DIR = ".operon/db";

/**
 * Interactive transactions ($transaction(async (tx) => ...)) wait up to
 * maxWait for a connection and may run for up to timeout. Prisma's defaults
 * (2 s / 5 s) are short for a machine that also runs inference on every core,
 * and a timeout that fires while COMMIT is in flight makes @prisma/adapter-pg
 * release its pool client twice and crash the process (prisma/orm#29952).
 * The control plane's transactions are a few small statements, so these
 * bounds are only ever reached by an overloaded or stuck database.
 */
export const TRANSACTION_OPTIONS = { maxWait: 15_000, timeout: 60_000 } as const;

export function isPostgresUrl(url: string | undefined): boolean {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<Database> {
  const url = options.url || undefined;
  if (url && isPostgresUrl(url)) return openPostgres(url);
  if (url && !/^(file:|memory:)/.test(url)) {
    throw new Error(`unsupported database URL ${redact(url)}: use postgres(ql)://, file:<dir> or memory:`);
  }
  if (url === "memory:" || url?.startsWith("memory:")) return openEmbedded(undefined);
  const dir = url?.startsWith("file:") ? url.slice("file:".length) : (options.dataDir ?? DEFAULT_DATA_DIR);
  return openEmbedded(resolve(dir));
}

function openPostgres(url: string): Database {
  const pool = new pg.Pool({ connectionString: url });
  // An idle connection the server drops (a restart, an administrator) is
  // discarded by the pool and replaced on the next query. Without a listener
  // Node would treat the pool's "error" event as fatal and end the process.
  pool.on("error", (error) =>
    process.emitWarning(
      `PostgreSQL dropped an idle connection (${error.message}); the next query opens a new one`,
      "OperonDatabaseWarning",
    ),
  );
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: TRANSACTION_OPTIONS });
  const locks = postgresAdvisoryLocks({ url });
  return {
    prisma,
    kind: "postgres",
    location: redact(url),
    locks,
    async connectForMigrations(): Promise<SqlConnection> {
      const client = await pool.connect();
      return {
        async exec(sql) {
          await client.query(sql);
        },
        async query(sql, params) {
          return (await client.query(sql, params)).rows;
        },
        async release() {
          client.release();
        },
      };
    },
    async close() {
      await locks.close();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

async function openEmbedded(dataDir: string | undefined): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // PGlite is a database inside this process: a second process opening the
  // same files would write behind its back. One process at a time.
  const lock = dataDir ? acquireDataDirLock(dataDir) : undefined;
  let lite: PGlite;
  try {
    lite = await PGlite.create(dataDir ? { dataDir } : {});
  } catch (error) {
    lock?.release();
    throw error;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite), transactionOptions: TRANSACTION_OPTIONS });
  return {
    prisma,
    kind: "embedded",
    location: dataDir ?? "memory:",
    // One process owns the embedded database (the data directory lock above).
    locks: singleProcessLocks(),
    async connectForMigrations(): Promise<SqlConnection> {
      // PGlite is a single connection: migrate before serving queries.
      return {
        async exec(sql) {
          await lite.exec(sql);
        },
        async query(sql, params) {
          return (await lite.query(sql, params)).rows as never[];
        },
        async release() {},
      };
    },
    async close() {
      await prisma.$disconnect();
      await lite.close();
      lock?.release();
    },
  };
}

/** Opens the database and applies pending migrations (what `operon` does on start). */
export async function openAndMigrate(
  options: OpenDatabaseOptions = {},
): Promise<{ db: Database; migrations: MigrateResult }> {
  const db = await openDatabase(options);
  try {
    return { db, migrations: await migrate(db) };
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
