import type { BatchStatistics, DurationStat, ModelStatistics } from "@operon/protocol/inference";
import type { OnlineLatency } from "@operon/protocol/online-latency";
import { FAILURE_REASONS, type FailureReason, type GatewayMetrics } from "./metrics.js";
import { OnlineLatencyWindow } from "./online-latency-window.js";

/** Timings of one execution as reported by a worker, in ns. */
export interface ExecutionTiming {
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

/**
 * response_stats keeps this many response indexes: "0" to "126" each on
 * their own, and "127" for every response from the 128th on. Triton keys
 * response_stats by response index without a bound; a stream of many small
 * responses (one generate_stream of 200 KB made 20 MB of statistics) would
 * otherwise grow the statistics of a model without end.
 */
export const MAX_RESPONSE_STATS_INDEXES = 128;

/**
 * Per model-version statistics in Triton's JSON shape (for the statistics
 * extension), and the Prometheus counters' increments: one record call
 * updates both, so the two views can never disagree. The counters are
 * incremented when metrics are scraped (flushMetrics, called by
 * GatewayMetrics), not per request: prom-client hashes and interns each
 * label set on every increment, which cost more than the rest of the
 * statistics together. Requests and executions are counted apart: with
 * dynamic batching, one execution serves many requests.
 */
export class ModelVersionStats {
  private readonly success = zero();
  private readonly fail = zero();
  private readonly queue = zero();
  private readonly computeInput = zero();
  private readonly computeInfer = zero();
  private readonly computeOutput = zero();
  private readonly cacheHit = zero();
  private readonly cacheMiss = zero();
  private readonly batches = new Map<number, BatchStatistics>();
  /** Triton's response_stats of decoupled models: per response index ("0", "1", ...). */
  private readonly responses = new Map<number, ResponseStatistics>();
  private inferenceCount = 0;
  private executionCount = 0;
  /** Of the requests above, those tagged as perf traffic (perf-traffic.ts). */
  private readonly perfTraffic = { success_count: 0, success_ns: 0, fail_count: 0, fail_ns: 0, inference_count: 0 };
  private lastInference = 0;
  /** Online requests' latest latencies (online-latency-window.ts); made on the first one, so idle versions hold none. */
  private online: OnlineLatencyWindow | undefined;
  private cacheSeriesExported = false;
  private readonly labels: { model: string; version: string };
  /** Counter increments since the last scrape (see flushMetrics). */
  private pending = emptyPending();

  constructor(
    readonly model: string,
    readonly version: string,
    private readonly metrics: GatewayMetrics,
  ) {
    this.labels = { model, version };
    // Export every series at 0 from load on, as Triton does, so rates and alerts work before the first request.
    for (const counter of metrics.inferenceCounters()) counter.inc(this.labels, 0);
    for (const reason of FAILURE_REASONS) metrics.requestFailure.inc({ ...this.labels, reason }, 0);
    metrics.pendingRequests.set(this.labels, 0);
    metrics.track(this);
  }

  /** Adds the increments recorded since the last call to the Prometheus counters (at scrape time). */
  flushMetrics(): void {
    const p = this.pending;
    this.pending = emptyPending();
    const m = this.metrics;
    const labels = this.labels;
    if (p.success > 0) m.requestSuccess.inc(labels, p.success);
    if (p.inferences > 0) m.inferenceCount.inc(labels, p.inferences);
    if (p.executions > 0) m.execCount.inc(labels, p.executions);
    if (p.requestUs > 0) m.requestDurationUs.inc(labels, p.requestUs);
    if (p.queueUs > 0) m.queueDurationUs.inc(labels, p.queueUs);
    if (p.computeInputUs > 0) m.computeInputDurationUs.inc(labels, p.computeInputUs);
    if (p.computeInferUs > 0) m.computeInferDurationUs.inc(labels, p.computeInferUs);
    if (p.computeOutputUs > 0) m.computeOutputDurationUs.inc(labels, p.computeOutputUs);
    if (p.cacheHits > 0) m.cacheHits.inc(labels, p.cacheHits);
    if (p.cacheHitUs > 0) m.cacheHitDurationUs.inc(labels, p.cacheHitUs);
    if (p.cacheMisses > 0) m.cacheMisses.inc(labels, p.cacheMisses);
    if (p.cacheMissUs > 0) m.cacheMissDurationUs.inc(labels, p.cacheMissUs);
    for (const [reason, count] of p.failures) m.requestFailure.inc({ ...labels, reason }, count);
  }

