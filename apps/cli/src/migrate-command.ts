import { Command } from "commander";
import { addDatabaseFlags, databaseUrlOf, describeDatabase, openMigratedDatabase } from "./database-flags.js";

/** `operon migrate`: applies the committed migrations (serve does the same on start). */
export function migrateCommand(): Command {
  return addDatabaseFlags(
    new Command("migrate").description("Apply pending database migrations of the control plane, then exit"),
  ).action(async (flags: { databaseUrl?: string; dataDir: string }) => {
    const url = databaseUrlOf(flags);
    try {
      const { db, migrations } = await openMigratedDatabase(url);
      await db.close();
      process.stdout.write(
        migrations.applied.length > 0
          ? `applied ${migrations.applied.length} migration(s) to the ${describeDatabase(url)}: ${migrations.applied.join(", ")}\n`
          : `the ${describeDatabase(url)} is up to date (${migrations.alreadyApplied.length} migration(s) applied before)\n`,
      );
    } catch (error) {
      process.stderr.write(`operon migrate: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  });
}
