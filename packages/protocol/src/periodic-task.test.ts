import { afterEach, describe, expect, it, vi } from "vitest";
import { PeriodicTask } from "./periodic-task.js";

describe("PeriodicTask", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs every interval, and once at start when asked", async () => {
    vi.useFakeTimers();
    let runs = 0;
    const task = new PeriodicTask(() => (runs += 1), { intervalMs: 100, runAtStart: true, onError: () => undefined });
    task.start();
    task.start(); // idempotent: one timer
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(350);
    expect(runs).toBe(4);
    await task.stop();
    await vi.advanceTimersByTimeAsync(500);
    expect(runs).toBe(4);
  });

  it("never overlaps runs: a tick during a run is skipped", async () => {
    vi.useFakeTimers();
    let started = 0;
    let release: () => void = () => undefined;
    const task = new PeriodicTask(
      () => {
        started += 1;
        return new Promise<void>((resolve) => (release = resolve));
      },
      { intervalMs: 10, onError: () => undefined },
    );
    task.start();
    await vi.advanceTimersByTimeAsync(55);
    expect(started).toBe(1);
    release();
    await vi.advanceTimersByTimeAsync(10);
    expect(started).toBe(2);
    release();
    await task.stop();
  });

  it("reports failures to onError and keeps running", async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let calls = 0;
    const task = new PeriodicTask(
      () => {
        calls += 1;
        if (calls === 1) throw new Error("sync failure");
        return Promise.reject(new Error("async failure"));
      },
      { intervalMs: 10, onError: (error) => errors.push(error) },
    );
    task.start();
    await vi.advanceTimersByTimeAsync(25);
    expect((errors as Error[]).map((error) => error.message)).toEqual(["sync failure", "async failure"]);
    await task.stop();
  });

  it("waits in stop() for the run in progress, and does nothing when the interval is 0", async () => {
    let finished = false;
    const task = new PeriodicTask(
      () => new Promise<void>((resolve) => setTimeout(() => ((finished = true), resolve()), 20)),
      { intervalMs: 1_000, runAtStart: true, onError: () => undefined },
    );
    task.start();
    await task.stop();
    expect(finished).toBe(true);
    const idle = new PeriodicTask(() => undefined, { intervalMs: 0, onError: () => undefined });
    idle.start();
    expect(idle.started).toBe(false);
  });
});
