import { execFileSync, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { type DecodedFrame, FrameDecoder } from "@operon/protocol/worker-frame-codec";
import { ExecuteWatchdog } from "./execute-watchdog.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const WATCHDOG = pathToFileURL(path.join(ROOT, "packages/worker/dist/execute-watchdog.js")).href;

beforeAll(() => {
  // The child processes below run the built module.
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], {
    cwd: ROOT,
    stdio: "inherit",
  });
});

/** Runs a process that arms a guard over `ids` and then spins forever; returns its fd 3 frames, stderr and exit. */
async function hangUnderGuard(options: { decoupled: boolean; ids: number[]; idle?: boolean }): Promise<{
  frames: DecodedFrame[];
  stderr: string;
  signal: NodeJS.Signals | null;
  elapsedMs: number;
}> {
  const script = `
import { ExecuteWatchdog } from ${JSON.stringify(WATCHDOG)};
const guard = await ExecuteWatchdog.start({
  timeoutMs: 300, message: "model 'spin' execute timed out after 300 ms", decoupled: ${options.decoupled},
  channelFd: 3, instance: "spin_0", channelIdle: () => ${options.idle ?? true},
});
guard.arm(${JSON.stringify(options.ids)});
while (true) {}
`;
  const started = performance.now();
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "inherit", "pipe", "pipe"],
  });
  const decoder = new FrameDecoder();
  const frames: DecodedFrame[] = [];
  (child.stdio[3] as Readable).on("data", (chunk: Buffer) => frames.push(...decoder.push(chunk)));
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("close", (_code, sig) => resolve(sig)),
  );
  return { frames, stderr, signal, elapsedMs: performance.now() - started };
}

describe("ExecuteWatchdog", () => {
  it("fails the armed requests on the channel and SIGKILLs a process stuck in a synchronous loop", async () => {
    const { frames, stderr, signal, elapsedMs } = await hangUnderGuard({ decoupled: false, ids: [5, 6] });
    expect(signal).toBe("SIGKILL");
    expect(elapsedMs).toBeLessThan(5000);
    expect(frames.map((frame) => frame.header)).toEqual([
      { type: "error", requestId: 5, kind: "UNAVAILABLE", message: "model 'spin' execute timed out after 300 ms" },
      { type: "error", requestId: 6, kind: "UNAVAILABLE", message: "model 'spin' execute timed out after 300 ms" },
    ]);
    const line = JSON.parse(stderr.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: "error",
      instance: "spin_0",
      wireRequestIds: [5, 6],
      timeoutMs: 300,
      reported: true,
    });
  });

  it("ends decoupled requests with a final response-error; writes no frame when the channel may hold a partial one", async () => {
    const decoupled = await hangUnderGuard({ decoupled: true, ids: [9] });
    expect(decoupled.frames.map((frame) => frame.header)).toEqual([
      {
        type: "response-error",
        requestId: 9,
        final: true,
        kind: "UNAVAILABLE",
        message: "model 'spin' execute timed out after 300 ms",
      },
    ]);
    const busy = await hangUnderGuard({ decoupled: false, ids: [1], idle: false });
    expect(busy.signal).toBe("SIGKILL");
    expect(busy.frames).toEqual([]);
    expect(busy.stderr).toContain('"reported":false');
  });

  it("does not fire for executes that return in time, however many", async () => {
    // If it fired, it would kill this very process.
    const guard = await ExecuteWatchdog.start({
      timeoutMs: 100,
      message: "never",
      decoupled: false,
      instance: "ok_0",
      channelIdle: () => true,
    });
    for (let i = 0; i < 10_000; i += 1) guard.arm([i])();
    const disarm = guard.arm([1]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    disarm();
    await new Promise((resolve) => setTimeout(resolve, 200));
    guard.close();
    guard.close();
    expect(guard.arm([2])).toBeTypeOf("function");
  });
});
