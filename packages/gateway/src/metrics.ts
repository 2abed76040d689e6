import { cpus, freemem, totalmem } from "node:os";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";

/**
 * Prometheus metrics under Triton's names and labels (`model`, `version`), so
 * existing Triton dashboards and alerts work unchanged. Operon-only metrics
 * are prefixed `operon_`.
 */
export type FailureReason = "REJECTED" | "CANCELED" | "BACKEND" | "OTHER";

export class GatewayMetrics {
  readonly registry = new Registry();

  readonly requestSuccess = this.counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes");
  readonly requestFailure = new Counter({
    name: "nv_inference_request_failure",
    help: "Number of failed inference requests, all batch sizes",
    labelNames: ["model", "version", "reason"] as const,
    registers: [this.registry],
  });
  readonly inferenceCount = this.counter("nv_inference_count", "Number of inferences performed (does not include cached requests)");
  readonly execCount = this.counter("nv_inference_exec_count", "Number of model executions performed (does not include cached requests)");
  readonly requestDurationUs = this.counter("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (includes cached requests)");
  readonly queueDurationUs = this.counter("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds (includes cached requests)");
  readonly computeInputDurationUs = this.counter("nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds (does not include cached requests)");
  readonly computeInferDurationUs = this.counter("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (does not include cached requests)");
  readonly computeOutputDurationUs = this.counter("nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds (does not include cached requests)");
  readonly pendingRequests = new Gauge({
    name: "nv_inference_pending_request_count",
    help: "Instantaneous number of pending requests awaiting execution per-model.",
    labelNames: ["model", "version"] as const,
    registers: [this.registry],
  });
  readonly executingRequests = new Gauge({
    name: "operon_inference_executing_request_count",
    help: "Instantaneous number of requests executing on a backend instance per-model (pending ones are in nv_inference_pending_request_count)",
    labelNames: ["model", "version"] as const,
    registers: [this.registry],
  });
  readonly workerRestarts = new Counter({
    name: "operon_worker_restarts_total",
    help: "Backend worker processes restarted after exiting unexpectedly",
    labelNames: ["model", "version", "instance"] as const,
    registers: [this.registry],
  });
  readonly workersUp = new Gauge({
    name: "operon_worker_up",
    help: "Backend worker processes currently serving, per model version",
    labelNames: ["model", "version"] as const,
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
  private readonly cpuTimer: NodeJS.Timeout;

  constructor(options: { cpuIntervalMs?: number } = {}) {
    collectDefaultMetrics({ register: this.registry, prefix: "operon_gateway_" });
    this.sampleCpu();
    this.cpuTimer = setInterval(() => this.sampleCpu(), options.cpuIntervalMs ?? 2000);
    this.cpuTimer.unref();
  }

  /** Forgets a model version's series (on unload), as Triton does. */
  removeModelVersion(model: string, version: string): void {
    for (const metric of [
      this.requestSuccess,
      this.inferenceCount,
      this.execCount,
      this.requestDurationUs,
      this.queueDurationUs,
      this.computeInputDurationUs,
      this.computeInferDurationUs,
      this.computeOutputDurationUs,
    ]) {
      metric.remove({ model, version });
    }
    for (const reason of ["REJECTED", "CANCELED", "BACKEND", "OTHER"]) this.requestFailure.remove({ model, version, reason });
    this.pendingRequests.remove({ model, version });
    this.executingRequests.remove({ model, version });
    this.workersUp.remove({ model, version });
  }

  stop(): void {
    clearInterval(this.cpuTimer);
  }

  private counter(name: string, help: string): Counter<"model" | "version"> {
    return new Counter({ name, help, labelNames: ["model", "version"] as const, registers: [this.registry] });
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
