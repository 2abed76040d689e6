import { describe, expect, it } from "vitest";
import { startLoopHoldClock } from "./loop-hold-clock.js";

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe("startLoopHoldClock", () => {
  it('says by the "checked" clock that a short run kept the CPU, with its wall time', () => {
    // A run short enough to finish within one timeslice most of the time: a few tries.
    let hold = { ns: 0, preempted: true as boolean | undefined };
    for (let attempt = 0; attempt < 50 && hold.preempted === true; attempt += 1) {
      const stop = startLoopHoldClock("checked");
      let x = 0;
      for (let i = 0; i < 10_000; i += 1) x += i;
      hold = stop();
      expect(x).toBeGreaterThan(0);
    }
    expect(hold.preempted).toBe(false);
    expect(hold.ns).toBeGreaterThan(0);
    expect(hold.ns).toBeLessThan(20e6);
  });

  it('says by the "checked" clock that the thread left the CPU in a span (as when the OS preempts it)', () => {
    const stop = startLoopHoldClock("checked");
    sleep(20);
    expect(stop()).toMatchObject({ preempted: true });
  });

  it('counts that span whole by the "wall" clock', () => {
    const stop = startLoopHoldClock("wall");
    sleep(50);
    const hold = stop();
    expect(hold.ns).toBeGreaterThanOrEqual(49e6);
    expect(hold.preempted).toBeUndefined();
  });
});
