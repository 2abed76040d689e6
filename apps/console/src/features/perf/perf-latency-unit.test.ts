import { describe, expect, it } from "vitest";
import { formatLatencyValue } from "../../lib/number-format";
import { inUnit, PERF_LATENCY_UNIT } from "./perf-latency-unit";

describe("a perf report's latency unit", () => {
  it("is milliseconds whatever the report's latencies, the console's one latency unit", () => {
    expect(PERF_LATENCY_UNIT.symbol).toBe("ms");
    expect([inUnit(180), inUnit(2400), inUnit(1_250_000), inUnit(null)]).toEqual([0.18, 2.4, 1250, null]);
  });

  it("writes a sub-millisecond latency as the model's page does", () => {
    expect(formatLatencyValue(inUnit(412))).toBe("0.412");
  });
});
