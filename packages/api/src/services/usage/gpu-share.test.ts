import type { GpuInfo, WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";
import { describe, expect, it } from "vitest";
import { gpuShareOf } from "./gpu-share.js";

const GIB = 1024 ** 3;

function worker(model: string, instance: string, device: number | null): WorkerInstanceInfo {
  return {
    model,
    version: "1",
    instance,
    backend: "operon_cuda",
    kind: device === null ? "CPU" : "GPU",
    device,
    isolation: "process",
    pid: 1,
    state: "READY",
    inFlight: 0,
    restarts: 0,
    startedAt: null,
    cpuSeconds: 0,
    rssBytes: 0,
  };
}

function gpu(device: number | null, utilization: number | null, memoryUsedBytes: number | null): GpuInfo {
  return {
    device,
    uuid: `GPU-${device}`,
    utilization,
    memoryTotalBytes: 80 * GIB,
    memoryUsedBytes,
    powerUsageWatts: null,
  };
}

function host(workers: WorkerInstanceInfo[], gpus: GpuInfo[]): WorkersResponse {
  return { workers, hostCpuCores: 16, gateway: { pid: 1, cpuSeconds: 0, rssBytes: 0 }, gpus };
}

describe("gpuShareOf (a model's attributable share of the host's GPUs)", () => {
  // GPU 0 at 60 %: "a" has 2 instances there, "b" 1; GPU 1 at 20 %: only "b"; "c" runs on the CPU.
  const workers = [
    worker("a", "a_0", 0),
    worker("a", "a_1", 0),
    worker("b", "b_0", 0),
    worker("b", "b_1", 1),
    worker("c", "c_0", null),
  ];
  const response = host(workers, [gpu(0, 0.6, 30 * GIB), gpu(1, 0.2, 10 * GIB)]);
  const of = (model: string) =>
    gpuShareOf(
      workers.filter((w) => w.model === model),
      response,
    );

  it("splits each GPU's reading by instance count there, over the host's GPUs", () => {
    expect(of("a").gpuUtilization).toBeCloseTo((0.6 * 2) / 3 / 2, 12);
    expect(of("a").gpuMemoryBytes).toBe(20n * BigInt(GIB));
    expect(of("b").gpuUtilization).toBeCloseTo((0.6 / 3 + 0.2) / 2, 12);
    expect(of("b").gpuMemoryBytes).toBe(20n * BigInt(GIB));
    // The shares add up to the host's GPU utilization (mean over its GPUs).
    expect(of("a").gpuUtilization! + of("b").gpuUtilization!).toBeCloseTo((0.6 + 0.2) / 2, 12);
  });

  it("gives a CPU-only model 0 on a GPU host, and null without GPU readings", () => {
    expect(of("c")).toEqual({ gpuUtilization: 0, gpuMemoryBytes: 0n });
    expect(gpuShareOf(workers.slice(0, 2), host(workers, []))).toEqual({ gpuUtilization: null, gpuMemoryBytes: null });
    expect(gpuShareOf(workers.slice(0, 2), undefined)).toEqual({ gpuUtilization: null, gpuMemoryBytes: null });
  });

  it("ignores GPUs CUDA_VISIBLE_DEVICES hides from the gateway and readings a GPU does not report", () => {
    const hidden = host(workers, [gpu(0, null, null), gpu(null, 0.99, 70 * GIB)]);
    expect(gpuShareOf(workers.slice(0, 2), hidden)).toEqual({ gpuUtilization: 0, gpuMemoryBytes: null });
  });
});
