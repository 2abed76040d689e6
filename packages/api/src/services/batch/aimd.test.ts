import { describe, expect, it } from "vitest";
import { AimdLimiter, type AimdOptions, type OnlineSample } from "./aimd.js";

/** `count` online requests over a 1 s span with this p99. */
const online = (p99Ms: number | null, count = 100): OnlineSample => ({ spanMs: 1000, count, p99Ms });

/** A limiter past its first probe, which measured an online p99 of `baselineMs` (budget: +10 %). */
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
    const limiter = new AimdLimiter({ budgetMs: 50, initial: 3 });
    expect(limiter.probing).toBe(true);
    expect(limiter.limit).toBe(0);
    expect(limiter.window(online(18)).reason).toBe("probe");
    expect(limiter.limit).toBe(0);
    const end = limiter.window(online(20));
    expect(end).toMatchObject({ reason: "baseline", limit: 3 });
    expect(limiter.baselineMs).toBe(20);
    expect(limiter.onlineBudgetMs).toBeCloseTo(22);
  });

  it("adds one request in flight per window within the online budget and halves when online p99 rises over it", () => {
    const limiter = probed({ initial: 2, max: 5 });
    expect(window(limiter, 5, online(21)).reason).toBe("within");
    expect(limiter.limit).toBe(3);
    window(limiter, 5, online(21));
    window(limiter, 5, online(21));
    window(limiter, 5, online(21));
    expect(limiter.limit).toBe(5);
    // 23 ms is more than 10 % over 20 ms; the job's own latency (5 ms) is fine: online p99 decides.
    expect(window(limiter, 5, online(23))).toMatchObject({ reason: "online-over", limit: 2 });
    window(limiter, 5, online(23));
    expect(limiter.limit).toBe(1);
    window(limiter, 5, online(23));
    expect(limiter.limit).toBe(1);
  });

  it("fills the valley when online traffic falls, and judges by its own p90 when there is none", () => {
    const limiter = probed({ initial: 4 });
    window(limiter, 5, online(30));
    expect(limiter.limit).toBe(2);
    window(limiter, 5, online(15));
    expect(window(limiter, 5, online(null, 0)).limit).toBe(4);
    // Online traffic stopped: a probe finds none, and the baseline goes with it.
    expect(limiter.probing).toBe(true);
    limiter.window(online(null, 0));
    expect(limiter.baselineMs).toBeUndefined();
    // No online traffic: the job's own p90 against its budget (50 ms) still bounds its queue.
    expect(window(limiter, 80, online(null, 0))).toMatchObject({ reason: "job-over", limit: 2 });
  });

  it("ignores an online p99 of too few requests to mean anything", () => {
    const limiter = probed({ initial: 2, minOnlineRequests: 20 });
    expect(window(limiter, 5, online(500, 5))).toMatchObject({ reason: "within", limit: 3 });
  });

  it("backs off when the gateway refuses a request as busy, however fast the others were", () => {
    const limiter = probed({ initial: 8 });
    for (let i = 0; i < 7; i += 1) limiter.record(1);
    limiter.record(1, true);
    expect(limiter.window(online(10))).toMatchObject({ reason: "overloaded", limit: 4 });
  });

  it("holds the limit after a cut while the online span still holds requests from before it", () => {
    const limiter = probed({ initial: 8, onlineSpanWindows: 3 });
    expect(window(limiter, 5, online(40)).limit).toBe(4);
    expect(window(limiter, 5, online(40)).reason).toBe("hold");
    expect(window(limiter, 5, online(40)).reason).toBe("hold");
    expect(limiter.limit).toBe(4);
    expect(window(limiter, 5, online(40)).reason).toBe("online-over");
    expect(limiter.limit).toBe(2);
  });

  it("probes again every probeEveryWindows windows and averages the baseline with the last one at a similar rate", () => {
    const limiter = probed({ initial: 2, probeEveryWindows: 3, baselineMs: 20 });
    window(limiter, 5, online(20));
    window(limiter, 5, online(20));
    window(limiter, 5, online(20));
    expect(limiter.probing).toBe(true);
    expect(limiter.limit).toBe(0);
    expect(limiter.window(online(30)).reason).toBe("baseline");
    expect(limiter.baselineMs).toBe(25);
    // The limit the job had before the probe comes back.
    expect(limiter.limit).toBe(5);
  });

  it("probes again as soon as the online rate moved by half, and takes the new baseline whole", () => {
    const limiter = probed({ initial: 4, baselineMs: 20 });
    // Online traffic doubles: its p99 rises with it, the job backs off, then measures the new baseline.
    expect(window(limiter, 5, online(35, 200))).toMatchObject({ reason: "online-over", limit: 2 });
    expect(limiter.probing).toBe(true);
    expect(limiter.window(online(30, 200)).reason).toBe("baseline");
    expect(limiter.baselineMs).toBe(30);
    expect(window(limiter, 5, online(31, 200)).reason).toBe("within");
    expect(limiter.limit).toBe(3);
  });

  it("uses the perf report's budget for online p99 until a probe saw online traffic, and probes once it appears", () => {
    const limiter = probed({ budgetMs: 50, initial: 4 });
    // The first probe saw 100 requests; start one that saw none.
    const quiet = new AimdLimiter({ budgetMs: 50, probeWindows: 1, onlineSpanWindows: 1, initial: 4 });
    quiet.window(online(null, 0));
    expect(quiet.baselineMs).toBeUndefined();
    expect(quiet.onlineBudgetMs).toBe(50);
    expect(window(quiet, 5, online(60))).toMatchObject({ reason: "online-over", limit: 2 });
    expect(quiet.probing).toBe(true);
    expect(limiter.probing).toBe(false);
  });

  it("stays within min and max", () => {
    const limiter = probed({ initial: 1, min: 1, max: 2 });
    for (let i = 0; i < 5; i += 1) window(limiter, 5, online(20));
    expect(limiter.limit).toBe(2);
    for (let i = 0; i < 5; i += 1) window(limiter, 5, online(99));
    expect(limiter.limit).toBe(1);
  });
});
