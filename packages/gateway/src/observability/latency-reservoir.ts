/** The series a request's latency feeds (Triton's request, queue and compute_infer summaries). */
export type LatencySeries = "request" | "queue" | "computeInfer";

/** One model version's latest latencies, in microseconds, by series. */
interface VersionRing {
  labels: { model: string; version: string };
  request: Float64Array;
  queue: Float64Array;
  computeInfer: Float64Array;
  written: Record<LatencySeries, number>;
  drained: Record<LatencySeries, number>;
}

/**
 * The latest request latencies of each model version, held in fixed rings
 * until the metrics are scraped. Recording a request is one map lookup and
 * a few array writes, no allocation: the quantile sketches (prom-client
 * summaries, whose every observation touches each of their sketches) are
 * fed at scrape time instead, from at most `capacity` latencies per version
 * and series since the previous scrape, the most recent ones. Under heavy
 * load the quantiles are those of that recent sample; the counters stay exact.
 */
export class LatencyReservoir {
  private readonly rings = new Map<string, VersionRing>();

  constructor(private readonly capacity = 4096) {}

  /** One request's latencies; computeInferNs absent for a cached answer. */
  record(
    model: string,
    version: string,
    latency: { requestNs: number; queueNs: number; computeInferNs?: number | undefined },
  ): void {
    const ring = this.ringOf(model, version);
    this.write(ring, "request", latency.requestNs / 1000);
    this.write(ring, "queue", latency.queueNs / 1000);
    if (latency.computeInferNs !== undefined) this.write(ring, "computeInfer", latency.computeInferNs / 1000);
  }

  /** Hands one series' values since the last drain (the latest `capacity` of them) to `observe`. */
  drain(series: LatencySeries, observe: (labels: { model: string; version: string }, value: number) => void): void {
    for (const ring of this.rings.values()) {
      const values = ring[series];
      const written = ring.written[series];
      for (let i = Math.max(ring.drained[series], written - this.capacity); i < written; i += 1)
        observe(ring.labels, values[i % this.capacity]!);
      ring.drained[series] = written;
    }
  }

  forget(model: string, version: string): void {
    this.rings.delete(`${model}\u0000${version}`);
  }

  private ringOf(model: string, version: string): VersionRing {
    const key = `${model}\u0000${version}`;
    let ring = this.rings.get(key);
    if (ring === undefined) {
      ring = {
        labels: { model, version },
        request: new Float64Array(this.capacity),
        queue: new Float64Array(this.capacity),
        computeInfer: new Float64Array(this.capacity),
        written: { request: 0, queue: 0, computeInfer: 0 },
        drained: { request: 0, queue: 0, computeInfer: 0 },
      };
      this.rings.set(key, ring);
    }
    return ring;
  }

  private write(ring: VersionRing, series: LatencySeries, value: number): void {
    ring[series][ring.written[series] % this.capacity] = value;
    ring.written[series] += 1;
  }
}
