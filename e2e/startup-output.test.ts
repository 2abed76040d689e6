import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, OPERON_BIN, REPO_ROOT } from "./support/operon-process.js";

// Issue 27 item 10: started at a terminal, `operon serve` printed ~30 JSON log lines before the lines a person acts
// on (the URLs, the first-run link). At a terminal the JSON log now goes to <data-dir>/logs/operon.log, warnings
// still to the terminal; piped (a collector, the other system tests), it stays on stdout.
const dataDir = mkdtempSync(join(tmpdir(), "operon-startup-output-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;

/** `operon serve` under a pseudo-terminal (util-linux script), until it prints its HTTP line; then stopped. */
async function serveAtTerminal(extra: string[]): Promise<string> {
  const command = [
    process.execPath,
    OPERON_BIN,
    "serve",
    ...["--http-port", "0", "--grpc-port", "0", "--metrics-port", "0", "--control-plane=false"],
    ...["--data-dir", dataDir, "--model-repository", EXAMPLE_REPOSITORY, "--model-control-mode", "explicit"],
    ...["--load-model", "add_sub", ...extra],
  ]
    .map(quote)
    .join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => void (output += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const deadline = Date.now() + 60_000;
    while (!/Operon HTTP on http:\S+/.test(output) || !/\r?\n/.test(output.slice(output.indexOf("Operon HTTP on")))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no HTTP line:\n${output.slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The lines after it (the log's place) come at once.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return output;
  } finally {
    process.kill(-child.pid!, "SIGTERM");
    await exited;
  }
}

describe("operon serve's start-up output at a terminal", () => {
  it("shows the server's own lines, not its JSON log, which goes to <data-dir>/logs/operon.log", async () => {
    const output = await serveAtTerminal([]);
    const lines = output.split(/\r?\n/).filter((line) => line.trim() !== "");
    // No info-level JSON line on the terminal at all; warnings (level 40 and up) may show, and nothing else.
    expect(lines.filter((line) => line.includes('"level":30'))).toEqual([]);
    const http = lines.findIndex((line) => line.startsWith("Operon HTTP on http://"));
    expect(http).toBeGreaterThanOrEqual(0);
    for (const line of lines.slice(0, http)) expect(line).toMatch(/"level":(40|50|60)/);
    const logFile = join(dataDir, "logs", "operon.log");
    expect(lines.slice(http)).toContain(
      `Operon log (JSON lines) in ${logFile}; warnings also here (--log-file - prints it all here)`,
    );
    const log = readFileSync(logFile, "utf8");
    expect(log).toContain('"msg":"Operon is serving"');
  }, 90_000);

  it("prints the JSON log at the terminal with --log-file -", async () => {
    rmSync(join(dataDir, "logs"), { recursive: true, force: true });
    const output = await serveAtTerminal(["--log-file", "-"]);
    expect(output).toContain('"msg":"Operon is serving"');
    expect(output).not.toContain("Operon log (JSON lines) in");
    expect(existsSync(join(dataDir, "logs", "operon.log"))).toBe(false);
  }, 90_000);
});
