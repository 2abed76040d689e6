import { Command } from "commander";
import { input, password as passwordPrompt } from "@inquirer/prompts";
import { addDatabaseFlags, databaseUrlOf, describeDatabase, openMigratedDatabase } from "./database-flags.js";
import { operonEnvironment } from "./environment.js";
import { readSecretFile } from "./secret-file.js";

/**
 * `operon admin create`: makes an admin account from flags, or asks for what
 * is missing when run in a terminal. There is no default password.
 * The password may also come from OPERON_ADMIN_PASSWORD (for scripts; flags
 * end up in shell history and process listings).
 */
export function adminCommand(): Command {
  const admin = new Command("admin").description("Manage control plane accounts");
  admin.addCommand(
    addDatabaseFlags(
      new Command("create")
        .description("Create an admin account (the first one, or another)")
        .option("--email <email>", "the admin's email (sign-in name)")
        .option("--name <name>", "display name")
        .option(
          "--password <password>",
          "initial password (at least 10 characters; shows in ps: prefer --password-file or $OPERON_ADMIN_PASSWORD); else asked",
        )
        .option("--password-file <path>", "file holding the initial password (one trailing newline ignored)"),
    ).action(
      async (flags: {
        email?: string;
        name?: string;
        password?: string;
        passwordFile?: string;
        databaseUrl?: string;
        dataDir: string;
      }) => {
        try {
          const interactive = process.stdin.isTTY === true;
          const email = flags.email ?? (interactive ? await input({ message: "Admin email:" }) : undefined);
          let secret =
            flags.password ??
            (flags.passwordFile !== undefined
              ? readSecretFile(flags.passwordFile, "--password-file")
              : operonEnvironment().OPERON_ADMIN_PASSWORD);
          if (secret === undefined && interactive) {
            secret = await passwordPrompt({ message: "Password (at least 10 characters):", mask: true });
            const again = await passwordPrompt({ message: "Password again:", mask: true });
            if (again !== secret) throw new Error("the two passwords differ");
          }
          if (!email || secret === undefined)
            throw new Error(
              "--email and --password (or $OPERON_ADMIN_PASSWORD) are required when not run in a terminal",
            );
          const url = databaseUrlOf(flags);
          const { db } = await openMigratedDatabase(url);
          // Loaded when run: every command's module is imported by `operon serve` on the gateway's thread too.
          const { createUser } = await import("@operon/api/user-accounts");
          try {
            const user = await createUser(
              db.prisma,
              { userId: null, ip: "cli" },
              { email, name: flags.name ?? null, role: "ADMIN", password: secret },
            );
            process.stdout.write(`created admin ${user.email} in the ${describeDatabase(url)}\n`);
          } finally {
            await db.close();
          }
        } catch (error) {
          process.stderr.write(`operon admin create: ${(error as Error).message}\n`);
          process.exitCode = 1;
        }
      },
    ),
  );
  return admin;
}
