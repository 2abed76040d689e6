import { describe, expect, it } from "vitest";
import { inUnit, perfLatencyUnit } from "./perf-latency-unit";

const step = (p99Us: number | null, p50Us: number | null = p99Us === null ? null : p99Us / 2) => ({
  latencyP50Us: p50Us,
  latencyP99Us: p99Us,
  latencyAvgUs: p50Us,
  queueUs: 12,
  computeUs: 40,
});

describe("a perf report's latency unit", () => {
  it("is the one its largest latency reads best in, for the whole report", () => {
    expect(perfLatencyUnit([step(180), step(950)]).symbol).toBe("µs");
    expect(perfLatencyUnit([step(180), step(2400)]).symbol).toBe("ms");
    expect(perfLatencyUnit([step(400_000), step(1_250_000)]).symbol).toBe("s");
    expect(perfLatencyUnit([]).symbol).toBe("µs");
    expect(perfLatencyUnit([step(null)]).symbol).toBe("µs");
  });

  it("converts every latency of the report into it", () => {
    const unit = perfLatencyUnit([step(180), step(2400)]);
    expect([inUnit(180, unit), inUnit(2400, unit), inUnit(null, unit)]).toEqual([0.18, 2.4, null]);
    expect(unit.name).toBe("milliseconds");
  });
});
