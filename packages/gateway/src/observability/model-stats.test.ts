import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "./metrics.js";
import { MAX_RESPONSE_STATS_INDEXES, ModelVersionStats } from "./model-stats.js";

describe("ModelVersionStats: response_stats", () => {
  it(`keeps at most ${MAX_RESPONSE_STATS_INDEXES} response indexes, counting later responses in the last one`, () => {
    const stats = new ModelVersionStats("gen", "1", new GatewayMetrics());
    for (let index = 0; index < 100_000; index += 1) stats.recordResponse(index, 10, "success");
    const responses = stats.snapshot().response_stats!;
    expect(Object.keys(responses)).toHaveLength(MAX_RESPONSE_STATS_INDEXES);
    expect(responses["0"]!["success"]!.count).toBe(1);
    expect(responses[String(MAX_RESPONSE_STATS_INDEXES - 2)]!["success"]!.count).toBe(1);
    const last = responses[String(MAX_RESPONSE_STATS_INDEXES - 1)]!["success"]!;
    expect(last.count).toBe(100_000 - (MAX_RESPONSE_STATS_INDEXES - 1));
    expect(last.ns).toBe(last.count * 10);
    expect(JSON.stringify(responses).length).toBeLessThan(100_000);
  });
});
