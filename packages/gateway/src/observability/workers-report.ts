import { availableParallelism } from "node:os";
import type { GpuInfo, WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";
import { readProcessUsage, readThreadUsage } from "./process-usage.js";

/** One served version's instances as its pool describes them (no usage yet: this module reads it). */
export interface VersionWorkers {
  model: string;
  version: string;
  instances: Array<Omit<WorkerInstanceInfo, "model" | "version" | "cpuSeconds" | "rssBytes">>;
}

/**
 * GET /v2/operon/workers: every instance's worker with its CPU time and
 * resident memory read from procfs (a thread instance: its thread's CPU
 * time), the gateway process's own, the host's cores and its GPUs.
 */
export async function workersReport(
  versions: readonly VersionWorkers[],
  gpus: GpuInfo[],
  defaultIsolation?: "thread" | "process",
): Promise<WorkersResponse> {
  const workers: WorkerInstanceInfo[] = [];
  for (const { model, version, instances } of versions) {
    for (const instance of instances) workers.push({ model, version, ...instance, cpuSeconds: null, rssBytes: null });
  }
  // Read together: a worker's procfs read takes a few microseconds, and none waits on another.
  await Promise.all(
    workers.map(async (worker) => {
      // An inline instance's CPU and memory are the gateway's own (reported below), not its own.
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
