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
import {
  type InstanceLaunchSpec,
  ModelInstances,
  type ModelInstancesOptions,
  launchInstance,
} from "./model-instances.js";

/**
 * launchInstance hands each instance its own kind and GPU (instance_group
 * placement) through real worker processes: a TypeScript model that declares
 * `usesGpu = true` logs what its initialize() was told. The GPU inventory is
 * injected (this host has no GPU; the refusal on a GPU-less host is in
 * e2e/gpu-placement.test.ts). On a host with GPUs, a KIND_GPU instance of a
 * backend that runs on the CPU only is refused, never run on the CPU.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const ENTRY = path.join(ROOT, "packages/worker/dist/main.js");
const IDENTITY_LIBRARY = path.join(
  ROOT,
  "native/build/tritonserver/backends/operon_identity/libtriton_operon_identity.so",
);
const dir = mkdtempSync(path.join(os.tmpdir(), "operon-placement-"));
const modelPath = path.join(dir, "placed", "1", "model.mjs");
const cpuModelPath = path.join(dir, "cpu_only", "1", "model.mjs");
const lines: string[] = [];

beforeAll(() => {
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], {
    cwd: ROOT,
    stdio: "inherit",
  });
  mkdirSync(path.dirname(modelPath), { recursive: true });
  writeFileSync(
    modelPath,
    `export default class Placed {
      usesGpu = true;
      initialize(args) { args.log("info", "placed " + args.instanceName + " " + args.instanceKind + " " + args.deviceId); }
      execute(requests, ctx) { return requests.map(() => ({ outputs: [ctx.tensor.float32("y", [1, 1], [0])] })); }
    }\n`,
  );
  mkdirSync(path.dirname(cpuModelPath), { recursive: true });
  writeFileSync(
    cpuModelPath,
    `export default class CpuOnly {
      initialize(args) { args.log("info", "placed " + args.instanceName + " " + args.instanceKind + " " + args.deviceId); }
      execute(requests, ctx) { return requests.map(() => ({ outputs: [ctx.tensor.float32("y", [1, 1], [0])] })); }
    }\n`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const config = {
  name: "placed",
  backend: "typescript",
  max_batch_size: 0,
  input: [{ name: "x", data_type: "TYPE_FP32", dims: [1, 1] }],
  output: [{ name: "y", data_type: "TYPE_FP32", dims: [1, 1] }],
  instance_group: [
    { name: "cpu", kind: "KIND_CPU", count: 1 },
    { name: "gpu", kind: "KIND_GPU", count: 1, gpus: [0, 1] },
  ],
};
const spec: InstanceLaunchSpec = { model: "placed", version: "1", backend: "typescript", modelPath, config };

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

/** The load's error message, or "loaded" (the instance stopped again) when it loads. */
async function loadError(launch: InstanceLaunchSpec, name: string, opts: ModelInstancesOptions): Promise<string> {
  try {
    const { worker } = await launchInstance(launch, name, opts);
    await worker.stop(1000);
    return "loaded";
  } catch (error) {
    return (error as Error).message;
  }
}

function placedLines(): string[] {
  return lines
    .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? "")
    .filter((msg) => msg.startsWith("placed "))
    .sort();
}

