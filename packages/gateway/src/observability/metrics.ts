import { cpus, freemem, totalmem } from "node:os";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { LatencySummaries } from "./latency-summaries.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";
import { mergeBackendMetrics } from "./backend-metrics-text.js";

/**
 * Prometheus metrics under Triton's names and labels (`model`, `version`), so
 * existing Triton dashboards and alerts work unchanged. Operon-only metrics
 * are prefixed `operon_`.
 */
export const FAILURE_REASONS = ["REJECTED", "CANCELED", "BACKEND", "OTHER"] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Durations of one successful request, ns; computeInferNs is absent for a response-cache hit (it computed nothing). */
export interface RequestLatency {
  requestNs: number;
  queueNs: number;
  computeInferNs?: number;
}

export interface GatewayMetricsOptions {
  /** How often nv_cpu_* are sampled (default 2000 ms). */
  cpuIntervalMs?: number;
  /**
   * Triton's latency summaries (nv_inference_*_summary_us). Triton makes them
   * opt-in (--metrics-config summary_latencies=true); Operon exports them by
   * default, since p50/p99 per model is what people look for first, and the
   * cost is a few numbers written per request (latency-summaries.ts). false = not exported.
   */
  latencySummaries?: boolean;
}

/** A source of counter increments flushed at scrape time (ModelVersionStats). */
export interface ScrapeTimeCounters {
  readonly model: string;
  readonly version: string;
  flushMetrics(): void;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly counterSources = new Set<ScrapeTimeCounters>();
  private readonly scrapeHooks = new Set<() => void>();
  /** Prometheus text of native backends' custom metric families, per worker (see backendMetricsText). */
  private readonly backendMetricSources = new Set<() => Iterable<string>>();

  /** Gauges set from outside the gateway (setGauge), by name. */
  private readonly outsideGauges = new Map<string, Gauge>();

  /** Sets an operon_* gauge created at its first value (the control plane's operon_desired_gateway_replicas). */
  setGauge(name: string, help: string, value: number): void {
    if (!/^operon_[a-z0-9_]+$/.test(name)) throw new RangeError(`'${name}' is not an operon_* metric name`);
    let gauge = this.outsideGauges.get(name);
    if (gauge === undefined) {
      gauge = new Gauge({ name, help, registers: [this.registry] });
      this.outsideGauges.set(name, gauge);
    }
    gauge.set(value);
  }

  readonly requestSuccess = this.counter(
    "nv_inference_request_success",
    "Number of successful inference requests, all batch sizes",
  );
  readonly requestFailure = new Counter({
    name: "nv_inference_request_failure",
    help: "Number of failed inference requests, all batch sizes",
    labelNames: ["model", "version", "reason"] as const,
    registers: [this.registry],
    collect: () => this.flushCounters(),
  });
  readonly inferenceCount = this.counter(
    "nv_inference_count",
    "Number of inferences performed (does not include cached requests)",
  );
  readonly execCount = this.counter(
    "nv_inference_exec_count",
    "Number of model executions performed (does not include cached requests)",
  );
  readonly requestDurationUs = this.counter(
    "nv_inference_request_duration_us",
    "Cumulative inference request duration in microseconds (includes cached requests)",
  );
  readonly queueDurationUs = this.counter(
    "nv_inference_queue_duration_us",
    "Cumulative inference queuing duration in microseconds (includes cached requests)",
  );
  readonly computeInputDurationUs = this.counter(
    "nv_inference_compute_input_duration_us",
    "Cumulative compute input duration in microseconds (does not include cached requests)",
  );
  readonly computeInferDurationUs = this.counter(
    "nv_inference_compute_infer_duration_us",
    "Cumulative compute inference duration in microseconds (does not include cached requests)",
  );
  readonly computeOutputDurationUs = this.counter(
    "nv_inference_compute_output_duration_us",
    "Cumulative inference compute output duration in microseconds (does not include cached requests)",
  );
  readonly cacheHits = this.counter("nv_cache_num_hits_per_model", "Number of cache hits per model");
  readonly cacheMisses = this.counter("nv_cache_num_misses_per_model", "Number of cache misses per model");
  readonly cacheHitDurationUs = this.counter(
    "nv_cache_hit_duration_per_model",
    "Total cache hit duration per model, in microseconds",
  );
  readonly cacheMissDurationUs = this.counter(
    "nv_cache_miss_duration_per_model",
    "Total cache miss (lookup + insert) duration per model, in microseconds",
  );
  /** Reads the server-wide response cache's size at scrape time; unset = no cache (the gauges read 0). */
  private responseCacheSource: (() => { bytes: number; entries: number }) | undefined;
  readonly cacheBytes = new Gauge({
    name: "operon_cache_bytes",
    help: "Bytes the server-wide response cache holds (outputs plus bookkeeping), out of its --cache-config size",
    registers: [this.registry],
    collect: () => {
      this.cacheBytes.set(this.responseCacheSource?.().bytes ?? 0);
    },
  });
  readonly cacheEntries = new Gauge({
    name: "operon_cache_entries",
    help: "Responses the server-wide response cache holds",
    registers: [this.registry],
    collect: () => {
      this.cacheEntries.set(this.responseCacheSource?.().entries ?? 0);
    },
  });
  /** Set at scrape time by the instance pools (onScrape), not on every queue change. */
  readonly pendingRequests = this.scrapedGauge(
    "nv_inference_pending_request_count",
    "Instantaneous number of pending requests awaiting execution per-model.",
  );
  readonly executingRequests = this.scrapedGauge(
    "operon_inference_executing_request_count",
    "Instantaneous number of requests executing on a backend instance per-model (pending ones are in nv_inference_pending_request_count)",
  );
  readonly workerRestarts = new Counter({
    name: "operon_worker_restarts_total",
    help: "Backend worker processes restarted after exiting unexpectedly",
    labelNames: ["model", "version", "instance"] as const,
    registers: [this.registry],
  });
  readonly workerRecycles = new Counter({
    name: "operon_worker_recycles_total",
    help: "Backend worker processes replaced between requests because their resident memory was over the model's cap",
    labelNames: ["model", "version", "instance"] as const,
    registers: [this.registry],
  });
  readonly batchSplits = new Counter({
    name: "operon_batch_split_requests_total",
    help: "Requests run again alone because the batch they were in failed as a whole (one bad request then fails alone)",
    labelNames: ["model", "version"] as const,
    registers: [this.registry],
  });
  readonly workersUp = this.gauge("operon_worker_up", "Backend worker processes currently serving, per model version");
  /** Per step of an operator (ensemble or registered DAG); its composing models keep their own nv_* series. */
  readonly operatorStepDurationUs = new Counter({
    name: "operon_operator_step_duration_us",
    help: "Cumulative time operator steps ran, per operator and step, in microseconds (model steps: from their start, after any in-flight cap wait, to their answer)",
    labelNames: ["operator", "step"] as const,
    registers: [this.registry],
  });
  readonly operatorStepExecutions = new Counter({
    name: "operon_operator_step_executions_total",
    help: "Operator steps run (succeeded, failed or cancelled after starting), per operator and step",
    labelNames: ["operator", "step"] as const,
    registers: [this.registry],
  });

