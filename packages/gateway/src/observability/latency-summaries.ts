import type { Registry } from "prom-client";

/** The series a request's latency feeds (Triton's request, queue and compute_infer summaries). */
export type LatencySeries = "request" | "queue" | "computeInfer";

/** Quantiles exported for each summary, as Triton's --metrics-config summary_quantiles default to. */
export const SUMMARY_QUANTILES = [0.5, 0.9, 0.95, 0.99] as const;

export interface LatencySummariesOptions {
  /** Latest latencies kept per model version and series; the quantiles come from these (default 4096). */
  capacity?: number;
  /** Only latencies recorded this recently count toward the quantiles (default 60 s, Triton's max age). */
  windowMs?: number;
  /** A monotonic clock, ms (tests step it). */
  now?: () => number;
}

/** One exported summary: its Prometheus name, help text, and the series it reads. */
export interface SummaryFamily {
  series: LatencySeries;
  name: string;
  help: string;
}

/**
 * One model version's latest latencies of one series, and its exact totals. 32-bit floats keep a version's rings
 * at 96 KiB, what the sketch-fed reservoir took before: a latency is exact to the µs up to 16 s, and a time (s
 * since the summaries began) to a quarter second after 7 weeks, 2 s after a year: enough for a 60 s window.
 */
interface SeriesRing {
  /** µs, the latest `capacity`, by ring position. */
  readonly values: Float32Array;
  /** When each value was recorded, s since `origin`, by ring position. */
  readonly times: Float32Array;
  written: number;
  /** Every latency ever recorded, not only the kept ones: the summary's _count and _sum are exact. */
  count: number;
  sum: number;
}

interface VersionRings {
  readonly labels: { model: string; version: string };
  readonly request: SeriesRing;
  readonly queue: SeriesRing;
  readonly computeInfer: SeriesRing;
}

/**
 * Triton's latency summaries (nv_inference_request_summary_us and its
 * siblings) without a quantile sketch. Recording a request writes a few
 * numbers into fixed rings (no allocation, no sketch); a scrape sorts each
 * active version's kept latencies of the window and reads the quantiles off
 * them.
 *
 * Why not prom-client's Summary: every observation walks its t-digests (one
 * per age bucket), several µs each. Fed per request, that was 4 % of the
 * gateway's CPU; fed at scrape time (as before this module), a busy model's
 * 3 × 4,096 latencies took 20-70 ms of the event loop at every scrape (the
 * usage sampler's, every 15 s, and Prometheus's), a stall for every request
 * in flight. A sort of 4,096 numbers takes well under a millisecond.
 *
 * What the quantiles mean: nearest-rank quantiles of the latencies recorded
 * in the last `windowMs` (60 s), at most the latest `capacity` of them (under
 * heavy load, the most recent ones). A version without a latency in the
 * window exports NaN quantiles, as Prometheus's own clients (and Triton) do.
 * _count and _sum count every request since the version loaded.
 */
export class LatencySummaries {
  private readonly versions = new Map<string, VersionRings>();
  private readonly capacity: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  /** The clock's reading when these summaries began (ms): times are kept relative to it. */
  private readonly origin: number;
  /** Scratch for one series' window while it is sorted (one per instance, reused by every scrape). */
  private readonly scratch: Float32Array;

  constructor(options: LatencySummariesOptions = {}) {
    this.capacity = options.capacity ?? 4096;
    this.windowMs = options.windowMs ?? 60_000;
    this.now = options.now ?? (() => performance.now());
    this.origin = this.now();
    this.scratch = new Float32Array(this.capacity);
  }

  /** One request's latencies (ns, as the statistics record them); computeInferNs absent for a cached answer. */
  record(
    model: string,
    version: string,
    latency: { requestNs: number; queueNs: number; computeInferNs?: number | undefined },
  ): void {
    const rings = this.ringsOf(model, version);
    const at = (this.now() - this.origin) / 1000;
    this.write(rings.request, latency.requestNs / 1000, at);
    this.write(rings.queue, latency.queueNs / 1000, at);
    if (latency.computeInferNs !== undefined) this.write(rings.computeInfer, latency.computeInferNs / 1000, at);
  }

