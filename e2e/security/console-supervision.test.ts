import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  childPids,
  EXAMPLE_REPOSITORY,
  processAlive,
  REPO_ROOT,
  startOperon,
  type RunningOperon,
} from "../support/operon-process.js";

// Finding 13: a killed console child process was not restarted. It is
// supervised now, with backoff, as workers are. Needs the built console
// (npm run build); skipped without it.

const consoleBuilt = existsSync(join(REPO_ROOT, "apps/console/.next/BUILD_ID"));

function consolePid(serverPid: number): number | undefined {
  return childPids(serverPid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("server.mjs");
    } catch {
      return false;
    }
  });
}

describe("console supervision", () => {
  let server: RunningOperon | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it.skipIf(!consoleBuilt)(
    "starts the console again after it is killed, and stops it with the server",
    async () => {
      server = await startOperon([
        "--control-plane",
        "--api-port",
        "0",
        "--console-port",
        "0",
        "--model-repository",
        EXAMPLE_REPOSITORY,
        "--model-control-mode",
        "explicit",
      ]);
      const first = consolePid(server.pid)!;
      expect(first).toBeDefined();
      process.kill(first, "SIGKILL");
      await server.waitForOutput(/console process restarted/, 30_000);
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = await fetch(`${server.consoleUrl}/sign-in`, { redirect: "manual" }).then(
          (response) => response.status,
          () => 0,
        );
        if (status > 0 && status < 500) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(status).toBeGreaterThan(0);
      expect(status).toBeLessThan(500);
      const second = consolePid(server.pid)!;
      expect(second).not.toBe(first);
      expect(await server.stop()).toBe(0);
      expect(processAlive(second)).toBe(false);
      server = undefined;
    },
    180_000,
  );

  // Issue 28, item 15: a console killed during start-up took the whole server down.
  it.skipIf(!consoleBuilt)(
    "starts the console again when it is killed during start-up, and the server comes up",
    async () => {
      const starting = startOperon(
        [
          "--control-plane",
          "--api-port",
          "0",
          "--console-port",
          "0",
          "--model-repository",
          EXAMPLE_REPOSITORY,
          "--model-control-mode",
          "explicit",
        ],
        {
          timeoutMs: 120_000,
        },
      );
      // The server is this test's child; its console is the server's child running server.mjs.
      let killed: number | undefined;
      const deadline = Date.now() + 90_000;
      while (killed === undefined && Date.now() < deadline) {
        for (const pid of childPids(process.pid)) {
          const found = consolePid(pid);
          if (found !== undefined) {
            process.kill(found, "SIGKILL");
            killed = found;
          }
        }
        if (killed === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(killed).toBeDefined();
      server = await starting;
      expect(server.output()).toMatch(/the console process exited; restarting it/);
      expect(server.output()).not.toMatch(/server failed to start/);
      const status = await fetch(`${server.consoleUrl}/sign-in`, { redirect: "manual" }).then(
        (response) => response.status,
      );
      expect(status).toBeLessThan(500);
      const now = consolePid(server.pid)!;
      expect(now).not.toBe(killed);
      expect(await server.stop()).toBe(0);
      server = undefined;
    },
    240_000,
  );
});