  /**
   * A request that ran and succeeded. Its compute times are those of the
   * execution it was part of (as Triton reports them per request).
   */
  recordSuccess(requestNs: number, queueNs: number, timing: ExecutionTiming, batchSize: number): void {
    add(this.success, requestNs);
    add(this.queue, queueNs);
    add(this.computeInput, timing.computeInputNs);
    add(this.computeInfer, timing.computeInferNs);
    add(this.computeOutput, timing.computeOutputNs);
    this.inferenceCount += batchSize;
    this.lastInference = Date.now();

    const p = this.pending;
    p.success += 1;
    p.inferences += batchSize;
    p.requestUs += requestNs / 1000;
    p.queueUs += queueNs / 1000;
    p.computeInputUs += timing.computeInputNs / 1000;
    p.computeInferUs += timing.computeInferNs / 1000;
    p.computeOutputUs += timing.computeOutputNs / 1000;
  }

  /**
   * A request answered from the response cache: a success (with its whole
   * duration, and a queue entry of 0 ns, as Triton counts hits in both) but
   * no inference, execution or compute time. Pair it with recordCacheHit.
   */
  recordCachedSuccess(requestNs: number): void {
    add(this.success, requestNs);
    add(this.queue, 0);
    this.lastInference = Date.now();
    this.pending.success += 1;
    this.pending.requestUs += requestNs / 1000;
  }

  /** A cache lookup that found the response; ns = the lookup time. */
  recordCacheHit(ns: number): void {
    this.exportCacheSeries();
    add(this.cacheHit, ns);
    this.pending.cacheHits += 1;
    this.pending.cacheHitUs += ns / 1000;
  }

  /** A cache lookup that found nothing; ns = the lookup time plus the insert time (when the response was inserted). */
  recordCacheMiss(ns: number): void {
    this.exportCacheSeries();
    add(this.cacheMiss, ns);
    this.pending.cacheMisses += 1;
    this.pending.cacheMissUs += ns / 1000;
  }

  /** The nv_cache_* series appear (all four, from 0) with a version's first cache lookup: only models that use the cache have them. */
  private exportCacheSeries(): void {
    if (this.cacheSeriesExported) return;
    this.cacheSeriesExported = true;
    const m = this.metrics;
    for (const counter of m.cacheCounters()) counter.inc(this.labels, 0);
  }

  /** One model execution of `batchSize` inferences (one or many requests batched). */
  recordExecution(batchSize: number, timing: ExecutionTiming): void {
    this.executionCount += 1;
    let batch = this.batches.get(batchSize);
    if (batch === undefined) {
      batch = { batch_size: batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, batch);
    }
    add(batch.compute_input, timing.computeInputNs);
    add(batch.compute_infer, timing.computeInferNs);
    add(batch.compute_output, timing.computeOutputNs);
    this.pending.executions += 1;
  }

  /**
   * One response of a streamed (decoupled) request: index = its place in
   * the request's responses (0 = first); ns = the time since the previous
   * response (or since the request arrived), counted as its compute_infer,
   * as Triton counts it. outcome "empty": the final flag without outputs.
   * Indexes from MAX_RESPONSE_STATS_INDEXES - 1 on share the last bucket.
   */
  recordResponse(index: number, ns: number, outcome: "success" | "fail" | "empty"): void {
    const bucket = Math.min(index, MAX_RESPONSE_STATS_INDEXES - 1);
    let stats = this.responses.get(bucket);
    if (stats === undefined) {
      stats = {
        compute_infer: zero(),
        compute_output: zero(),
        success: zero(),
        fail: zero(),
        empty_response: zero(),
        cancel: zero(),
      };
      this.responses.set(bucket, stats);
    }
    add(stats.compute_infer, ns);
    add(stats.compute_output, 0);
    add(outcome === "success" ? stats.success : outcome === "fail" ? stats.fail : stats.empty_response, ns);
  }

