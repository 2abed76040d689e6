#!/usr/bin/env node
import { Command } from "commander";
import { OPERON_VERSION } from "@operon/gateway/version";
import { adminCommand } from "./admin-command.js";
import { keysCommand } from "./keys-command.js";
import { jobCommand } from "./job-command.js";
import { migrateCommand } from "./migrate-command.js";
import { perfCommand } from "./perf-command.js";
import { serveCommand } from "./serve-command.js";
import { redactOwnCommandLine } from "./command-line-redaction.js";
import { takeSecretsFromEnvironment } from "./environment.js";

// First of all: secrets leave the process's visible command line and its environment
// (children, user code in workers among them, must not inherit or read them).
redactOwnCommandLine();
const secrets = takeSecretsFromEnvironment();
if (secrets.blockError !== undefined) {
  process.stderr.write(
    `warning: ${secrets.taken.join(", ")} stay readable in /proc/${process.pid}/environ: ${secrets.blockError}\n`,
  );
}

/** The `operon` command line: one subcommand per process role. */
const program = new Command("operon")
  .description("Operon: a Triton-compatible inference server and operator platform")
  .version(OPERON_VERSION)
  .showHelpAfterError()
  .addCommand(serveCommand())
  .addCommand(perfCommand())
  .addCommand(migrateCommand())
  .addCommand(adminCommand())
  .addCommand(keysCommand())
  .addCommand(jobCommand());

await program.parseAsync(process.argv);
