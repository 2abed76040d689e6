import { describe, expect, it } from "vitest";
import { startLoopHoldClock, thirdField } from "./loop-hold-clock.js";

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

  it("does not ask whether a span no longer than checkOverNs was interrupted, and does for a longer one", () => {
    const short = startLoopHoldClock("checked", 10e9);
    sleep(20);
    expect(short()).toMatchObject({ preempted: undefined });
    const long = startLoopHoldClock("checked", 1e6);
    sleep(20);
    expect(long()).toMatchObject({ preempted: true });
  });

  it('counts that span whole by the "wall" clock', () => {
    const stop = startLoopHoldClock("wall");
    sleep(50);
    const hold = stop();
    expect(hold.ns).toBeGreaterThanOrEqual(49e6);
    expect(hold.preempted).toBeUndefined();
  });
});

describe("thirdField", () => {
  const bytes = (text: string) => Buffer.from(text, "latin1");
  it("reads schedstat's switch count, the third field, from the bytes", () => {
    const line = bytes("123456789 98765 4242\n");
    expect(thirdField(line, line.length)).toBe(4242);
    // Only the bytes read count: a shorter read of the same buffer ends the number early.
    expect(thirdField(line, line.length - 3)).toBe(42);
  });
  it("is NaN when there is no third field or it is not a number", () => {
    const two = bytes("1 2");
    expect(thirdField(two, two.length)).toBeNaN();
    const word = bytes("1 2 x");
    expect(thirdField(word, word.length)).toBeNaN();
  });
});
