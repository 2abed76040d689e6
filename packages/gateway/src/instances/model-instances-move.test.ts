import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../observability/logger.js";
import { GatewayMetrics } from "../observability/metrics.js";
import type { GpuInventory } from "./gpu-inventory.js";
import { instancePlacements } from "./instance-placement.js";
import { type InstanceLaunchSpec, ModelInstances, type ModelInstancesOptions } from "./model-instances.js";

/**
 * ModelInstances.replaceAll, the gateway's move of a model between CPU and
 * GPU (the resource scheduler's hardware fit), through real worker
 * processes: a TypeScript model that declares `usesGpu = true` and takes
 * 20 ms per request is kept busy by eight clients while its one CPU
 * instance is replaced by two KIND_GPU instances (fake inventory: 2 GPUs)
 * and back; not one request fails, and each instance reaches the backend
 * with its kind and GPU. A move the backend refuses (a model that runs on
 * the CPU only) leaves the pool as it was, still serving.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const ENTRY = path.join(ROOT, "packages/worker/dist/main.js");
const dir = mkdtempSync(path.join(os.tmpdir(), "operon-move-"));
const gpuModelPath = path.join(dir, "mover", "1", "model.mjs");
const cpuModelPath = path.join(dir, "cpu_only", "1", "model.mjs");
const lines: string[] = [];

const modelSource = (usesGpu: boolean): string => `export default class {
  ${usesGpu ? "usesGpu = true;" : ""}
  initialize(args) { args.log("info", "placed " + args.instanceName + " " + args.instanceKind + " " + args.deviceId); }
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return requests.map(() => ({ outputs: [ctx.tensor.float32("y", [1, 1], [7])] }));
  }
}\n`;

beforeAll(() => {
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], {
    cwd: ROOT,
    stdio: "inherit",
  });
  for (const [file, usesGpu] of [
    [gpuModelPath, true],
    [cpuModelPath, false],
  ] as const) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, modelSource(usesGpu));
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cpuConfig = {
  name: "mover",
  backend: "typescript",
  max_batch_size: 0,
  input: [{ name: "x", data_type: "TYPE_FP32", dims: [1, 1] }],
  output: [{ name: "y", data_type: "TYPE_FP32", dims: [1, 1] }],
  instance_group: [{ name: "mover_0", kind: "KIND_CPU", count: 1 }],
};
const gpuConfig = { ...cpuConfig, instance_group: [{ name: "mover_gpu", kind: "KIND_GPU", count: 1 }] };
const backToCpu = { ...cpuConfig, instance_group: [{ name: "mover_cpu", kind: "KIND_CPU", count: 2 }] };

function options(gpus: GpuInventory): ModelInstancesOptions {
  const destination = new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      lines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((line) => line !== ""),
      );
      done();
    },
  });
  return { workerEntry: ENTRY, logger: createLogger({ destination }), metrics: new GatewayMetrics(), gpus };
}

function placedLines(): string[] {
  return lines
    .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? "")
    .filter((msg) => msg.startsWith("placed "))
    .sort();
}

/** `clients` loops of requests until stopped; resolves with [answered, failure messages]. */
function load(pool: ModelInstances, clients: number): { stop: () => Promise<[number, string[]]> } {
  let running = true;
  let answered = 0;
  const failures: string[] = [];
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      try {
        await pool.execute({
          inputs: [{ name: "x", datatype: "FP32", shape: [1, 1], data: Buffer.from(new Float32Array([1]).buffer) }],
          outputNames: undefined,
          batchSize: 1,
          level: 0,
          timeoutNs: 0,
        });
        answered += 1;
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return [answered, failures];
    },
  };
}

const placements = (pool: ModelInstances): Array<[string, string, number | null]> =>
  pool.workerInfos().map((w) => [w.instance, w.kind, w.device]);

describe("moving a model between CPU and GPU (ModelInstances.replaceAll)", () => {
  it("moves a pool under load to KIND_GPU on every GPU and back to the CPU with no failed request", async () => {
    lines.length = 0;
    const spec: InstanceLaunchSpec = {
      model: "mover",
      version: "1",
      backend: "typescript",
      modelPath: gpuModelPath,
      config: cpuConfig,
    };
    const pool = await ModelInstances.start(spec, ["mover_0_0"], options({ count: 2 }));
    const traffic = load(pool, 8);
    // Some instance serves at every moment of the moves (the new kind's are up before the old ones leave).
    let fewestReady = pool.readyCount;
    const sampler = setInterval(() => (fewestReady = Math.min(fewestReady, pool.readyCount)), 2);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const gpuNames = instancePlacements("mover", gpuConfig, 2).map((p) => p.name);
      await pool.replaceAll(gpuNames, gpuConfig, 5000);
      expect(placements(pool)).toEqual([
        ["mover_gpu_0", "GPU", 0],
        ["mover_gpu_1", "GPU", 1],
      ]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await pool.replaceAll(["mover_cpu_0", "mover_cpu_1"], backToCpu, 5000);
      expect(placements(pool)).toEqual([
        ["mover_cpu_0", "CPU", null],
        ["mover_cpu_1", "CPU", null],
      ]);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      clearInterval(sampler);
      const [answered, failures] = await traffic.stop();
      await pool.stop(1000);
      expect(failures).toEqual([]);
      expect(fewestReady).toBeGreaterThanOrEqual(1);
      // 8 clients at 20 ms a request for over a second: hundreds served across both moves.
      expect(answered).toBeGreaterThan(100);
    }
    expect(placedLines()).toEqual([
      "placed mover_0_0 KIND_CPU null",
      "placed mover_cpu_0 KIND_CPU null",
      "placed mover_cpu_1 KIND_CPU null",
      "placed mover_gpu_0 KIND_GPU 0",
      "placed mover_gpu_1 KIND_GPU 1",
    ]);
  }, 60_000);

  it("leaves the pool as it was, still serving, when the new kind's launch is refused", async () => {
    const spec: InstanceLaunchSpec = {
      model: "cpu_only",
      version: "1",
      backend: "typescript",
      modelPath: cpuModelPath,
      config: { ...cpuConfig, name: "cpu_only" },
    };
    const pool = await ModelInstances.start(spec, ["mover_0_0"], options({ count: 2 }));
    const traffic = load(pool, 4);
    try {
      await expect(pool.replaceAll(["mover_gpu_0", "mover_gpu_1"], gpuConfig, 5000)).rejects.toThrow(
        "the typescript backend runs its models on the CPU",
      );
      expect(placements(pool)).toEqual([["mover_0_0", "CPU", null]]);
      await expect(pool.replaceAll(["mover_0_0"], cpuConfig)).rejects.toThrow("already in the pool");
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      const [answered, failures] = await traffic.stop();
      await pool.stop(1000);
      expect(failures).toEqual([]);
      expect(answered).toBeGreaterThan(10);
    }
  }, 60_000);
});
