import type { WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";

/**
 * The version's attributable share of the host's GPUs (see the class comment):
 * Σ over its GPUs of the GPU's reading × (its instances there / all instances there).
 */
export function gpuShareOf(
  versionWorkers: readonly WorkerInstanceInfo[],
  workers: WorkersResponse | undefined,
): { gpuUtilization: number | null; gpuMemoryBytes: bigint | null } {
  const gpus = (workers?.gpus ?? []).filter((gpu) => gpu.device !== null);
  if (workers === undefined || gpus.length === 0) return { gpuUtilization: null, gpuMemoryBytes: null };
  const onDevice = (list: readonly WorkerInstanceInfo[], device: number): number =>
    list.filter((worker) => worker.kind === "GPU" && worker.device === device).length;
  let utilization = 0;
  let memory = 0;
  let memoryKnown = false;
  for (const gpu of gpus) {
    const all = onDevice(workers.workers, gpu.device!);
    const own = onDevice(versionWorkers, gpu.device!);
    if (all === 0 || own === 0) continue;
    utilization += ((gpu.utilization ?? 0) * own) / all;
    if (gpu.memoryUsedBytes !== null) {
      memory += (gpu.memoryUsedBytes * own) / all;
      memoryKnown = true;
    }
  }
  const usesGpu = versionWorkers.some((worker) => worker.kind === "GPU");
  return {
    gpuUtilization: Math.min(1, utilization / gpus.length),
    gpuMemoryBytes: usesGpu ? (memoryKnown ? BigInt(Math.round(memory)) : null) : 0n,
  };
}
