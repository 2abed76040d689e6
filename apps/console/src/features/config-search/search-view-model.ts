/**
 * What the config search page shows of a search's candidates, worked out
 * apart from React: one-line config labels, the chart's points (p99 in ms
 * against throughput), the Pareto front in p99 order, and the text summary
 * the chart's caption reads out.
 */
export interface CandidateShape {
  index: number;
  instanceCount: number;
  maxBatchSize: number;
  dynamicBatching: { preferredBatchSizes: number[]; maxQueueDelayUs: number } | null;
  throughput: number;
  latencyP99Us: number | null;
  withinBudget: boolean;
  pareto: boolean;
  error: string | null;
}

export interface ScatterPoint {
  index: number;
  label: string;
  p99Ms: number;
  throughput: number;
}

/** "2 instances · max batch 8 · queue 500 µs · preferred [8]" (the fields the search changes). */
export function candidateLabel(
  candidate: Pick<CandidateShape, "instanceCount" | "maxBatchSize" | "dynamicBatching">,
): string {
  const parts = [`${candidate.instanceCount} ${candidate.instanceCount === 1 ? "instance" : "instances"}`];
  if (candidate.maxBatchSize === 0) parts.push("no batching");
  else parts.push(`max batch ${candidate.maxBatchSize}`);
  if (candidate.maxBatchSize > 0) {
    if (candidate.dynamicBatching === null) parts.push("no dynamic batching");
    else {
      parts.push(`queue ${candidate.dynamicBatching.maxQueueDelayUs} µs`);
      if (candidate.dynamicBatching.preferredBatchSizes.length > 0)
        parts.push(`preferred [${candidate.dynamicBatching.preferredBatchSizes.join(", ")}]`);
    }
  }
  return parts.join(" · ");
}

function pointOf(candidate: CandidateShape): ScatterPoint | undefined {
  if (candidate.latencyP99Us === null || candidate.throughput <= 0) return undefined;
  return {
    index: candidate.index,
    label: `#${candidate.index + 1}`,
    p99Ms: Math.round(candidate.latencyP99Us) / 1000,
    throughput: candidate.throughput,
  };
}

export function scatterPoints(
  candidates: readonly CandidateShape[],
  recommendedIndex: number | null,
): { all: ScatterPoint[]; front: ScatterPoint[]; recommended: ScatterPoint | undefined } {
  const all = candidates.map(pointOf).filter((point): point is ScatterPoint => point !== undefined);
  const front = candidates
    .filter((candidate) => candidate.pareto)
    .map(pointOf)
    .filter((point): point is ScatterPoint => point !== undefined)
    .sort((a, b) => a.p99Ms - b.p99Ms);
  const recommended = recommendedIndex === null ? undefined : all.find((point) => point.index === recommendedIndex);
  return { all, front, recommended };
}

export function scatterSummary(
  points: ReturnType<typeof scatterPoints>,
  budgetMs: number,
  format: (value: number) => string,
  /** Latencies' digits (the console writes them with formatLatencyValue); `format` unless given. */
  formatLatency: (ms: number) => string = format,
): string {
  if (points.all.length === 0) return "No candidate was measured yet.";
  const front = points.front
    .map((point) => `${point.label} ${format(point.throughput)} infer/s at ${formatLatency(point.p99Ms)} ms`)
    .join("; ");
  const recommended = points.recommended
    ? `Recommended: ${points.recommended.label}, ${format(points.recommended.throughput)} infer/s at p99 ${formatLatency(points.recommended.p99Ms)} ms.`
    : "No candidate met the budget, so none is recommended.";
  return `${points.all.length} ${points.all.length === 1 ? "candidate" : "candidates"}, p99 budget ${formatLatency(budgetMs)} ms. Pareto front: ${front}. ${recommended}`;
}