  /** A model step's resilience (issue 25): retries, fallbacks, and its circuit breaker's state. */
  readonly operatorStepRetries = new Counter({
    name: "operon_operator_step_retries_total",
    help: "Retries of operator model steps after a retryable failure (UNAVAILABLE), per operator and step",
    labelNames: ["operator", "step"] as const,
    registers: [this.registry],
  });
  readonly operatorStepFallbacks = new Counter({
    name: "operon_operator_step_fallbacks_total",
    help: "Operator model steps answered by their fallback (kind: model or default), per operator and step",
    labelNames: ["operator", "step", "kind"] as const,
    registers: [this.registry],
  });
  readonly operatorStepBreakerState = new Gauge({
    name: "operon_operator_step_circuit_state",
    help: "State of an operator step's circuit breaker: 0 closed, 1 open, 2 half-open (only steps with a circuitBreaker)",
    labelNames: ["operator", "step"] as const,
    registers: [this.registry],
  });

  private readonly cpuUtilization = new Gauge({
    name: "nv_cpu_utilization",
    help: "CPU utilization rate [0.0 - 1.0]",
    registers: [this.registry],
  });
  private readonly cpuMemoryTotal = new Gauge({
    name: "nv_cpu_memory_total_bytes",
    help: "CPU total memory (RAM), in bytes",
    registers: [this.registry],
  });
  private readonly cpuMemoryUsed = new Gauge({
    name: "nv_cpu_memory_used_bytes",
    help: "CPU used memory (RAM), in bytes",
    registers: [this.registry],
  });
  private lastCpuTimes = readCpuTimes();
  private readonly cpuTimer: PeriodicTask;
  /** Triton's latency summaries; undefined when they are off. */
  private readonly summaries: LatencySummaries | undefined;

  constructor(options: GatewayMetricsOptions = {}) {
    this.summaries = options.latencySummaries === false ? undefined : new LatencySummaries();
    if (this.summaries !== undefined) {
      const families = [
        {
          series: "request",
          name: "nv_inference_request_summary_us",
          help: "Summary of inference request duration in microseconds (includes cached requests)",
        },
        {
          series: "queue",
          name: "nv_inference_queue_summary_us",
          help: "Summary of inference queuing duration in microseconds (includes cached requests)",
        },
        {
          series: "computeInfer",
          name: "nv_inference_compute_infer_summary_us",
          help: "Summary of compute inference duration in microseconds (does not include cached requests)",
        },
      ] as const;
      for (const family of families) this.summaries.register(this.registry, family);
    }
    collectDefaultMetrics({ register: this.registry, prefix: "operon_gateway_" });
    this.sampleCpu();
    this.cpuTimer = new PeriodicTask(() => this.sampleCpu(), {
      intervalMs: options.cpuIntervalMs ?? 2000,
      onError: () => undefined,
    });
    this.cpuTimer.start();
  }

  /** Reports the response cache's size through operon_cache_bytes / operon_cache_entries. */
  observeResponseCache(source: () => { bytes: number; entries: number }): void {
    this.responseCacheSource = source;
  }

