import { describe, expect, it } from "vitest";
import { operatorUsage, type OperatorCounters, type StepModelUsage } from "./operator-usage.js";

const counters = (
  requests: number,
  modelCalls: Record<string, number>,
  options: { allRequests?: number; inferences?: number } = {},
): OperatorCounters => ({
  requests,
  allRequests: options.allRequests ?? requests,
  inferences: options.inferences ?? requests,
  modelCalls,
});
const model = (
  requests: number,
  cpuUtilization: number | null,
  gpuUtilization: number | null = null,
): StepModelUsage => ({
  requests,
  cpuUtilization,
  gpuUtilization,
});

describe("an operator's share of its step models' usage", () => {
  it("is, per step model, its calls over the model's requests times the model's utilization", () => {
    const rows = operatorUsage(
      new Map([["pipe", counters(100, { pre: 100, cls: 100 })]]),
      new Map([["pipe", counters(140, { pre: 140, cls: 140 })]]),
      // pre served only the operator; cls also 40 direct requests.
      new Map([
        ["pre", model(40, 0.2)],
        ["cls", model(80, 0.1, 0.4)],
      ]),
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ operator: "pipe", requests: 40, inferences: 40 });
    expect(rows[0]!.cpuUtilization).toBeCloseTo(0.2 + 0.5 * 0.1);
    expect(rows[0]!.gpuUtilization).toBeCloseTo(0.5 * 0.4);
  });

  it("never gives a step model's usage out twice: two operators' shares of it sum to at most 1", () => {
    const rows = operatorUsage(
      new Map(),
      new Map([
        ["a", counters(30, { shared: 30 })],
        // Read a moment after the model's statistics: more calls than the model counted requests.
        ["b", counters(50, { shared: 50 })],
      ]),
      new Map([["shared", model(60, 0.8)]]),
    );
    const total = rows.reduce((sum, row) => sum + row.cpuUtilization!, 0);
    expect(total).toBeCloseTo(0.8);
    expect(rows.find((row) => row.operator === "a")!.cpuUtilization).toBeCloseTo((30 / 80) * 0.8);
  });

  it("leaves perf traffic's calls out, counts a reloaded operator from 0, and skips operators with no traffic", () => {
    const rows = operatorUsage(
      new Map([
        ["perf", counters(0, { m: 0 })],
        ["reloaded", counters(500, { m: 500 })],
        ["idle", counters(7, { m: 7 })],
      ]),
      new Map([
        // 10 requests, 5 of them a perf run's: half of its calls are users'.
        ["perf", counters(5, { m: 10 }, { allRequests: 10 })],
        ["reloaded", counters(10, { m: 10 })],
        ["idle", counters(7, { m: 7 })],
      ]),
      new Map([["m", model(100, 1)]]),
    );
    expect(rows.map((row) => [row.operator, row.requests, row.cpuUtilization])).toEqual([
      ["perf", 5, 0.05],
      ["reloaded", 10, 0.1],
    ]);
  });

  it("has no CPU figure when its step models have none", () => {
    const [row] = operatorUsage(new Map(), new Map([["op", counters(3, { m: 3 })]]), new Map([["m", model(3, null)]]));
    expect(row).toMatchObject({ operator: "op", cpuUtilization: null, gpuUtilization: null });
  });
});