  /** Drops a version's series (on unload): its summaries leave the export. */
  forget(model: string, version: string): void {
    this.versions.delete(versionKey(model, version));
  }

  /** Registers one summary family in `registry`, exported from these rings. */
  register(registry: Registry, family: SummaryFamily): void {
    registry.registerMetric(this.metricOf(family) as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  /** The values prom-client's registry writes for one family: per version, each quantile, then _sum and _count. */
  collect(family: SummaryFamily): SummaryValue[] {
    const values: SummaryValue[] = [];
    const since = (this.now() - this.origin - this.windowMs) / 1000;
    for (const rings of this.versions.values()) {
      const ring = rings[family.series];
      // A version's summary appears with its first latency of the series (a cache-only version has no compute one).
      if (ring.count === 0) continue;
      const quantiles = this.quantilesOf(ring, since);
      for (let i = 0; i < SUMMARY_QUANTILES.length; i++)
        values.push({ labels: { quantile: SUMMARY_QUANTILES[i]!, ...rings.labels }, value: quantiles[i]! });
      values.push({ metricName: `${family.name}_sum`, labels: rings.labels, value: ring.sum });
      values.push({ metricName: `${family.name}_count`, labels: rings.labels, value: ring.count });
    }
    return values;
  }

  /** SUMMARY_QUANTILES of the ring's kept values recorded at or after `since`; NaN each when there are none. */
  private quantilesOf(ring: SeriesRing, since: number): number[] {
    const { capacity, scratch } = this;
    const first = Math.max(0, ring.written - capacity);
    let n = 0;
    for (let i = first; i < ring.written; i++) {
      const at = i % capacity;
      if (ring.times[at]! >= since) scratch[n++] = ring.values[at]!;
    }
    if (n === 0) return SUMMARY_QUANTILES.map(() => Number.NaN);
    const window = scratch.subarray(0, n).sort();
    return SUMMARY_QUANTILES.map((q) => window[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!);
  }

  private metricOf(family: SummaryFamily): PromMetricLike {
    return {
      name: family.name,
      help: family.help,
      type: "summary",
      aggregator: "sum",
      get: async () => ({
        name: family.name,
        help: family.help,
        type: "summary",
        values: this.collect(family),
        aggregator: "sum",
      }),
      // Registry.resetMetrics(): what a fresh summary would export.
      reset: () => this.versions.clear(),
    };
  }

  private ringsOf(model: string, version: string): VersionRings {
    const key = versionKey(model, version);
    let rings = this.versions.get(key);
    if (rings === undefined) {
      rings = {
        labels: { model, version },
        request: this.ring(),
        queue: this.ring(),
        computeInfer: this.ring(),
      };
      this.versions.set(key, rings);
    }
    return rings;
  }

  private ring(): SeriesRing {
    return {
      values: new Float32Array(this.capacity),
      times: new Float32Array(this.capacity),
      written: 0,
      count: 0,
      sum: 0,
    };
  }

  private write(ring: SeriesRing, value: number, at: number): void {
    const position = ring.written % this.capacity;
    ring.values[position] = value;
    ring.times[position] = at;
    ring.written += 1;
    ring.count += 1;
    ring.sum += value;
  }
}

/** One line of a summary's export, in the shape prom-client's registry formats. */
export interface SummaryValue {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** What prom-client's Registry reads of a metric it exports (registerMetric, metrics(), resetMetrics()). */
interface PromMetricLike {
  name: string;
  help: string;
  type: "summary";
  aggregator: "sum";
  get(): Promise<{ name: string; help: string; type: "summary"; values: SummaryValue[]; aggregator: "sum" }>;
  reset(): void;
}

function versionKey(model: string, version: string): string {
  return `${model}\u0000${version}`;
}
