import type { DurationStat, ModelStatistics } from "@operon/protocol/inference";
import type { InferenceClient } from "./inference-client.js";
import type { PerfServerStats } from "./perf-report.js";
import { round1 } from "./latency-stats.js";

/**
 * The server's side of a measurement, from the statistics extension
 * (GET v2/models/<m>[/versions/<v>]/stats or gRPC ModelStatistics): the
 * cumulative counters are read at every window boundary and the
 * differences give per-request averages of queue and compute time, as
 * perf_analyzer's "Server:" section does. Counters of every version the
 * endpoint returns are summed.
 */
export interface ServerStatsSnapshot {
  success: DurationStat;
  queue: DurationStat;
  computeInput: DurationStat;
  computeInfer: DurationStat;
  computeOutput: DurationStat;
  cacheHit: DurationStat;
  cacheMiss: DurationStat;
  inferenceCount: number;
  executionCount: number;
  /** batch_stats: executions (compute_infer count) per batch size. */
  batches: Record<string, number>;
}

export function emptySnapshot(): ServerStatsSnapshot {
  return {
    success: zero(),
    queue: zero(),
    computeInput: zero(),
    computeInfer: zero(),
    computeOutput: zero(),
    cacheHit: zero(),
    cacheMiss: zero(),
    inferenceCount: 0,
    executionCount: 0,
    batches: {},
  };
}

/** Sums the statistics entries (one per version) into one snapshot. */
export function snapshotOf(entries: readonly ModelStatistics[]): ServerStatsSnapshot {
  const total = emptySnapshot();
  for (const entry of entries) {
    const stats = entry.inference_stats;
    addInto(total.success, stats.success);
    addInto(total.queue, stats.queue);
    addInto(total.computeInput, stats.compute_input);
    addInto(total.computeInfer, stats.compute_infer);
    addInto(total.computeOutput, stats.compute_output);
    // Older servers (and gRPC answers without the fields) have no cache counters.
    if (stats.cache_hit !== undefined) addInto(total.cacheHit, stats.cache_hit);
    if (stats.cache_miss !== undefined) addInto(total.cacheMiss, stats.cache_miss);
    total.inferenceCount += entry.inference_count;
    total.executionCount += entry.execution_count;
    for (const batch of entry.batch_stats) {
      const key = String(batch.batch_size);
      total.batches[key] = (total.batches[key] ?? 0) + batch.compute_infer.count;
    }
  }
  return total;
}

/** after − before. A counter that went down (the model reloaded) counts from zero. */
export function diffSnapshots(before: ServerStatsSnapshot, after: ServerStatsSnapshot): ServerStatsSnapshot {
  const reset = after.success.count < before.success.count;
  const base = reset ? emptySnapshot() : before;
  const batches: Record<string, number> = {};
  for (const [size, count] of Object.entries(after.batches)) {
    const delta = count - (base.batches[size] ?? 0);
    if (delta > 0) batches[size] = delta;
  }
  return {
    success: minus(after.success, base.success),
    queue: minus(after.queue, base.queue),
    computeInput: minus(after.computeInput, base.computeInput),
    computeInfer: minus(after.computeInfer, base.computeInfer),
    computeOutput: minus(after.computeOutput, base.computeOutput),
    cacheHit: minus(after.cacheHit, base.cacheHit),
    cacheMiss: minus(after.cacheMiss, base.cacheMiss),
    inferenceCount: Math.max(0, after.inferenceCount - base.inferenceCount),
    executionCount: Math.max(0, after.executionCount - base.executionCount),
    batches,
  };
}

/** a + b, for merging the deltas of several windows. */
export function addSnapshots(a: ServerStatsSnapshot, b: ServerStatsSnapshot): ServerStatsSnapshot {
  const sum = emptySnapshot();
  for (const part of [a, b]) {
    addInto(sum.success, part.success);
    addInto(sum.queue, part.queue);
    addInto(sum.computeInput, part.computeInput);
    addInto(sum.computeInfer, part.computeInfer);
    addInto(sum.computeOutput, part.computeOutput);
    addInto(sum.cacheHit, part.cacheHit);
    addInto(sum.cacheMiss, part.cacheMiss);
    sum.inferenceCount += part.inferenceCount;
    sum.executionCount += part.executionCount;
    for (const [size, count] of Object.entries(part.batches)) sum.batches[size] = (sum.batches[size] ?? 0) + count;
  }
  return sum;
}

/** Per-request averages (µs, 0.1 precision) of a delta, for the report; cache hit and miss times are per hit and per miss. */
export function summarizeServerStats(delta: ServerStatsSnapshot): PerfServerStats {
  return {
    requests: delta.success.count,
    queueUs: averageUs(delta.queue),
    computeInputUs: averageUs(delta.computeInput),
    computeInferUs: averageUs(delta.computeInfer),
    computeOutputUs: averageUs(delta.computeOutput),
    batchSizes: { ...delta.batches },
    ...(delta.cacheHit.count > 0 || delta.cacheMiss.count > 0
      ? {
          cacheHits: delta.cacheHit.count,
          cacheHitUs: averageUs(delta.cacheHit),
          cacheMisses: delta.cacheMiss.count,
          cacheMissUs: averageUs(delta.cacheMiss),
        }
      : {}),
  };
}

/**
 * Reads snapshots through a client. A server without the statistics
 * extension (or one whose statistics call fails) yields undefined, and
 * after the first failure the probe stops asking: a perf run never fails
 * for want of server statistics.
 */
export class ServerStatsProbe {
  private available = true;

  constructor(private readonly client: Pick<InferenceClient, "modelStatistics">) {}

  async snapshot(): Promise<ServerStatsSnapshot | undefined> {
    if (!this.available) return undefined;
    try {
      return snapshotOf(await this.client.modelStatistics());
    } catch {
      this.available = false;
      return undefined;
    }
  }
}

function zero(): DurationStat {
  return { count: 0, ns: 0 };
}

function addInto(target: DurationStat, value: DurationStat): void {
  target.count += value.count;
  target.ns += value.ns;
}

function minus(after: DurationStat, before: DurationStat): DurationStat {
  return { count: Math.max(0, after.count - before.count), ns: Math.max(0, after.ns - before.ns) };
}

function averageUs(stat: DurationStat): number {
  return stat.count === 0 ? 0 : round1(stat.ns / stat.count / 1000);
}
