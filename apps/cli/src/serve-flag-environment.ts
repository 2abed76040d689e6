import type { Command, Option } from "commander";

/**
 * Every `operon serve` flag can also come from an environment variable, so
 * that a container or a Kubernetes manifest configures the server without
 * rewriting its command line. One rule names them: OPERON_ + the flag's long
 * name in upper case, dashes as underscores (`--http-port` → OPERON_HTTP_PORT).
 * A flag on the command line wins over its variable; commander reads the
 * variable when the flag is absent and its parser checks the value, naming the
 * variable when the value is bad.
 */
export function flagEnvironmentVariable(longFlag: string): string {
  if (!/^--[a-z][a-z0-9-]*$/.test(longFlag)) throw new Error(`'${longFlag}' is not a long flag (--lower-case-name)`);
  return `OPERON_${longFlag.slice(2).toUpperCase().replaceAll("-", "_")}`;
}

/**
 * Flags whose variable holds a secret. environment.ts reads these once at
 * start and removes them from the environment (no child inherits them), so
 * commander must not look for them later; the CLI falls back to them itself.
 */
export const SECRET_FLAGS: ReadonlySet<string> = new Set(["--admin-password", "--database-url"]);

export const FLAG_ENVIRONMENT_HELP = `
Environment: every flag can be set by a variable named OPERON_ + the flag's name in upper case with
dashes as underscores (--http-port -> OPERON_HTTP_PORT, --allow-grpc -> OPERON_ALLOW_GRPC=false).
A flag given on the command line wins over its variable. A repeatable flag takes one value from its
variable. OPERON_ADMIN_PASSWORD and OPERON_DATABASE_URL are secrets: read once at start and removed
from the environment; DATABASE_URL is still read after OPERON_DATABASE_URL.`;

/**
 * Gives each long flag added to the command from now on its variable (see
 * flagEnvironmentVariable) and documents the rule in --help. Call it before
 * the flags are added: commander registers an option's variable when the
 * option is added (addOption, which .option() also goes through), so a
 * variable set on an option afterwards would show in --help but never be read.
 */
export function withFlagEnvironmentVariables(command: Command): Command {
  const addOption = command.addOption.bind(command);
  command.addOption = (option: Option): Command => {
    if (option.long !== undefined && option.long !== "--help") {
      const variable = flagEnvironmentVariable(option.long);
      if (SECRET_FLAGS.has(option.long))
        option.description += ` (env: ${variable}, a secret: read at start, then removed)`;
      else option.env(variable);
    }
    return addOption(option);
  };
  return command.addHelpText("after", FLAG_ENVIRONMENT_HELP);
}
