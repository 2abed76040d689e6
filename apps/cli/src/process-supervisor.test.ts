import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ProcessSupervisor } from "./process-supervisor.js";

// Finding 13: a killed console child process was not restarted.

const sleeper = () => spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
const alive = (pid: number | undefined): boolean => {
  try {
    process.kill(pid!, 0);
    return true;
  } catch {
    return false;
  }
};
const until = async (condition: () => boolean, timeoutMs = 5_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe("ProcessSupervisor", () => {
  it("restarts a killed child with a growing backoff, and stops restarting on stop()", async () => {
    const restarts: Array<{ attempt: number; delayMs: number }> = [];
    const supervisor = new ProcessSupervisor({
      spawn: sleeper,
      initialBackoffMs: 50,
      onRestart: ({ attempt, delayMs }) => restarts.push({ attempt, delayMs }),
    });
    const first = supervisor.current.pid;
    supervisor.current.kill("SIGKILL");
    await until(() => restarts.length === 1);
    const second = supervisor.current.pid;
    expect(second).not.toBe(first);
    expect(alive(second)).toBe(true);
    supervisor.current.kill("SIGKILL");
    await until(() => restarts.length === 2);
    expect(restarts).toEqual([
      { attempt: 1, delayMs: 50 },
      { attempt: 2, delayMs: 100 },
    ]);
    const last = supervisor.current.pid;
    await supervisor.stop();
    expect(alive(last)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toHaveLength(2);
  });

  it("does not restart a child that dies while stopping", async () => {
    let spawned = 0;
    const supervisor = new ProcessSupervisor({ spawn: () => (spawned++, sleeper()), initialBackoffMs: 10 });
    supervisor.current.kill("SIGKILL");
    await supervisor.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(spawned).toBe(1);
  });
});
