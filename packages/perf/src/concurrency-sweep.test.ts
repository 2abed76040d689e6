import { describe, expect, it } from "vitest";
import { representativeStep, runConcurrencySweep, sweepConcurrencies, type SweepClock } from "./concurrency-sweep.js";

/** A clock that moves only when a measure says how long it took. */
function fakeClock(): SweepClock & { advance(ms: number): void } {
  let now = 0;
  const timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  return {
    now: () => now,
    setTimer: (ms, fn) => {
      const timer = { at: now + ms, fn, live: true };
      timers.push(timer);
      return () => {
        timer.live = false;
      };
    },
    advance(ms) {
      now += ms;
      for (const timer of timers) {
        if (timer.live && timer.at <= now) {
          timer.live = false;
          timer.fn();
        }
      }
    },
  };
}

const plan = { maxConcurrency: 64, minGainPercent: 5, timeBoundMs: 60_000 };

describe("sweepConcurrencies", () => {
  it("doubles up to the maximum, which is always measured", () => {
    expect(sweepConcurrencies(1)).toEqual([1]);
    expect(sweepConcurrencies(8)).toEqual([1, 2, 4, 8]);
    expect(sweepConcurrencies(12)).toEqual([1, 2, 4, 8, 12]);
  });
});

describe("runConcurrencySweep", () => {
  it("stops once a step gains less than minGainPercent over the best so far", async () => {
    const clock = fakeClock();
    const curve: Record<number, number> = { 1: 100, 2: 190, 4: 300, 8: 310, 16: 320 };
    const outcome = await runConcurrencySweep(
      plan,
      async (concurrency) => {
        clock.advance(1000);
        return { concurrency, throughput: curve[concurrency]! };
      },
      { clock },
    );
    expect(outcome.steps.map((step) => step.concurrency)).toEqual([1, 2, 4, 8]);
    expect(outcome.stopReason).toBe("plateau");
  });

  it("stops at the maximum concurrency while the throughput keeps rising", async () => {
    const clock = fakeClock();
    const outcome = await runConcurrencySweep(
      { ...plan, maxConcurrency: 4 },
      async (concurrency) => ({ concurrency, throughput: concurrency * 100 }),
      { clock },
    );
    expect(outcome).toEqual({
      steps: [1, 2, 4].map((c) => ({ concurrency: c, throughput: c * 100 })),
      stopReason: "max-concurrency",
    });
  });

  it("stops the step running at the time bound through its signal and keeps what it measured", async () => {
    const clock = fakeClock();
    const signals: AbortSignal[] = [];
    const outcome = await runConcurrencySweep(
      { ...plan, timeBoundMs: 2500 },
      async (concurrency, signal) => {
        signals.push(signal);
        clock.advance(1000);
        // The third step is partial: the deadline aborted it.
        return { concurrency, throughput: concurrency * 100, aborted: signal.aborted };
      },
      { clock },
    );
    expect(outcome.stopReason).toBe("time-bound");
    expect(outcome.steps.map((step) => [step.concurrency, step.aborted])).toEqual([
      [1, false],
      [2, false],
      [4, true],
    ]);
    expect(signals[2]!.reason).toEqual(new Error("the time bound of the plan was reached"));
  });

  it("stops when a step measures nothing, and when the caller aborts", async () => {
    const clock = fakeClock();
    expect(await runConcurrencySweep(plan, async () => undefined, { clock })).toEqual({
      steps: [],
      stopReason: "no-throughput",
    });
    const controller = new AbortController();
    const outcome = await runConcurrencySweep(
      plan,
      async (concurrency, signal) => {
        if (concurrency === 2) controller.abort(new Error("cancelled"));
        return { concurrency, throughput: 100 * concurrency, sawAbort: signal.aborted };
      },
      { clock, signal: controller.signal },
    );
    expect(outcome.stopReason).toBe("aborted");
    expect(outcome.steps.map((step) => [step.concurrency, step.sawAbort])).toEqual([
      [1, false],
      [2, true],
    ]);
  });
});

describe("sweeps under a p99 budget (the config search's candidates)", () => {
  const step = (concurrency: number, throughput: number, latencyP99Us: number | null) => ({
    concurrency,
    throughput,
    latencyP99Us,
  });

  it("keeps the first step over the budget, stops there, and reads the best step within it", async () => {
    const outcome = await runConcurrencySweep({ maxConcurrency: 16, minGainPercent: 5, p99BudgetUs: 2500 }, async (c) =>
      step(c, 100 * c, 1000 * c),
    );
    expect(outcome.steps.map((s) => s.concurrency)).toEqual([1, 2, 4]);
    expect(outcome.stopReason).toBe("p99-budget");
    expect(representativeStep(outcome.steps, 2500)?.concurrency).toBe(2);
  });

  it("stops at a step where no request succeeded", async () => {
    const outcome = await runConcurrencySweep({ maxConcurrency: 8, minGainPercent: 5, p99BudgetUs: 1e9 }, async (c) =>
      step(c, c === 2 ? 5 : 100 * c, c === 2 ? null : 10),
    );
    expect(outcome.steps.map((s) => s.concurrency)).toEqual([1, 2]);
    expect(outcome.stopReason).toBe("p99-budget");
  });

  it("falls back to the lowest concurrency when no step is within budget", () => {
    expect(representativeStep([step(1, 100, 9000), step(2, 150, 12000)], 1000)?.concurrency).toBe(1);
    expect(representativeStep([], 1000)).toBeUndefined();
  });
});
