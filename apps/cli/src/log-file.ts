import { join } from "node:path";

/**
 * Where `operon serve` writes its JSON log (--log-file): a person starting it
 * at a terminal should see the lines that tell them what to do (the URLs, the
 * first-run link), not ~30 lines of JSON before them (issue 27 item 10). So:
 * - `--log-file -`: stdout, as before;
 * - `--log-file <path>`: that file (warnings and errors also on stderr);
 * - not given: stdout when it is not a terminal (a service manager, a
 *   container, a test collects it), else `<data-dir>/logs/operon.log`.
 * Returns the file, or undefined for stdout.
 */
export function logFileOf(flag: string | undefined, stdoutIsTerminal: boolean, dataDir: string): string | undefined {
  if (flag === "-") return undefined;
  if (flag !== undefined && flag.trim() !== "") return flag;
  return stdoutIsTerminal ? join(dataDir, "logs", "operon.log") : undefined;
}
