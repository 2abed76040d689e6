import type { OnlineLatency } from "@operon/protocol/online-latency";
import { describe, expect, it } from "vitest";
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

describe("online latency monitor", () => {
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
    const limiter = new AimdLimiter({
      budgetMs: 50,
      probeWindows: 2,
      onlineSpanWindows: 3,
      firstProbeSpanWindows: 10,
      initial: 2,
    });
    const decisions: AimdDecision[] = [];
    const monitor = OnlineLatencyMonitor.start({
      gateway,
      target: { name: "m" },
      limiter,
      logger: silent,
      windowMs: 50,
      onDecision: (decision) => decisions.push(decision),
    });
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
});
