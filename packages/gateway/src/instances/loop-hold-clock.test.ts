import { describe, expect, it } from "vitest";
import { startLoopHoldClock } from "./loop-hold-clock.js";

describe("startLoopHoldClock", () => {
  it("reads the CPU a busy run used", () => {
    const stop = startLoopHoldClock();
    const until = performance.now() + 20;
    while (performance.now() < until) {}
    const ns = stop();
    // getrusage counts in µs, and another thread of the process may add a little.
    expect(ns).toBeGreaterThan(15e6);
    expect(ns).toBeLessThan(200e6);
  });

  it("does not count time the thread spent off the CPU (here: sleeping, as when the OS preempts it)", async () => {
    const stop = startLoopHoldClock();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    expect(stop()).toBeLessThan(20e6);
  });
});
