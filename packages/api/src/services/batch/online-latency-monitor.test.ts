import type { OnlineLatency } from "@operon/protocol/online-latency";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { AimdLimiter, type AimdDecision } from "./aimd.js";
import { OnlineLatencyMonitor, combine, spanOf } from "./online-latency-monitor.js";

const entry = (version: string, count: number, p99Us: number | null): OnlineLatency => ({
  model_name: "m",
  model_version: version,
  window_ms: 1000,
  count,
  p50_us: p99Us,
  p99_us: p99Us,
});

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The limiter settings of the stepping tests: 2 in flight after the first probe, steps of 3 windows. */
const STEP_OPTIONS = { budgetMs: 50, probeWindows: 2, onlineSpanWindows: 3, initial: 2 };

/** A monitor of model 'm' feeding `limiter`, every decision collected (then `afterDecision` runs). */
function monitorOf(gateway: GatewayClient, limiter: AimdLimiter, windowMs: number, afterDecision?: () => void) {
  const decisions: AimdDecision[] = [];
  const monitor = OnlineLatencyMonitor.start({
    gateway,
    target: { name: "m" },
    limiter,
    logger: silent,
    windowMs,
    onDecision: (decision) => {
      decisions.push(decision);
      afterDecision?.();
    },
  });
  return { decisions, monitor };
}

describe("online latency monitor", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("adds the versions' counts and keeps the worst p99 (a job must not hurt any version)", () => {
    expect(combine([entry("1", 30, 12_000), entry("2", 10, 40_000), entry("3", 0, null)], 3000)).toEqual({
      spanMs: 3000,
      count: 40,
      p99Ms: 40,
    });
    expect(combine([entry("1", 0, null)], 3000)).toEqual({ spanMs: 3000, count: 0, p99Ms: null });
  });

  it("feeds the limiter every window: the first probe reads the history before the job too, then each step so far", async () => {
    const asked: number[] = [];
    const gateway = {
      onlineLatency: async (_name: string, _version: string | undefined, windowMs: number) => {
        asked.push(windowMs);
        return [entry("1", 50, 20_000)];
      },
    } as unknown as GatewayClient;
    const limiter = new AimdLimiter({ ...STEP_OPTIONS, firstProbeSpanWindows: 10 });
    const { decisions, monitor } = monitorOf(gateway, limiter, 50);
    while (decisions.length < 5) await new Promise((resolve) => setTimeout(resolve, 5));
    await monitor.stop();
    expect(decisions.slice(0, 5).map((d) => d.reason)).toEqual(["probe", "baseline", "hold", "hold", "idle"]);
    expect(limiter.baselineMs).toBe(20);
    // The first probe: ten windows back; then one, two, three windows of the step (at least the gateway's 100 ms).
    expect(asked.slice(0, 5)).toEqual([500, 500, 100, 100, 150]);
    const after = decisions.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(decisions.length).toBe(after);
  });

  it("reads a later probe after the job's requests in flight drained, within the gateway's 100 ms to 60 s", () => {
    const limiter = (readWindows: number, probing: boolean, firstProbe: boolean) => ({
      readWindows,
      probing,
      firstProbe,
    });
    expect(spanOf(limiter(2, true, false), 1000)).toBe(1600);
    expect(spanOf(limiter(2, true, false), 400)).toBe(400);
    expect(spanOf(limiter(10, true, true), 1000)).toBe(10_000);
    expect(spanOf(limiter(3, false, false), 1000)).toBe(3000);
    expect(spanOf(limiter(10, true, true), 10_000)).toBe(60_000);
    expect(spanOf(limiter(1, false, false), 50)).toBe(100);
  });

  it("gives no sample when the gateway cannot say, warning once", async () => {
    const warnings: string[] = [];
    const gateway = {
      onlineLatency: async () => {
        throw new Error("501 this server does not report online latency");
      },
    } as unknown as GatewayClient;
    const limiter = new AimdLimiter({ budgetMs: 50, probeWindows: 1 });
    const decisions: AimdDecision[] = [];
    const monitor = OnlineLatencyMonitor.start({
      gateway,
      target: { name: "m" },
      limiter,
      logger: { ...silent, warn: (_obj: object | string, msg?: string) => void warnings.push(String(msg)) },
      windowMs: 10,
      onDecision: (decision) => decisions.push(decision),
    });
    while (decisions.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    await monitor.stop();
    expect(decisions[0]).toMatchObject({ reason: "baseline", onlineP99Ms: undefined });
    expect(limiter.baselineMs).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/does not report online latency/);
  });
  it("keeps the job's baseline through a probe that counted a burst (fake clock, scripted online latency)", async () => {
    vi.useFakeTimers();
    // Online clients: 130 requests a second at a p99 of 30 ms, whether the job runs or not (the job stays within
    // budget). Once, the job's requests drain during a probe and the online requests queued behind them finish
    // together: that probe counts 200 a second, at a lucky 24.9 ms.
    let probesRead = 0;
    const gateway = {
      onlineLatency: async (_name: string, _version: string | undefined, windowMs: number) => {
        const burst = limiter.probing && !limiter.firstProbe && ++probesRead === 2;
        const perSec = burst ? 200 : 130;
        return [entry("1", Math.round((perSec * windowMs) / 1000), burst ? 24_900 : 30_000)];
      },
    } as unknown as GatewayClient;
    const limiter = new AimdLimiter({ ...STEP_OPTIONS, probeEveryWindows: 8 });
    const { decisions, monitor } = monitorOf(gateway, limiter, 1000, () => {
      // The job's requests of the next window: fast, and some finish every window it may send.
      if (limiter.limit > 0) for (let i = 0; i < 10; i += 1) limiter.record(5);
    });
    for (let second = 0; second < 60; second += 1) await vi.advanceTimersByTimeAsync(1000);
    await monitor.stop();
    // Three later probes at least (two windows each), the burst the first of them.
    expect(probesRead).toBeGreaterThanOrEqual(6);
    expect(decisions[1]?.reason).toBe("baseline");
    // The burst probe was held aside and discarded; the baseline stayed the 130 a second one's, and online p99
    // (30 ms) stayed within its budget (33 ms): the job was never cut.
    expect(limiter.baselineMs).toBe(30);
    expect(decisions.map((decision) => decision.reason)).not.toContain("online-over");
    const budgets = decisions.slice(1).map((decision) => decision.onlineBudgetMs);
    expect(Math.max(...budgets)).toBeCloseTo(33);
    expect(Math.min(...budgets)).toBeCloseTo(33);
  });
});
