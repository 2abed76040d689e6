import { describe, expect, it } from "vitest";
import { candidateLabel, scatterPoints, scatterSummary, type CandidateShape } from "./search-view-model";

const candidate = (index: number, throughput: number, p99Us: number | null, pareto: boolean): CandidateShape => ({
  index,
  instanceCount: 1 + index,
  maxBatchSize: 4,
  dynamicBatching: { preferredBatchSizes: [], maxQueueDelayUs: 0 },
  throughput,
  latencyP99Us: p99Us,
  withinBudget: true,
  pareto,
  error: null,
});

describe("config search view model", () => {
  it("labels a candidate by the fields the search changes", () => {
    expect(
      candidateLabel({
        instanceCount: 2,
        maxBatchSize: 8,
        dynamicBatching: { preferredBatchSizes: [8], maxQueueDelayUs: 500 },
      }),
    ).toBe("2 instances · max batch 8 · queue 500 µs · preferred [8]");
    expect(candidateLabel({ instanceCount: 1, maxBatchSize: 0, dynamicBatching: null })).toBe(
      "1 instance · no batching",
    );
    expect(candidateLabel({ instanceCount: 1, maxBatchSize: 4, dynamicBatching: null })).toBe(
      "1 instance · max batch 4 · no dynamic batching",
    );
  });

  it("plots measured candidates, the front in p99 order, and the recommended one", () => {
    const points = scatterPoints(
      [
        candidate(0, 100, 2000, true),
        candidate(1, 90, 3000, false),
        candidate(2, 300, 5000, true),
        candidate(3, 0, null, false),
      ],
      2,
    );
    expect(points.all.map((point) => point.label)).toEqual(["#1", "#2", "#3"]);
    expect(points.front.map((point) => point.p99Ms)).toEqual([2, 5]);
    expect(points.recommended?.index).toBe(2);
    expect(scatterSummary(points, 10, String)).toBe(
      "3 candidates, p99 budget 10 ms. Pareto front: #1 100 infer/s at 2 ms; #3 300 infer/s at 5 ms. Recommended: #3, 300 infer/s at p99 5 ms.",
    );
  });

  it("says when nothing is recommended or measured", () => {
    expect(scatterSummary(scatterPoints([], null), 10, String)).toBe("No candidate was measured yet.");
    expect(scatterSummary(scatterPoints([candidate(0, 100, 2000, true)], null), 1, String)).toMatch(
      /none is recommended/,
    );
  });
});
