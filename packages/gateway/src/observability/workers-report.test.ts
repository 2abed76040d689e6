import { describe, expect, it } from "vitest";
import { workersReport } from "./workers-report.js";

const INSTANCE = {
  backend: "onnxruntime",
  kind: "CPU" as const,
  device: null,
  state: "READY" as const,
  inFlight: 0,
  restarts: 0,
  startedAt: null,
};

describe("workersReport", () => {
  it("reports an inline instance's time on the event loop as its CPU, and no memory of its own", async () => {
    const report = await workersReport(
      [
        {
          model: "tiny",
          version: "1",
          instances: [
            { ...INSTANCE, instance: "tiny_0", isolation: "inline", pid: process.pid, executeSeconds: 0.25 },
            { ...INSTANCE, instance: "tiny_1", isolation: "inline", pid: process.pid },
          ],
        },
      ],
      [],
      "auto",
    );
    expect(report.workers.map((worker) => [worker.instance, worker.cpuSeconds, worker.rssBytes])).toEqual([
      ["tiny_0", 0.25, null],
      ["tiny_1", null, null],
    ]);
    // The internal field does not leak into the protocol's rows.
    expect(report.workers[0]).not.toHaveProperty("executeSeconds");
    expect(report.defaultIsolation).toBe("auto");
    expect(report.gateway.pid).toBe(process.pid);
  });

  it("never takes a thread's or a process's CPU from its executions", async () => {
    const report = await workersReport(
      [
        {
          model: "m",
          version: "1",
          instances: [{ ...INSTANCE, instance: "m_0", isolation: "process", pid: null, executeSeconds: 9 }],
        },
      ],
      [],
    );
    expect(report.workers[0]!.cpuSeconds).toBeNull();
  });
});