  /**
   * One successful request in the latency summaries (the durations its
   * statistics recorded). A version's summary series appear with its first
   * request, and go with the version's other series on unload.
   */
  observeLatency(labels: { model: string; version: string }, latency: RequestLatency): void {
    if (this.summaries === undefined) return;
    // Recorded now, summarized at scrape time (latency-summaries.ts).
    this.summaries.record(labels.model, labels.version, latency);
  }

  /**
   * Runs `hook` whenever the metrics are read (before the export), to set
   * values that change too often to set as they change (queue lengths).
   * Returns its removal.
   */
  onScrape(hook: () => void): () => void {
    this.scrapeHooks.add(hook);
    return () => void this.scrapeHooks.delete(hook);
  }

  /** Adds a source of native backends' metric text (one entry per worker); returns its removal. */
  addBackendMetrics(source: () => Iterable<string>): () => void {
    this.backendMetricSources.add(source);
    return () => void this.backendMetricSources.delete(source);
  }

  /** Everything the registry exports, then the native backends' custom families merged over workers. */
  async exposition(): Promise<string> {
    const own = await this.registry.metrics();
    const texts: string[] = [];
    for (const source of this.backendMetricSources) texts.push(...source());
    if (texts.length === 0) return own;
    const reserved = new Set(this.registry.getMetricsAsArray().map((metric) => metric.name));
    return own + mergeBackendMetrics(texts, reserved);
  }

  /** Counters of a model version whose increments are added at scrape time. */
  track(source: ScrapeTimeCounters): void {
    this.counterSources.add(source);
  }

  /** Adds every tracked source's increments to the counters (each counter's collect() calls it; a second call finds none). */
  private flushCounters(): void {
    for (const source of this.counterSources) source.flushMetrics();
  }

  /** Forgets a model version's series (on unload), as Triton does. */
  removeModelVersion(model: string, version: string): void {
    for (const source of this.counterSources)
      if (source.model === model && source.version === version) this.counterSources.delete(source);
    for (const metric of [...this.inferenceCounters(), ...this.cacheCounters()]) metric.remove({ model, version });
    this.summaries?.forget(model, version);
    for (const reason of FAILURE_REASONS) this.requestFailure.remove({ model, version, reason });
    this.pendingRequests.remove({ model, version });
    this.executingRequests.remove({ model, version });
    this.workersUp.remove({ model, version });
    this.batchSplits.remove({ model, version });
  }

  /** Forgets one operator step's series (operator unloaded, or the step gone from its new spec). */
  removeOperatorStep(operator: string, step: string): void {
    this.operatorStepDurationUs.remove({ operator, step });
    this.operatorStepExecutions.remove({ operator, step });
    this.operatorStepRetries.remove({ operator, step });
    for (const kind of ["model", "default"]) this.operatorStepFallbacks.remove({ operator, step, kind });
    this.operatorStepBreakerState.remove({ operator, step });
  }

  stop(): void {
    void this.cpuTimer.stop();
  }

  /** The per-request counters of a model version, exported at 0 from load on and dropped on unload. */
  inferenceCounters(): Array<Counter<"model" | "version">> {
    return [
      this.requestSuccess,
      this.inferenceCount,
      this.execCount,
      this.requestDurationUs,
      this.queueDurationUs,
      this.computeInputDurationUs,
      this.computeInferDurationUs,
      this.computeOutputDurationUs,
    ];
  }

  /** The response-cache counters of a model version. */
  cacheCounters(): Array<Counter<"model" | "version">> {
    return [this.cacheHits, this.cacheMisses, this.cacheHitDurationUs, this.cacheMissDurationUs];
  }

  private scrapedGauge(name: string, help: string): Gauge<"model" | "version"> {
    const runHooks = (): void => {
      for (const hook of this.scrapeHooks) hook();
    };
    return new Gauge({
      name,
      help,
      labelNames: ["model", "version"] as const,
      registers: [this.registry],
      collect: runHooks,
    });
  }

  private gauge(name: string, help: string): Gauge<"model" | "version"> {
    return new Gauge({ name, help, labelNames: ["model", "version"] as const, registers: [this.registry] });
  }

  private counter(name: string, help: string): Counter<"model" | "version"> {
    const flush = (): void => this.flushCounters();
    return new Counter({
      name,
      help,
      labelNames: ["model", "version"] as const,
      registers: [this.registry],
      collect: flush,
    });
  }

  private sampleCpu(): void {
    const now = readCpuTimes();
    const busy = now.busy - this.lastCpuTimes.busy;
    const total = now.total - this.lastCpuTimes.total;
    if (total > 0) this.cpuUtilization.set(busy / total);
    this.lastCpuTimes = now;
    this.cpuMemoryTotal.set(totalmem());
    this.cpuMemoryUsed.set(totalmem() - freemem());
  }
}

function readCpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const cpu of cpus()) {
    const { user, nice, sys, idle, irq } = cpu.times;
    busy += user + nice + sys + irq;
    total += user + nice + sys + idle + irq;
  }
  return { busy, total };
}
