import { join } from "node:path";
import type { Command } from "commander";
import type { Database, MigrateResult } from "@operon/db";
import { isPostgresUrl } from "@operon/db/database-url";
import { operonEnvironment } from "./environment.js";

/**
 * Where the control plane's database is, the same for every command:
 * --database-url, else DATABASE_URL, else the embedded database in
 * <data-dir>/db (no server needed).
 */
export function addDatabaseFlags(command: Command, options: { dataDir: boolean } = { dataDir: true }): Command {
  command.option(
    "--database-url <url>",
    "postgres(ql)://… for PostgreSQL, file:<dir> or memory: for the embedded database; default $DATABASE_URL, else <data-dir>/db",
  );
  if (options.dataDir)
    command.option(
      "--data-dir <path>",
      "where Operon keeps its own files (embedded database, uploaded models)",
      ".operon",
    );
  return command;
}

export function databaseUrlOf(flags: { databaseUrl?: string | undefined; dataDir: string }): string {
  const environment = operonEnvironment();
  return (
    flags.databaseUrl ??
    environment.OPERON_DATABASE_URL ??
    environment.DATABASE_URL ??
    `file:${join(flags.dataDir, "db")}`
  );
}

export function describeDatabase(url: string): string {
  if (isPostgresUrl(url)) return `PostgreSQL ${url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@")}`;
  if (url.startsWith("memory:")) return "embedded database in memory";
  return `embedded database in ${url.slice("file:".length)}`;
}

/** Opens the database and applies pending migrations, with an error that says where it tried. */
export async function openMigratedDatabase(url: string): Promise<{ db: Database; migrations: MigrateResult }> {
  // Loaded when a command opens the database: `operon serve` reads this module's flags on the gateway's thread.
  const { openAndMigrate } = await import("@operon/db");
  try {
    return await openAndMigrate({ url });
  } catch (error) {
    throw new Error(`cannot open the ${describeDatabase(url)}: ${(error as Error).message}`, { cause: error });
  }
}
