import { describe, expect, it } from "vitest";
import { AimdLimiter, initialJobLimit, jobLimitCeiling, type AimdOptions, type OnlineSample } from "./aimd.js";

/** `count` online requests over a 1 s span with this p99. */
const online = (p99Ms: number | null, count = 100): OnlineSample => ({ spanMs: 1000, count, p99Ms });

/** A limiter past its first probe, which measured an online p99 of `baselineMs` (budget: +10 %); every window is a step. */
function probed(options: Partial<AimdOptions> & { baselineMs?: number } = {}): AimdLimiter {
  const limiter = new AimdLimiter({ budgetMs: 50, probeWindows: 1, onlineSpanWindows: 1, ...options });
  limiter.window(online(options.baselineMs ?? 20));
  return limiter;
}

/** One window in which the job's requests took `jobMs` and online clients saw `onlineSample`. */
function window(limiter: AimdLimiter, jobMs: number, onlineSample: OnlineSample | undefined) {
  for (let i = 0; i < 10; i += 1) limiter.record(jobMs);
  return limiter.window(onlineSample);
}

describe("AIMD concurrency of a batch job, driven by online p99", () => {
  it("sends nothing until a probe has measured online latency without the job, then starts at its initial limit", () => {
    const limiter = new AimdLimiter({ budgetMs: 50, initial: 3, firstProbeSpanWindows: 10 });
    expect(limiter.probing).toBe(true);
    expect(limiter.limit).toBe(0);
    // The first probe reads the online history from before the job started, too.
    expect(limiter.firstProbe).toBe(true);
    expect(limiter.readWindows).toBe(10);
    expect(limiter.window(online(18)).reason).toBe("probe");
    expect(limiter.limit).toBe(0);
    const end = limiter.window(online(20));
    expect(end).toMatchObject({ reason: "baseline", limit: 3 });
    expect(limiter.firstProbe).toBe(false);
    expect(limiter.baselineMs).toBe(20);
    expect(limiter.onlineBudgetMs).toBeCloseTo(22);
  });

  it("holds one limit for a step of onlineSpanWindows windows and judges online p99 over that step only", () => {
    const limiter = probed({ initial: 2, onlineSpanWindows: 3 });
    // The read reaches back over the step so far, never into the limit before it.
    expect(limiter.readWindows).toBe(1);
    // A window over budget in the middle of a step decides nothing: one window's p99 is noise.
    expect(window(limiter, 5, online(40))).toMatchObject({ reason: "hold", limit: 2 });
    expect(limiter.readWindows).toBe(2);
    expect(window(limiter, 5, online(21))).toMatchObject({ reason: "hold", limit: 2 });
    expect(limiter.readWindows).toBe(3);
    expect(window(limiter, 5, online(21))).toMatchObject({ reason: "clear", limit: 3 });
    // A new step at the new limit.
    expect(limiter.readWindows).toBe(1);
    window(limiter, 5, online(23));
    window(limiter, 5, online(23));
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 3 });
  });

  it("holds its limit within the online budget but not clearly within it (the set point), and cuts by a quarter when a second step in a row is over it", () => {
    const limiter = probed({ initial: 9, max: 10 });
    // 21.5 ms: within the 22 ms budget, but more than half the tolerance over the 20 ms baseline.
    expect(window(limiter, 5, online(21.5))).toMatchObject({ reason: "steady", limit: 9 });
    expect(window(limiter, 5, online(21.9))).toMatchObject({ reason: "steady", limit: 9 });
    // 23 ms is more than 10 % over 20 ms; the job's own latency (5 ms) is fine: online p99 decides.
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 9 });
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "online-over", limit: 6 });
    // Each cut needs its own two steps over in a row: the first after a cut holds.
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 6 });
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "online-over", limit: 5 });
  });

  it("does not cut on one step just over the budget: the limit holds, and a step within it after forgets it", () => {
    const limiter = probed({ initial: 9, max: 20 });
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 9 });
    expect(window(limiter, 5, online(21.5))).toMatchObject({ reason: "steady", limit: 9 });
    // Over again after a step within it: a first over once more, not a confirmed one.
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 9 });
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "online-over", limit: 6 });
  });

  it("grows by half while online p99 is clearly within budget and its own requests' p90 within budgetMs, by one otherwise", () => {
    const limiter = probed({ initial: 4, max: 64, budgetMs: 50 });
    // 21 ms: half the tolerance over the 20 ms baseline, at most.
    expect(window(limiter, 5, online(21))).toMatchObject({ reason: "clear", limit: 6 });
    expect(window(limiter, 5, online(18))).toMatchObject({ reason: "clear", limit: 9 });
    // Its own requests queue (p90 80 ms over 50 ms): more of them would only wait, so one more.
    expect(window(limiter, 80, online(18))).toMatchObject({ reason: "within", limit: 10 });
    // At least one more at a small limit, and never past max.
    const small = probed({ initial: 1, max: 3 });
    expect(window(small, 5, online(20))).toMatchObject({ reason: "clear", limit: 2 });
    expect(window(small, 5, online(20))).toMatchObject({ reason: "clear", limit: 3 });
    expect(window(small, 5, online(20))).toMatchObject({ reason: "clear", limit: 3 });
    expect(() => new AimdLimiter({ budgetMs: 50, growth: 1 })).toThrow(/growth must be over 1/);
  });

  it("forgets a step over the budget at a probe: the first step after it is a first over again", () => {
    const limiter = probed({ initial: 9, probeEveryWindows: 2 });
    window(limiter, 5, online(21.5));
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 9 });
    expect(limiter.probing).toBe(true);
    limiter.window(online(20));
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "over-once", limit: 9 });
  });

  it("starts a job at two executions' worth of its requests per instance", () => {
    // A batch of 4, 2 rows a request, one instance: 2 requests fill an execution.
    expect(initialJobLimit({ maxBatchSize: 4, instances: 1 }, 2)).toBe(4);
    expect(initialJobLimit({ maxBatchSize: 8, instances: 2 }, 3)).toBe(12);
    // A model that does not batch, or a config that does not say how many instances: one.
    expect(initialJobLimit({ maxBatchSize: 0 }, 1)).toBe(2);
  });

  it("caps a job at four executions' worth of its requests per instance, where a cut still empties executions", () => {
    expect(jobLimitCeiling({ maxBatchSize: 4, instances: 1 }, 2)).toBe(8);
    expect(jobLimitCeiling({ maxBatchSize: 8, instances: 2 }, 3)).toBe(24);
    // Growing clearly within budget stops at the ceiling.
    const limiter = probed({ initial: 6, max: jobLimitCeiling({ maxBatchSize: 4, instances: 1 }, 2) });
    expect(window(limiter, 5, online(20))).toMatchObject({ reason: "clear", limit: 8 });
    expect(window(limiter, 5, online(20))).toMatchObject({ reason: "clear", limit: 8 });
  });

  it("holds on one step far over its budget too (a stall of the host), and halves when a second step confirms it", () => {
    const limiter = probed({ initial: 8 });
    // Budget 22 ms; over 24.2 ms is far over.
    expect(window(limiter, 5, online(60))).toMatchObject({ reason: "over-once", limit: 8 });
    expect(window(limiter, 5, online(25))).toMatchObject({ reason: "online-over", limit: 4 });
    // Confirmed but only just over: a quarter.
    expect(window(limiter, 5, online(60))).toMatchObject({ reason: "over-once", limit: 4 });
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "online-over", limit: 3 });
    for (let i = 0; i < 6; i += 1) window(limiter, 5, online(60));
    expect(limiter.limit).toBe(1);
  });

  it("lets its own requests wait behind online ones while online p99 is within budget; their p90 decides only without online traffic", () => {
    const limiter = probed({ initial: 4, budgetMs: 50 });
    // 80 ms at p90 is over the job's 50 ms, but online clients are fine: the job is queued at the lowest priority, as it should be.
    expect(window(limiter, 80, online(21))).toMatchObject({ reason: "within", limit: 5 });
    // A gateway that cannot say: the job's own p90 bounds its queue.
    expect(window(limiter, 80, undefined)).toMatchObject({ reason: "job-over", limit: 3 });
    // Too few online requests to judge (and so no baseline either): the same.
    const sparse = probed({ initial: 4, budgetMs: 50, minOnlineRequests: 200 });
    expect(sparse.baselineMs).toBeUndefined();
    expect(window(sparse, 80, online(21))).toMatchObject({ reason: "job-over", limit: 3 });
  });

  it("fills the valley when online traffic stops; two probes then find none and the baseline goes with them", () => {
    const limiter = probed({ initial: 4 });
    expect(window(limiter, 5, online(null, 0))).toMatchObject({ reason: "within", limit: 5 });
    expect(limiter.probing).toBe(true);
    limiter.window(online(null, 0));
    // One probe without traffic could be a lull: the baseline stands until the next confirms it.
    expect(limiter.baselineMs).toBe(20);
    window(limiter, 5, online(null, 0));
    expect(limiter.probing).toBe(true);
    limiter.window(online(null, 0));
    expect(limiter.baselineMs).toBeUndefined();
    expect(limiter.onlineBudgetMs).toBe(50);
  });

  it("ignores an online p99 of too few requests to mean anything", () => {
    const limiter = probed({ initial: 2, minOnlineRequests: 20 });
    expect(window(limiter, 5, online(500, 5))).toMatchObject({ reason: "within", limit: 3 });
  });

  it("does not grow in a step in which none of its requests finished", () => {
    const limiter = probed({ initial: 2 });
    expect(limiter.window(online(20))).toMatchObject({ reason: "idle", limit: 2 });
  });

  it("halves at once when the gateway refuses a request as busy, in the middle of a step too", () => {
    const limiter = probed({ initial: 8, onlineSpanWindows: 3 });
    for (let i = 0; i < 7; i += 1) limiter.record(1);
    limiter.record(1, true);
    expect(limiter.window(online(10))).toMatchObject({ reason: "overloaded", limit: 4 });
    // A new step starts at the new limit.
    expect(limiter.readWindows).toBe(1);
  });

  it("takes the median of the last probes at a similar rate as the baseline, so one probe that caught a burst does not move it", () => {
    const limiter = probed({ initial: 2, probeEveryWindows: 1, baselineProbes: 3, baselineMs: 20 });
    const probeWith = (p99: number) => {
      window(limiter, 5, online(20));
      expect(limiter.probing).toBe(true);
      expect(limiter.window(online(p99)).reason).toBe("baseline");
    };
    // Of two probes, the quieter.
    probeWith(22);
    expect(limiter.baselineMs).toBe(20);
    probeWith(60);
    expect(limiter.baselineMs).toBe(22);
    // Only the last three count: 22, 60, 21.
    probeWith(21);
    expect(limiter.baselineMs).toBe(22);
    probeWith(19);
    expect(limiter.baselineMs).toBe(21);
    // The limit the job had before each probe came back (it grew by half once per step between them: 2, 3, 4.5, 6.75, 10.1).
    expect(limiter.limit).toBe(10);
  });

  it("probes again as soon as the online rate moved by half, and drops the old rate's probes once a second probe confirms the move", () => {
    const limiter = probed({ initial: 4, baselineMs: 20 });
    // Online traffic doubles: its p99 rises with it (one step over: held), and the job measures the new baseline.
    expect(window(limiter, 5, online(35, 200))).toMatchObject({ reason: "over-once", limit: 4 });
    expect(limiter.probing).toBe(true);
    expect(limiter.window(online(30, 200)).reason).toBe("baseline");
    // One probe at the new rate is held aside: the old baseline stands meanwhile.
    expect(limiter.baselineMs).toBe(20);
    // The rate is still away from the baseline's, so the next probe is due a step later, and it confirms.
    expect(window(limiter, 5, online(33, 200))).toMatchObject({ reason: "over-once", limit: 4 });
    expect(limiter.probing).toBe(true);
    expect(limiter.window(online(31, 200)).reason).toBe("baseline");
    expect(limiter.baselineMs).toBe(30);
    expect(window(limiter, 5, online(32, 200))).toMatchObject({ reason: "steady", limit: 4 });
    expect(window(limiter, 5, online(31, 200))).toMatchObject({ reason: "clear", limit: 6 });
  });

  it("keeps its baseline when one probe's rate is off (the job's queued online requests finishing together), and drops only on a confirmed move", () => {
    const limiter = new AimdLimiter({
      budgetMs: 50,
      probeWindows: 1,
      onlineSpanWindows: 1,
      probeEveryWindows: 2,
      baselineProbes: 5,
      initial: 2,
    });
    const probeAt = (p99: number, count: number) => {
      expect(limiter.probing).toBe(true);
      expect(limiter.window(online(p99, count)).reason).toBe("baseline");
    };
    // Three probes at 130 online requests a second: the baseline is their median.
    probeAt(30, 130);
    for (const p99 of [31, 29]) {
      window(limiter, 5, online(30, 130));
      window(limiter, 5, online(30, 130));
      probeAt(p99, 130);
    }
    expect(limiter.baselineMs).toBe(30);
    // A probe that counted 200 a second with a lucky 24.9 ms p99: held aside, not the new baseline.
    window(limiter, 5, online(30, 130));
    window(limiter, 5, online(30, 130));
    probeAt(24.9, 200);
    expect(limiter.baselineMs).toBe(30);
    expect(limiter.onlineBudgetMs).toBeCloseTo(33);
    // The rate during the job is the baseline's: no early probe, and the job holds within the old budget.
    const before = limiter.limit;
    expect(window(limiter, 5, online(32, 130))).toMatchObject({ reason: "steady", limit: before });
    expect(limiter.probing).toBe(false);
    // The next probe is back at 130 a second: the held one was noise, and is discarded.
    window(limiter, 5, online(30, 130));
    probeAt(30, 130);
    expect(limiter.baselineMs).toBe(30);
    // A move confirmed by two probes in a row drops the old probes.
    window(limiter, 5, online(40, 260));
    expect(limiter.probing).toBe(true);
    probeAt(38, 260);
    expect(limiter.baselineMs).toBe(30);
    window(limiter, 5, online(40, 260));
    probeAt(36, 250);
    expect(limiter.baselineMs).toBe(36);
  });

  it("does not confirm a move with a probe at a third rate: that one is held aside in its place", () => {
    const limiter = probed({ initial: 2, probeEveryWindows: 1, baselineMs: 20 });
    const probeAt = (p99: number, count: number) => {
      window(limiter, 5, online(20, 100));
      expect(limiter.window(online(p99, count)).reason).toBe("baseline");
    };
    probeAt(15, 200);
    probeAt(40, 400);
    expect(limiter.baselineMs).toBe(20);
    // 400 confirmed by 380: the baseline is theirs.
    probeAt(44, 380);
    expect(limiter.baselineMs).toBe(40);
  });

  it("probes every probeEveryWindows windows", () => {
    const limiter = probed({ initial: 2, probeEveryWindows: 3 });
    window(limiter, 5, online(20));
    window(limiter, 5, online(20));
    expect(limiter.probing).toBe(false);
    window(limiter, 5, online(20));
    expect(limiter.probing).toBe(true);
    expect(limiter.limit).toBe(0);
    // Not the first probe: only its own windows are read.
    expect(limiter.firstProbe).toBe(false);
    expect(limiter.readWindows).toBe(1);
  });

  it("uses the perf report's budget for online p99 until a probe saw online traffic, and probes once it appears", () => {
    const quiet = new AimdLimiter({ budgetMs: 50, probeWindows: 1, onlineSpanWindows: 1, initial: 4 });
    quiet.window(online(null, 0));
    expect(quiet.baselineMs).toBeUndefined();
    expect(quiet.onlineBudgetMs).toBe(50);
    // Over the report's 50 ms (a first step over it: held), and online traffic is there now: a probe.
    expect(window(quiet, 5, online(52))).toMatchObject({ reason: "over-once", limit: 4 });
    expect(quiet.probing).toBe(true);
  });

  it("stays within min and max, and refuses a decrease outside (0, 1)", () => {
    const limiter = probed({ initial: 1, min: 1, max: 2 });
    for (let i = 0; i < 5; i += 1) window(limiter, 5, online(20));
    expect(limiter.limit).toBe(2);
    for (let i = 0; i < 5; i += 1) window(limiter, 5, online(99));
    expect(limiter.limit).toBe(1);
    expect(() => new AimdLimiter({ budgetMs: 50, decrease: 1 })).toThrow(/decrease must be in \(0, 1\)/);
  });
});
