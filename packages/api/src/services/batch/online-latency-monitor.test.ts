import type { OnlineLatency } from "@operon/protocol/online-latency";
import { describe, expect, it } from "vitest";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { AimdLimiter, type AimdDecision } from "./aimd.js";
import { OnlineLatencyMonitor, combine } from "./online-latency-monitor.js";

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

  it("feeds the limiter every window: the tail of a probe first, then the online span", async () => {
    const asked: number[] = [];
    const gateway = {
      onlineLatency: async (_name: string, _version: string | undefined, windowMs: number) => {
        asked.push(windowMs);
        return [entry("1", 50, 20_000)];
      },
    } as unknown as GatewayClient;
    const limiter = new AimdLimiter({ budgetMs: 50, probeWindows: 2, onlineSpanWindows: 3, initial: 2 });
    const decisions: AimdDecision[] = [];
    const monitor = OnlineLatencyMonitor.start({
      gateway,
      target: { name: "m" },
      limiter,
      logger: silent,
      windowMs: 1000 / 32,
      onDecision: (decision) => decisions.push(decision),
    });
    while (decisions.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    await monitor.stop();
    expect(decisions.slice(0, 3).map((d) => d.reason)).toEqual(["probe", "baseline", "idle"]);
    expect(limiter.baselineMs).toBe(20);
    // A probe's two windows: after the drain (at least half a window); then three windows.
    expect(asked[1]).toBeGreaterThanOrEqual(1000 / 64);
    expect(asked[1]).toBeLessThan(2000 / 32);
    expect(asked[2]).toBeCloseTo(3000 / 32);
    const after = decisions.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(decisions.length).toBe(after);
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
