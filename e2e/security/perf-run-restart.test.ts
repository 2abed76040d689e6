import { afterAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Issue 28, item 16: a perf run cut off by a restart kept none of its completed steps
// ("0 samples kept"): they were written only when the whole run ended.

describe("a perf run killed by a restart keeps the steps it measured", () => {
  const servers: RunningOperon[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop().catch(() => undefined);
  });

  it("stores each step as it completes; after the restart the run is FAILED with its samples", async () => {
    const first = await startControlPlaneServer();
    servers.push(first);
    const admin = await signedIn(first);
    await admin.client.perf.updateSettings.mutate({ enabled: false });
    const { id } = await admin.client.perf.start.mutate({
      target: { kind: "MODEL", name: "add_sub" },
      concurrency: { start: 1, end: 8, step: 1 },
      measurementIntervalMs: 300,
      maxTrials: 3,
    });
    let completed = 0;
    for (let i = 0; i < 300 && completed < 2; i += 1) {
      completed = (await admin.client.perf.progress.query({ id })).completedSteps;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(completed).toBeGreaterThanOrEqual(2);
    // A crash, not a clean stop: nothing gets the chance to write the run's result.
    first.process.kill("SIGKILL");
    await first.exited;

    const second = await startControlPlaneServer([], { dataDir: first.dataDir });
    servers.push(second);
    const again = await signedIn(second);
    const report = await again.client.perf.get.query({ id });
    expect(report.status).toBe("FAILED");
    expect(report.samples.length).toBeGreaterThanOrEqual(2);
    expect(report.error).toBe(`interrupted by a restart (${report.samples.length} steps measured before it are kept)`);
    expect(report.samples.map((sample) => sample.concurrency).slice(0, 2)).toEqual([1, 2]);
    expect(second.output()).toMatch(/perf runs interrupted by a restart marked failed/);
  }, 180_000);
});