  recordFailure(requestNs: number, reason: FailureReason): void {
    add(this.fail, requestNs);
    this.pending.failures.set(reason, (this.pending.failures.get(reason) ?? 0) + 1);
    this.pending.requestUs += requestNs / 1000;
  }

  /** A tagged perf request that was also recorded as a success or failure above. */
  recordPerfTraffic(outcome: "success" | "fail", inferences: number, requestNs: number): void {
    const perf = this.perfTraffic;
    if (outcome === "success") {
      perf.success_count += 1;
      perf.success_ns += requestNs;
    } else {
      perf.fail_count += 1;
      perf.fail_ns += requestNs;
    }
    perf.inference_count += inferences;
  }

  /** A successful online request (neither a batch job's nor perf traffic): what online_latency reports. */
  recordOnline(requestNs: number): void {
    (this.online ??= new OnlineLatencyWindow()).record(requestNs);
  }

  onlineLatency(windowMs: number): OnlineLatency {
    const quantiles = this.online?.quantiles(windowMs) ?? { window_ms: windowMs, count: 0, p50_us: null, p99_us: null };
    return { model_name: this.model, model_version: this.version, ...quantiles };
  }

  snapshot(): ModelStatistics {
    return {
      name: this.model,
      version: this.version,
      last_inference: this.lastInference,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: { ...this.success },
        fail: { ...this.fail },
        queue: { ...this.queue },
        compute_input: { ...this.computeInput },
        compute_infer: { ...this.computeInfer },
        compute_output: { ...this.computeOutput },
        cache_hit: { ...this.cacheHit },
        cache_miss: { ...this.cacheMiss },
      },
      response_stats: Object.fromEntries(
        [...this.responses]
          .sort(([a], [b]) => a - b)
          .map(([index, stats]) => [
            String(index),
            Object.fromEntries(Object.entries(stats).map(([key, stat]) => [key, { ...stat }])),
          ]),
      ),
      batch_stats: [...this.batches.values()]
        .sort((a, b) => a.batch_size - b.batch_size)
        .map((batch) => ({
          batch_size: batch.batch_size,
          compute_input: { ...batch.compute_input },
          compute_infer: { ...batch.compute_infer },
          compute_output: { ...batch.compute_output },
        })),
      memory_usage: [],
      operon_perf_traffic: { ...this.perfTraffic },
    };
  }
}

interface ResponseStatistics {
  compute_infer: DurationStat;
  compute_output: DurationStat;
  success: DurationStat;
  fail: DurationStat;
  empty_response: DurationStat;
  cancel: DurationStat;
}

function zero(): DurationStat {
  return { count: 0, ns: 0 };
}

function add(stat: DurationStat, ns: number): void {
  stat.count += 1;
  stat.ns += Math.round(ns);
}

/** Counter increments of one model version not yet added to the Prometheus counters. */
interface PendingCounters {
  success: number;
  inferences: number;
  executions: number;
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  cacheHits: number;
  cacheHitUs: number;
  cacheMisses: number;
  cacheMissUs: number;
  failures: Map<FailureReason, number>;
}

function emptyPending(): PendingCounters {
  return {
    success: 0,
    inferences: 0,
    executions: 0,
    requestUs: 0,
    queueUs: 0,
    computeInputUs: 0,
    computeInferUs: 0,
    computeOutputUs: 0,
    cacheHits: 0,
    cacheHitUs: 0,
    cacheMisses: 0,
    cacheMissUs: 0,
    failures: new Map(),
  };
}
