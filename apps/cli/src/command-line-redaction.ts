/**
 * Keeps secrets given as flags out of the server's own command line
 * (/proc/<pid>/cmdline, ps). Node's process.title setter (libuv) writes the
 * title over the whole original argv area and zeroes the rest, so once set
 * the kernel shows the redacted line only. The window before this runs
 * (process start to the first line of main) is not covered: prefer
 * --admin-password-file or the environment (also removed, see
 * environment.ts) for secrets.
 */

/** Flags whose value is a secret (or may hold one: a PostgreSQL URL with a password). */
export const SECRET_FLAGS = ["--admin-password", "--password", "--database-url", "--batch-postgres"] as const;

const REDACTED = "***";

/** argv with the values of SECRET_FLAGS replaced by ***; undefined when there is nothing to hide. */
export function redactedCommandLine(argv: readonly string[]): string[] | undefined {
  let changed = false;
  const out: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    const flag = SECRET_FLAGS.find((name) => arg === name || arg.startsWith(`${name}=`));
    if (flag === undefined) {
      out.push(arg);
    } else if (arg === flag) {
      out.push(arg);
      if (i + 1 < argv.length) {
        out.push(REDACTED);
        i += 1;
      }
      changed = true;
    } else {
      out.push(`${flag}=${REDACTED}`);
      changed = true;
    }
  }
  return changed ? out : undefined;
}

/** Rewrites this process's visible command line when it carries a secret flag; true when it did. */
export function redactOwnCommandLine(argv: readonly string[] = process.argv): boolean {
  const redacted = redactedCommandLine(argv);
  if (redacted === undefined) return false;
  process.title = redacted.join(" ");
  return true;
}
