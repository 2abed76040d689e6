import { availableParallelism } from "node:os";
import type { GpuInfo, WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";
import { readProcessUsage, readThreadUsage } from "./process-usage.js";

/** One served version's instances as its pool describes them (no usage yet: this module reads it). */
export interface VersionWorkers {
  model: string;
  version: string;
  /** `executeSeconds`: an inline instance's time on the event loop, reported as its cpuSeconds. */
  instances: Array<
    Omit<WorkerInstanceInfo, "model" | "version" | "cpuSeconds" | "rssBytes"> & { executeSeconds?: number }
  >;
}

/**
 * GET /v2/operon/workers: every instance's worker with its CPU time and
 * resident memory read from procfs (a thread instance: its thread's CPU
 * time), the gateway process's own, the host's cores and its GPUs.
 */
export async function workersReport(
  versions: readonly VersionWorkers[],
  gpus: GpuInfo[],
  defaultIsolation?: "auto" | "thread" | "process",
): Promise<WorkersResponse> {
  const workers: WorkerInstanceInfo[] = [];
  for (const { model, version, instances } of versions) {
    for (const { executeSeconds, ...instance } of instances) {
      const cpuSeconds = instance.isolation === "inline" ? (executeSeconds ?? null) : null;
      workers.push({ model, version, ...instance, cpuSeconds, rssBytes: null });
    }
  }
  // Read together: a worker's procfs read takes a few microseconds, and none waits on another.
  await Promise.all(
    workers.map(async (worker) => {
      // An inline instance's memory is the gateway's own (reported below); its CPU, the time its executions took.
      if (worker.pid === null || worker.isolation === "inline") return;
      if (worker.isolation === "thread") {
        if (worker.tid !== undefined) Object.assign(worker, await readThreadUsage(worker.pid, worker.tid));
        return;
      }
      Object.assign(worker, await readProcessUsage(worker.pid));
    }),
  );
  const cpu = process.cpuUsage();
  return {
    workers,
    hostCpuCores: availableParallelism(),
    gateway: { pid: process.pid, cpuSeconds: (cpu.user + cpu.system) / 1e6, rssBytes: process.memoryUsage().rss },
    gpus,
    ...(defaultIsolation !== undefined ? { defaultIsolation } : {}),
  };
}
