// A closed-loop load driver used for every target in the benchmark, so that
// Operon, the minimal server and in-process ONNX Runtime are measured by the
// same code: exactly `concurrency` calls in flight for `durationMs`, after a
// warm-up. Latencies are kept whole (Float64Array) for exact percentiles.

/**
 * @param {{ send: () => Promise<unknown>, concurrency: number, durationMs: number, warmupMs?: number, itemsPerRequest?: number }} options
 */
export async function measureClosedLoop({ send, concurrency, durationMs, warmupMs = 500, itemsPerRequest = 1 }) {
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let errors = 0;
  let firstError;
  let recording = false;
  let stopAt = Number.POSITIVE_INFINITY;
  const record = (us) => {
    if (count === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[count++] = us;
  };
  async function loop() {
    while (performance.now() < stopAt) {
      const started = performance.now();
      try {
        await send();
        if (recording) record((performance.now() - started) * 1000);
      } catch (error) {
        errors += 1;
        firstError ??= error;
        if (errors > 100) throw error;
      }
    }
  }
  const warmupEnd = performance.now() + warmupMs;
  stopAt = warmupEnd + durationMs;
  let measuredFrom = 0;
  const switcher = setTimeout(() => {
    recording = true;
    measuredFrom = performance.now();
  }, warmupMs);
  await Promise.all(Array.from({ length: concurrency }, loop));
  clearTimeout(switcher);
  const elapsedS = (performance.now() - measuredFrom) / 1000;
  const sorted = latencies.slice(0, count).sort();
  const pct = (p) => (count === 0 ? Number.NaN : sorted[Math.min(count - 1, Math.ceil((p / 100) * count) - 1)]);
  return {
    requests: count,
    errors,
    firstError: firstError === undefined ? undefined : String(firstError?.message ?? firstError),
    requestsPerSec: count / elapsedS,
    itemsPerSec: (count * itemsPerRequest) / elapsedS,
    p50Us: pct(50),
    p99Us: pct(99),
  };
}
