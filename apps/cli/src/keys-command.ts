import { Command, InvalidArgumentError } from "commander";
import { API_KEY_SCOPES, type ApiKeyScope } from "@operon/protocol/api-keys";
import { addDatabaseFlags, databaseUrlOf, openMigratedDatabase } from "./database-flags.js";

/**
 * `operon keys create`: issues a gateway API key for an existing account
 * without the console (e.g. before exposing a gateway beyond loopback).
 * A running `operon serve` reads new keys from the database at its next start;
 * keys made in the console take effect at once.
 */
export function keysCommand(): Command {
  const keys = new Command("keys").description("Manage gateway API keys");
  keys.addCommand(
    addDatabaseFlags(
      new Command("create")
        .description("Create an API key; it is printed once")
        .requiredOption("--owner <email>", "the account that owns the key")
        .requiredOption("--name <name>", "what the key is for")
        .option("--scopes <list>", `comma-separated scopes (${API_KEY_SCOPES.join(", ")})`, parseScopes, [
          "infer",
        ] as ApiKeyScope[]),
    ).action(
      async (flags: { owner: string; name: string; scopes: ApiKeyScope[]; databaseUrl?: string; dataDir: string }) => {
        try {
          const { db } = await openMigratedDatabase(databaseUrlOf(flags));
          // Loaded when run: every command's module is imported by `operon serve` on the gateway's thread too.
          const { ApiKeyService } = await import("@operon/api/api-key-service");
          const { normalizeEmail } = await import("@operon/api/user-accounts");
          try {
            const owner = await db.prisma.user.findUnique({ where: { email: normalizeEmail(flags.owner) } });
            if (!owner) throw new Error(`no account with email ${flags.owner}; create it first (operon admin create)`);
            if (flags.scopes.includes("admin") && owner.role !== "ADMIN")
              throw new Error(`${owner.email} is not an admin: only admins may own keys with the admin scope`);
            const service = await ApiKeyService.create(db.prisma);
            const { key, summary } = await service.create({ userId: owner.id, ip: "cli" }, owner.id, {
              name: flags.name,
              scopes: flags.scopes,
            });
            process.stdout.write(`${key}\n`);
            process.stderr.write(
              `created key '${summary.name}' (${summary.prefix}, scopes ${summary.scopes.join(",")}) for ${owner.email}; it will not be shown again\n`,
            );
          } finally {
            await db.close();
          }
        } catch (error) {
          process.stderr.write(`operon keys create: ${(error as Error).message}\n`);
          // The usual case: a server holds the embedded database. Its console makes keys while it runs.
          if (heldByServer(error))
            process.stderr.write(
              "operon keys create: while the server runs, create the key in its console instead: API keys → Create a key (shown once, in effect at once)\n",
            );
          process.exitCode = 1;
        }
      },
    ),
  );
  return keys;
}

/** Whether the database could not be opened because a server holds it (a DataDirLockedError, maybe as a cause). */
function heldByServer(error: unknown): boolean {
  for (let at: unknown = error; at instanceof Error; at = at.cause) if (at.name === "DataDirLockedError") return true;
  return false;
}

function parseScopes(value: string): ApiKeyScope[] {
  const scopes = value
    .split(",")
    .map((scope) => scope.trim())
    .filter(Boolean);
  for (const scope of scopes) {
    if (!(API_KEY_SCOPES as readonly string[]).includes(scope))
      throw new InvalidArgumentError(`unknown scope '${scope}'; use ${API_KEY_SCOPES.join(", ")}`);
  }
  if (scopes.length === 0) throw new InvalidArgumentError("give at least one scope");
  return scopes as ApiKeyScope[];
}
