import { type GpuDeviceSample, type NvmlLoad, loadNvml } from "@operon/native/nvml";
import { PeriodicTask } from "@operon/protocol/periodic-task";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "./logger.js";

/**
 * Triton's GPU metrics (nv_gpu_utilization, nv_gpu_memory_total_bytes,
 * nv_gpu_memory_used_bytes, nv_gpu_power_usage, nv_gpu_power_limit,
 * nv_energy_consumption; label gpu_uuid; Triton's units: utilization 0..1,
 * bytes, watts, joules since the server started), read through NVML
 * (@operon/native/nvml) every `intervalMs` on a thread of the addon's own:
 * the event loop only sets the gauges, and a driver that hangs holds
 * neither the loop, nor libuv's pool, nor the server's start (2 s at most)
 * or exit. Absent NVML (no driver library, no
 * device, OPERON_NATIVE=0): no GPU series at all, and one log line saying
 * why.
 *
 * A reading a device does not support is not exported for that device
 * (Triton does the same), rather than exported as 0.
 */
export interface GpuMetricsOptions {
  registry: Registry;
  logger: Logger;
  /** --metrics-interval-ms (Triton's default: 2000). */
  intervalMs: number;
  /** Where the readings come from (tests); default: the process's NVML. */
  load?: () => NvmlLoad;
}

/** A device as the workers endpoint reports it: its CUDA ordinal within this process's CUDA_VISIBLE_DEVICES. */
export interface GpuReading extends GpuDeviceSample {
  /** The CUDA device ordinal instances name in instance_group gpus; null when CUDA_VISIBLE_DEVICES hides the device. */
  device: number | null;
}

export class GpuMetrics {
  private readonly task: PeriodicTask;
  private latest: GpuDeviceSample[] = [];
  /** Energy at the first reading per device: nv_energy_consumption counts from the server's start, as in Triton. */
  private readonly energyBase = new Map<string, number>();
  private readonly energyCounted = new Map<string, number>();
  private readonly utilization: Gauge<"gpu_uuid">;
  private readonly memoryTotal: Gauge<"gpu_uuid">;
  private readonly memoryUsed: Gauge<"gpu_uuid">;
  private readonly powerUsage: Gauge<"gpu_uuid">;
  private readonly powerLimit: Gauge<"gpu_uuid">;
  private readonly energy: Counter<"gpu_uuid">;

  /** Starts sampling; undefined (after one log line saying why) when this host has no GPU readings. */
  static start(options: GpuMetricsOptions): GpuMetrics | undefined {
    const load = (options.load ?? loadNvml)();
    if (load.reader === undefined) {
      options.logger.info({ reason: load.reason }, `no GPU metrics: ${load.reason}`);
      return undefined;
    }
    const metrics = new GpuMetrics(options, () => load.reader.sample());
    options.logger.info(
      { library: load.reader.libraryPath, devices: load.reader.deviceCount, intervalMs: options.intervalMs },
      "GPU metrics from NVML",
    );
    return metrics;
  }

  private constructor(
    private readonly options: GpuMetricsOptions,
    private readonly read: () => Promise<GpuDeviceSample[]>,
  ) {
    const gauge = (name: string, help: string): Gauge<"gpu_uuid"> =>
      new Gauge({ name, help, labelNames: ["gpu_uuid"] as const, registers: [options.registry] });
    this.utilization = gauge("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)");
    this.memoryTotal = gauge("nv_gpu_memory_total_bytes", "GPU total memory, in bytes");
    this.memoryUsed = gauge("nv_gpu_memory_used_bytes", "GPU used memory, in bytes");
    this.powerUsage = gauge("nv_gpu_power_usage", "GPU power usage in watts");
    this.powerLimit = gauge("nv_gpu_power_limit", "GPU power management limit in watts");
    this.energy = new Counter({
      name: "nv_energy_consumption",
      help: "GPU energy consumption in joules since the Triton Server started",
      labelNames: ["gpu_uuid"] as const,
      registers: [options.registry],
    });
    let failing = false;
    this.task = new PeriodicTask(
      async () => {
        try {
          this.apply(await this.read());
          if (failing) options.logger.info("GPU metrics: NVML answers again");
          failing = false;
        } catch (error) {
          // Said once per outage, not every interval.
          if (!failing)
            options.logger.warn({ err: error }, "GPU metrics: NVML reading failed; keeping the last values");
          failing = true;
        }
      },
      { intervalMs: options.intervalMs, runAtStart: true, onError: () => undefined },
    );
    this.task.start();
  }

  /** Samples now (or joins the reading in progress); resolves when the gauges are set. */
  sampleNow(): Promise<void> {
    return this.task.runNow();
  }

  /** The last readings, each with its CUDA ordinal under visibleDevices (CUDA_VISIBLE_DEVICES) (for the workers endpoint and the usage sampler). */
  readings(visibleDevices: string | undefined): GpuReading[] {
    return this.latest.map((sample) => ({ ...sample, device: cudaOrdinalOf(sample, visibleDevices) }));
  }

  /** Stops the timer. A reading in progress is not waited for: a hung driver must not hold the server's exit. */
  async stop(): Promise<void> {
    void this.task.stop();
  }

  private apply(samples: GpuDeviceSample[]): void {
    this.latest = samples;
    for (const sample of samples) {
      const labels = { gpu_uuid: sample.uuid };
      const set = (gauge: Gauge<"gpu_uuid">, value: number | null): void => {
        if (value !== null) gauge.set(labels, value);
      };
      set(this.utilization, sample.utilization);
      set(this.memoryTotal, sample.memoryTotalBytes);
      set(this.memoryUsed, sample.memoryUsedBytes);
      set(this.powerUsage, sample.powerUsageWatts);
      set(this.powerLimit, sample.powerLimitWatts);
      if (sample.energyJoules !== null) {
        const base = this.energyBase.get(sample.uuid) ?? sample.energyJoules;
        this.energyBase.set(sample.uuid, base);
        const total = Math.max(0, sample.energyJoules - base);
        const counted = this.energyCounted.get(sample.uuid);
        // The series exists from the first reading on (at 0), as a counter should.
        if (counted === undefined) this.energy.inc(labels, 0);
        if (total > (counted ?? 0)) this.energy.inc(labels, total - (counted ?? 0));
        this.energyCounted.set(sample.uuid, Math.max(total, counted ?? 0));
      }
    }
  }
}

/**
 * The CUDA ordinal of an NVML device in this process. Without
 * CUDA_VISIBLE_DEVICES it is NVML's index (true with CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * which the README asks GPU hosts to set; CUDA's default order puts the fastest
 * device first, the same on hosts with one GPU model). With it, the position of
 * the device's index or UUID in the list; null when the list hides it.
 */
export function cudaOrdinalOf(
  sample: Pick<GpuDeviceSample, "index" | "uuid">,
  visible: string | undefined,
): number | null {
  if (visible === undefined) return sample.index;
  const entries = visible
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const position = entries.findIndex(
    (entry) =>
      (/^\d+$/.test(entry) && Number(entry) === sample.index) ||
      (entry.startsWith("GPU-") && sample.uuid.startsWith(entry)),
  );
  return position < 0 ? null : position;
}