describe("instance placement reaches the backend", () => {
  it("gives each instance of a mixed CPU + gpus: [0, 1] config its own kind and device", async () => {
    const names = instancePlacements("placed", config, 2).map((p) => p.name);
    expect(names).toEqual(["cpu_0", "gpu_0", "gpu_1"]);
    const pool = await ModelInstances.start(spec, names, options({ count: 2 }));
    try {
      expect(placedLines()).toEqual([
        "placed cpu_0 KIND_CPU null",
        "placed gpu_0 KIND_GPU 0",
        "placed gpu_1 KIND_GPU 1",
      ]);
      expect(pool.workerInfos().map((w) => [w.instance, w.kind, w.device])).toEqual([
        ["cpu_0", "CPU", null],
        ["gpu_0", "GPU", 0],
        ["gpu_1", "GPU", 1],
      ]);
    } finally {
      await pool.stop(1000);
    }
  }, 60_000);

  it("grows a gpus: [0, 1] pool on its GPUs when rescaled (count per GPU), never onto the CPU, and shrinks it evenly", async () => {
    lines.length = 0;
    const gpuOnly = { ...config, instance_group: [{ name: "gpu", kind: "KIND_GPU", count: 1, gpus: [0, 1] }] };
    const perGpu = (count: number) => ({ ...gpuOnly, instance_group: [{ ...gpuOnly.instance_group[0]!, count }] });
    const pool = await ModelInstances.start({ ...spec, config: gpuOnly }, ["gpu_0", "gpu_1"], options({ count: 2 }));
    try {
      await pool.resize(4, (index) => `gpu_${index}`, 1000, perGpu(2));
      expect(placedLines()).toEqual([
        "placed gpu_0 KIND_GPU 0",
        "placed gpu_1 KIND_GPU 1",
        "placed gpu_2 KIND_GPU 0",
        "placed gpu_3 KIND_GPU 1",
      ]);
      await pool.resize(2, (index) => `gpu_${index}`, 1000, perGpu(1));
      expect(pool.workerInfos().map((w) => [w.instance, w.kind, w.device])).toEqual([
        ["gpu_0", "GPU", 0],
        ["gpu_1", "GPU", 1],
      ]);
    } finally {
      await pool.stop(1000);
    }
  }, 60_000);

  it("refuses a KIND_GPU instance on a host without a GPU, saying why, and starts nothing", async () => {
    lines.length = 0;
    await expect(
      launchInstance(
        spec,
        "gpu_0",
        options({ count: 0, reason: "no NVIDIA driver on this host (/dev/nvidiactl does not exist)" }),
      ),
    ).rejects.toThrow(
      "model 'placed': instance 'gpu_0' is KIND_GPU on GPU 0, but this host has no usable GPU: no NVIDIA driver on this host (/dev/nvidiactl does not exist)",
    );
    await expect(launchInstance(spec, "gpu_1", options({ count: 1 }))).rejects.toThrow(
      "instance 'gpu_1' is KIND_GPU on GPU 1, but this host has 1 GPU (0..0)",
    );
    expect(placedLines()).toEqual([]);
  });

  it("refuses, on a GPU host, a KIND_GPU instance of a backend that runs on the CPU only, naming it and KIND_CPU", async () => {
    lines.length = 0;
    const gpus = options({ count: 2 });
    const cpuOnly: InstanceLaunchSpec = {
      ...spec,
      model: "cpu_only",
      modelPath: cpuModelPath,
      config: { ...config, name: "cpu_only" },
    };
    expect(await loadError(cpuOnly, "gpu_1", gpus)).toBe(
      "model 'cpu_only': instance 'gpu_1' is KIND_GPU, but the typescript backend runs its models on the CPU (a model that runs its own work on the GPU declares usesGpu = true); use kind KIND_CPU",
    );
    expect(
      await loadError(
        { ...spec, model: "echoed", backend: "echo", config: { ...config, name: "echoed", backend: "echo" } },
        "gpu_0",
        gpus,
      ),
    ).toBe("echo backend: instance 'gpu_0' is KIND_GPU, but this backend runs on the CPU only; use kind KIND_CPU");
    // A native backend decides in its TRITONBACKEND_ModelInstanceInitialize; Operon's CPU ones refuse.
    const identityDir = path.join(dir, "ident");
    mkdirSync(path.join(identityDir, "1"), { recursive: true });
    const identity: InstanceLaunchSpec = {
      model: "ident",
      version: "1",
      backend: "native",
      modelPath: identityDir,
      config: {
        name: "ident",
        backend: "operon_identity",
        max_batch_size: 0,
        input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [1] }],
        output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [1] }],
        instance_group: [{ name: "gpu", kind: "KIND_GPU", count: 1, gpus: [1] }],
      },
      native: {
        backendName: "operon_identity",
        libraryPath: IDENTITY_LIBRARY,
        backendConfig: {},
        version: "1",
        autoComplete: false,
      },
    };
    expect(await loadError(identity, "gpu_0", gpus)).toContain(
      "operon_identity: instance 'gpu_0' is KIND_GPU, but this backend runs on the CPU only: use instance_group { kind: KIND_CPU }",
    );
    // The same CPU-only TypeScript model loads as KIND_CPU.
    const worker = await launchInstance(cpuOnly, "cpu_0", gpus);
    await worker.worker.stop(1000);
    expect(placedLines()).toEqual(["placed cpu_0 KIND_CPU null"]);
  }, 60_000);
});
