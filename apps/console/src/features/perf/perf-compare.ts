import type { PerfSample } from "./perf-types";

/**
 * Two perf reports of one target, step by step: each concurrency and batch size that either measured, with both
 * reports' throughput, p50 and p99 and the change from the first (A) to the second (B). A step only one report
 * measured shows the other's figures as null and no change.
 */
export type ComparedSample = Pick<
  PerfSample,
  "concurrency" | "batchSize" | "throughput" | "latencyP50Us" | "latencyP99Us"
>;

export interface ComparedFigure {
  a: number | null;
  b: number | null;
  /** (b − a) / a in percent; null when either is missing or a is 0. */
  changePercent: number | null;
}

export interface ComparedStep {
  concurrency: number;
  batchSize: number;
  throughput: ComparedFigure;
  p50Us: ComparedFigure;
  p99Us: ComparedFigure;
}

function figure(a: number | null | undefined, b: number | null | undefined): ComparedFigure {
  const first = a ?? null;
  const second = b ?? null;
  return {
    a: first,
    b: second,
    changePercent: first === null || second === null || first === 0 ? null : ((second - first) / first) * 100,
  };
}

export function compareSteps(a: readonly ComparedSample[], b: readonly ComparedSample[]): ComparedStep[] {
  const key = (sample: ComparedSample) => `${sample.batchSize}\u0000${sample.concurrency}`;
  const byKey = new Map<string, { a?: ComparedSample; b?: ComparedSample }>();
  for (const sample of a) byKey.set(key(sample), { ...byKey.get(key(sample)), a: sample });
  for (const sample of b) byKey.set(key(sample), { ...byKey.get(key(sample)), b: sample });
  return [...byKey.values()]
    .map(({ a: first, b: second }) => {
      const either = (first ?? second)!;
      return {
        concurrency: either.concurrency,
        batchSize: either.batchSize,
        throughput: figure(first?.throughput, second?.throughput),
        p50Us: figure(first?.latencyP50Us, second?.latencyP50Us),
        p99Us: figure(first?.latencyP99Us, second?.latencyP99Us),
      };
    })
    .sort((x, y) => x.batchSize - y.batchSize || x.concurrency - y.concurrency);
}

/** A change as "+12.5 %" / "−3.0 %" (a true minus sign), "0.0 %", or "—" when there is none to give. */
export function changeText(changePercent: number | null): string {
  if (changePercent === null || !Number.isFinite(changePercent)) return "—";
  const rounded = Math.round(changePercent * 10) / 10;
  if (rounded === 0) return "0.0 %";
  return `${rounded > 0 ? "+" : "−"}${Math.abs(rounded).toFixed(1)} %`;
}
