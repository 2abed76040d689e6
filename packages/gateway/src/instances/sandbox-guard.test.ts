import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SANDBOX_CHECK_INTERVAL_MS, SandboxGuard } from "./sandbox-guard.js";

/** A worker as the guard sees it, with its usage set by the test. */
class FakeWorker extends EventEmitter {
  readonly pid = 4242;
  inFlight = 0;
  sentAt: number | undefined;
  stopped: string[] = [];
  oldestExecuteSentAt(): number | undefined {
    return this.sentAt;
  }
  terminate(reason: string): void {
    this.stopped.push(reason);
  }
}

const LIMITS = { memoryMb: 100, cpuMsPerExecution: 1000, executeTimeoutMs: 5000 };

describe("SandboxGuard", () => {
  let worker: FakeWorker;
  let usage: { cpuMs: number; rssBytes: number } | undefined;

  beforeEach(() => {
    vi.useFakeTimers();
    worker = new FakeWorker();
    usage = { cpuMs: 50_000, rssBytes: 10 * 1024 * 1024 };
    new SandboxGuard(worker, LIMITS, () => usage);
  });
  afterEach(() => vi.useRealTimers());

  const tick = () => vi.advanceTimersByTime(SANDBOX_CHECK_INTERVAL_MS);

  it("counts CPU time from the moment the worker became busy, not the process's lifetime", () => {
    worker.inFlight = 1;
    tick();
    usage = { cpuMs: 50_900, rssBytes: usage!.rssBytes };
    tick();
    expect(worker.stopped).toEqual([]);
    usage = { cpuMs: 51_001, rssBytes: usage.rssBytes };
    tick();
    expect(worker.stopped).toEqual(["it used more than its CPU time limit of 1000 ms (sandbox)"]);
  });

  it("starts the CPU budget over after an idle moment", () => {
    worker.inFlight = 1;
    tick();
    usage = { cpuMs: 50_800, rssBytes: usage!.rssBytes };
    tick();
    worker.inFlight = 0;
    tick();
    worker.inFlight = 1;
    tick();
    usage = { cpuMs: 51_500, rssBytes: usage.rssBytes };
    tick();
    expect(worker.stopped).toEqual([]);
  });

  it("stops a busy worker over its resident memory, and leaves an idle one to the recycler", () => {
    usage = { cpuMs: 50_000, rssBytes: 200 * 1024 * 1024 };
    tick();
    expect(worker.stopped).toEqual([]);
    worker.inFlight = 1;
    tick();
    expect(worker.stopped).toEqual(["its resident memory (200 MiB) went over its limit of 100 MiB (sandbox)"]);
  });

  it("stops a worker whose oldest execute is older than the execute timeout", () => {
    worker.inFlight = 1;
    worker.sentAt = Date.now();
    vi.advanceTimersByTime(5000);
    expect(worker.stopped).toEqual([]);
    tick();
    expect(worker.stopped).toEqual(["an execute did not return within 5000 ms (sandbox)"]);
  });

  it("stops checking once the worker has exited", () => {
    worker.emit("exit");
    worker.inFlight = 1;
    usage = { cpuMs: 1e9, rssBytes: 1e12 };
    tick();
    tick();
    expect(worker.stopped).toEqual([]);
  });
});
