/**
 * The latest request latencies of each model version, held in fixed rings
 * until the metrics are scraped. Recording one is a few array writes, no
 * allocation: the quantile sketches (prom-client summaries, whose every
 * observation touches each of their sketches) are fed at scrape time
 * instead, from at most `capacity` latencies per version and series since
 * the previous scrape, the most recent ones. Under heavy load the
 * quantiles are those of that recent sample; the counters stay exact.
 */
export class LatencyReservoir<Series extends string> {
  private readonly rings = new Map<string, { labels: { model: string; version: string }; values: Map<Series, Float64Array>; written: Map<Series, number>; drained: Map<Series, number> }>();

  constructor(private readonly capacity = 4096) {}

  record(model: string, version: string, series: Series, value: number): void {
    const key = `${model}\u0000${version}`;
    let ring = this.rings.get(key);
    if (ring === undefined) {
      ring = { labels: { model, version }, values: new Map(), written: new Map(), drained: new Map() };
      this.rings.set(key, ring);
    }
    let values = ring.values.get(series);
    if (values === undefined) {
      values = new Float64Array(this.capacity);
      ring.values.set(series, values);
    }
    const written = ring.written.get(series) ?? 0;
    values[written % this.capacity] = value;
    ring.written.set(series, written + 1);
  }

  /** Hands each series' values since the last drain (the latest `capacity` of them) to `observe`. */
  drain(series: Series, observe: (labels: { model: string; version: string }, value: number) => void): void {
    for (const ring of this.rings.values()) {
      const values = ring.values.get(series);
      if (values === undefined) continue;
      const written = ring.written.get(series) ?? 0;
      const from = Math.max(ring.drained.get(series) ?? 0, written - this.capacity);
      for (let i = from; i < written; i += 1) observe(ring.labels, values[i % this.capacity]!);
      ring.drained.set(series, written);
    }
  }

  forget(model: string, version: string): void {
    this.rings.delete(`${model}\u0000${version}`);
  }
}
