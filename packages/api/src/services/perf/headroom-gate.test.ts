import { describe, expect, it } from "vitest";
import { waitForHeadroom, type GateClock, type TrafficProbe } from "./headroom-gate.js";

function fakeClock(): GateClock & { slept: number[] } {
  let now = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms, signal) => {
      if (signal.aborted) throw signal.reason as Error;
      slept.push(ms);
      now += ms;
    },
  };
}

function probeOf(rates: Array<number | Error>): TrafficProbe & { calls: number } {
  const probe = {
    calls: 0,
    async requestsPerSec() {
      const rate = rates[Math.min(probe.calls, rates.length - 1)]!;
      probe.calls += 1;
      if (rate instanceof Error) throw rate;
      return rate;
    },
  };
  return probe;
}

const policy = { maxRequestsPerSec: 1, maxWaitMs: 30_000, recheckMs: 5000 };

describe("waitForHeadroom", () => {
  it("passes at once while the gateway is idle", async () => {
    const clock = fakeClock();
    expect(await waitForHeadroom(probeOf([0.5]), policy, new AbortController().signal, { clock })).toEqual({
      ok: true,
      waitedMs: 0,
      requestsPerSec: 0.5,
      idleCores: null,
      checks: 1,
    });
    expect(clock.slept).toEqual([]);
  });

  it("waits while traffic is served and starts once it stops; a failing probe counts as busy", async () => {
    const clock = fakeClock();
    const busy: number[] = [];
    const result = await waitForHeadroom(
      probeOf([250, new Error("gateway unreachable"), 40, 0]),
      policy,
      new AbortController().signal,
      {
        clock,
        onBusy: (rate) => busy.push(rate),
      },
    );
    expect(result).toEqual({ ok: true, waitedMs: 15_000, requestsPerSec: 0, idleCores: null, checks: 4 });
    expect(busy).toEqual([250, Number.POSITIVE_INFINITY, 40]);
    expect(clock.slept).toEqual([5000, 5000, 5000]);
  });

  it("gives up after maxWaitMs with the reason", async () => {
    const clock = fakeClock();
    const result = await waitForHeadroom(
      probeOf([120]),
      { ...policy, maxWaitMs: 12_000 },
      new AbortController().signal,
      { clock },
    );
    expect(result).toMatchObject({ ok: false, waitedMs: 12_000, requestsPerSec: 120, checks: 4 });
    expect(!result.ok && result.reason).toBe(
      "the host had no headroom for 12 s (last check: the model's own traffic 120 requests/s, limit 1); start it by hand or raise the limit",
    );
    expect(clock.slept).toEqual([5000, 5000, 2000]);
  });

  it("rejects with the reason when cancelled while waiting", async () => {
    const clock = fakeClock();
    const controller = new AbortController();
    const probe: TrafficProbe = {
      requestsPerSec: async () => {
        controller.abort(new Error("cancelled by admin@example.com"));
        return 100;
      },
    };
    await expect(waitForHeadroom(probe, policy, controller.signal, { clock })).rejects.toThrow(
      "cancelled by admin@example.com",
    );
  });

  it("counts only the measured model's traffic: a steady load on other models does not hold the run (issue 27)", async () => {
    const clock = fakeClock();
    const seen: string[][] = [];
    // 50 requests/s to add_sub, none to the model measured.
    const rates: Record<string, number> = { add_sub: 50, new_model: 0 };
    const probe: TrafficProbe = {
      requestsPerSec: async (_signal, counts) => {
        const models = Object.keys(rates).filter((model) => counts?.(model) ?? true);
        seen.push(models);
        return models.reduce((sum, model) => sum + rates[model]!, 0);
      },
      idleCores: async () => 1.7,
    };
    const result = await waitForHeadroom(probe, { ...policy, minIdleCores: 1 }, new AbortController().signal, {
      clock,
      counts: (model) => model === "new_model",
    });
    expect(result).toEqual({ ok: true, waitedMs: 0, requestsPerSec: 0, idleCores: 1.7, checks: 1 });
    expect(seen).toEqual([["new_model"]]);
    // The same load on the model measured itself does hold it.
    const own = await waitForHeadroom(probe, { ...policy, maxWaitMs: 5000 }, new AbortController().signal, {
      clock,
      counts: (model) => model === "add_sub",
    });
    expect(own).toMatchObject({ ok: false, requestsPerSec: 50 });
  });

  it("waits while the gateway leaves fewer idle cores than needed, and says so when it gives up", async () => {
    const clock = fakeClock();
    const idle = [0.2, 0.4, 1.5];
    let call = 0;
    const probe: TrafficProbe = { requestsPerSec: async () => 0, idleCores: async () => idle[call++]! };
    const busy: Array<number | null> = [];
    const result = await waitForHeadroom(probe, { ...policy, minIdleCores: 1 }, new AbortController().signal, {
      clock,
      onBusy: (_rate, _waited, cores) => busy.push(cores),
    });
    expect(result).toEqual({ ok: true, waitedMs: 10_000, requestsPerSec: 0, idleCores: 1.5, checks: 3 });
    expect(busy).toEqual([0.2, 0.4]);
    const stuck: TrafficProbe = { requestsPerSec: async () => 0, idleCores: async () => 0.3 };
    const failed = await waitForHeadroom(
      stuck,
      { ...policy, minIdleCores: 1, maxWaitMs: 5000 },
      new AbortController().signal,
      { clock },
    );
    expect(!failed.ok && failed.reason).toBe(
      "the host had no headroom for 5 s (last check: 0.3 idle cores, at least 1 needed); start it by hand or raise the limit",
    );
  });
});
