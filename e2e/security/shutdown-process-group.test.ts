import { afterAll, describe, expect, it } from "vitest";
import {
  childPids,
  EXAMPLE_REPOSITORY,
  processAlive,
  startOperon,
  workerProcesses,
  type RunningOperon,
} from "../support/operon-process.js";

// Finding 15: SIGTERM to the whole process group (what a terminal's Ctrl-C,
// systemd or a container runtime sends) reached the workers too; the
// server restarted them while it shut down, and they outlived it by ~20 s.

describe("shutdown by a signal to the process group", () => {
  let server: RunningOperon | undefined;
  afterAll(async () => {
    if (server && processAlive(server.pid)) process.kill(-server.pid, "SIGKILL");
  });

  it("restarts no worker and leaves no process behind", async () => {
    server = await startOperon(
      [
        "--control-plane",
        "--console=false",
        "--api-port",
        "0",
        "--model-repository",
        EXAMPLE_REPOSITORY,
        "--model-control-mode",
        "explicit",
        "--load-model",
        "text_generator",
        "--load-model",
        "tokenizer_ts",
      ],
      { detached: true },
    );
    const workers = workerProcesses(server.pid);
    expect(workers.length).toBeGreaterThanOrEqual(2);
    // A stream in flight keeps the drain going while the workers are gone.
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const inFlight = fetch(`${server.httpUrl}/v2/models/text_generator/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ text_input: words, parameters: {} }),
    })
      .then((response) => response.text())
      .catch(() => "");
    process.kill(-server.pid, "SIGTERM");
    let seenLater = new Set<number>();
    const watch = setInterval(() => {
      for (const pid of childPids(server!.pid)) seenLater.add(pid);
    }, 20);
    const { code } = await server.exited;
    clearInterval(watch);
    await inFlight;
    expect(code).toBe(0);
    expect(server.output()).not.toMatch(/backend worker restarted|exited unexpectedly; restarting/);
    const started = [...seenLater].filter((pid) => !workers.some((worker) => worker.pid === pid));
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const pid of [...workers.map((worker) => worker.pid), ...started])
      expect(processAlive(pid), `process ${pid} outlived the server`).toBe(false);
    seenLater = new Set();
  }, 120_000);
});
