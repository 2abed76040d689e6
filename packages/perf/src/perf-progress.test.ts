import { describe, expect, it } from "vitest";
import { type PerfProgress, formatProgress, progressWriter } from "./perf-progress.js";

const window: PerfProgress = {
  phase: "window",
  stepIndex: 1,
  stepCount: 4,
  load: { concurrency: 2 },
  window: 3,
  maxWindows: 10,
  requests: 420,
  errors: 0,
  throughputInferPerSec: 840.04,
  avgLatencyUs: 2380.6,
  stable: true,
};

function stream(isTTY: boolean) {
  const chunks: string[] = [];
  return { isTTY, chunks, write: (chunk: string) => (chunks.push(chunk), true) } as unknown as NodeJS.WritableStream & {
    isTTY: boolean;
    chunks: string[];
  };
}

describe("progress", () => {
  it("formats a window and a step start", () => {
    expect(formatProgress(window)).toBe(
      "[2/4] concurrency 2: window 3/10, 840.0 infer/sec, avg latency 2381 usec, 420 requests, stable",
    );
    expect(formatProgress({ ...window, phase: "step", load: { requestRate: 50 } })).toBe(
      "[2/4] request rate 50/s: measuring...",
    );
    expect(formatProgress({ ...window, errors: 3, stable: false })).toContain("420 requests, 3 errors");
  });

  it("rewrites one line in place on a terminal", () => {
    const out = stream(true);
    const writer = progressWriter(out);
    writer.update({ ...window, phase: "step" });
    writer.update(window);
    writer.finish();
    writer.finish();
    expect(out.chunks).toEqual([
      "\r[2/4] concurrency 2: measuring...\x1b[K",
      `\r${formatProgress(window)}\x1b[K`,
      "\n",
    ]);
  });

  it("writes one line per window elsewhere", () => {
    const out = stream(false);
    const writer = progressWriter(out);
    writer.update({ ...window, phase: "step" });
    writer.update(window);
    writer.finish();
    expect(out.chunks).toEqual([`${formatProgress(window)}\n`]);
  });
});
