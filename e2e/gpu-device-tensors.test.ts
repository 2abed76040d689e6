import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * A GPU-aware native backend in the real `operon serve`, on a host without a
 * GPU: the gateway's inventory is faked (OPERON_GPU_PROBE_ROOT, two GPUs) and
 * the workers load the fake CUDA driver (native/test-fixtures/fake-cuda-driver.cc,
 * named by OPERON_CUDA_DRIVER_LIB, which the worker environment passes on).
 * `operon_gpu_identity` asks for its outputs in GPU memory and copies with
 * the driver API only. Served as two KIND_GPU steps of an operator on one
 * GPU, the intermediate tensor stays on the device: the first worker keeps
 * it in its pool and the second reads it in place through CUDA IPC. The
 * fake driver's copy counters (each worker process writes its own to
 * fake-cuda-counters/<pid>.json beside the driver) show it: one copy in
 * (the producer), one copy out (the consumer's answer, in host memory), no
 * device-to-host copy in the producer. Steps on different GPUs, or with a
 * CPU step between them, move the tensor through host memory as before. A
 * missing driver and a KIND_CPU instance are refused at load.
 */
const FAKE_DRIVER = join(REPO_ROOT, "native/build/tritonserver/test-fixtures/fake-cuda/libcuda.so.1");
const BACKEND = join(
  REPO_ROOT,
  "native/build/tritonserver/backends/operon_gpu_identity/libtriton_operon_gpu_identity.so",
);

function gpuIdentity(name: string, group = "kind: KIND_GPU, count: 1, gpus: [ 0 ]"): string {
  return `
name: "${name}"
backend: "operon_gpu_identity"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
instance_group [ { ${group} } ]
`;
}

function cpuIdentity(name: string): string {
  return `
name: "${name}"
backend: "operon_identity"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
`;
}

/** An operator calling the models in order, each step's OUTPUT0 feeding the next one's INPUT0. */
function chain(name: string, models: string[]): string {
  const steps = models.map((model, i) => {
    const from = i === 0 ? "IN" : `t${i}`;
    const to = i === models.length - 1 ? "OUT" : `t${i + 1}`;
    return `{ model_name: "${model}" model_version: -1 input_map { key: "INPUT0" value: "${from}" } output_map { key: "OUTPUT0" value: "${to}" } }`;
  });
  return `
name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 4 ] } ]
ensemble_scheduling { step [ ${steps.join(",\n")} ] }
`;
}

interface Counters {
  htod: number;
  dtoh: number;
  dtod: number;
  allocs: number;
  frees: number;
  ipcOpens: number;
}

/** The fake driver's counters of each worker process that loaded it, by pid. */
function readCounters(folder: string): Map<string, Counters> {
  const all = new Map<string, Counters>();
  for (const file of readdirSync(folder))
    if (file.endsWith(".json")) all.set(file, JSON.parse(readFileSync(join(folder, file), "utf8")) as Counters);
  return all;
}

/** What each process's counters grew by between two readings (processes with no change left out). */
function grewBy(before: Map<string, Counters>, after: Map<string, Counters>): Counters[] {
  const changes: Counters[] = [];
  for (const [pid, now] of after) {
    const was = before.get(pid);
    const delta = {
      htod: now.htod - (was?.htod ?? 0),
      dtoh: now.dtoh - (was?.dtoh ?? 0),
      dtod: now.dtod - (was?.dtod ?? 0),
      allocs: now.allocs - (was?.allocs ?? 0),
      frees: now.frees - (was?.frees ?? 0),
      ipcOpens: now.ipcOpens - (was?.ipcOpens ?? 0),
    };
    if (Object.values(delta).some((value) => value !== 0)) changes.push(delta);
  }
  return changes;
}

const PIPELINE = `
name: "gpu_pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "gpu_a" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "mid" } },
    { model_name: "gpu_b" model_version: -1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUT" } }
  ]
}
`;

function write(repository: string, name: string, config: string): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  writeFileSync(join(repository, name, "config.pbtxt"), config);
}

/** A folder laid out like a host with two NVIDIA GPUs, for the gateway's inventory. */
function fakeGpuHost(dir: string): string {
  mkdirSync(join(dir, "dev"), { recursive: true });
  writeFileSync(join(dir, "dev/nvidiactl"), "");
  mkdirSync(join(dir, "proc/driver/nvidia/gpus/0000:01:00.0"), { recursive: true });
  mkdirSync(join(dir, "proc/driver/nvidia/gpus/0000:02:00.0"), { recursive: true });
  return dir;
}

async function infer(server: RunningOperon, model: string, input: string, data: number[]): Promise<any> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: input, datatype: "FP32", shape: [1, 4], data }] }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

/** The device pool gauges of GPU 0 the workers published (operon_gpu_pool_*, summed over workers). */
async function poolGauges(server: RunningOperon): Promise<{ live?: number; cached?: number; imported?: number }> {
  const text = await (await fetch(server.metricsUrl)).text();
  const value = (name: string): number | undefined => {
    const match = new RegExp(`^${name}\\{gpu="0"\\} (\\S+)$`, "m").exec(text);
    return match === null ? undefined : Number(match[1]);
  };
  return {
    live: value("operon_gpu_pool_live_regions"),
    cached: value("operon_gpu_pool_cached_regions"),
    imported: value("operon_gpu_pool_imported_regions"),
  };
}

async function load(server: RunningOperon, model: string): Promise<{ status: number; error?: string }> {
  const response = await fetch(`${server.httpUrl}/v2/repository/models/${model}/load`, { method: "POST", body: "{}" });
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  return { status: response.status, ...(body.error !== undefined ? { error: body.error } : {}) };
}

describe("GPU-aware native backend on a fake GPU host (fake CUDA driver)", () => {
  let dir: string;
  let repository: string;
  let server: RunningOperon | undefined;
  let driverless: RunningOperon | undefined;
  let counters: string;

  beforeAll(async () => {
    for (const file of [FAKE_DRIVER, BACKEND])
      if (!existsSync(file)) throw new Error(`${file} is missing: run node native/scripts/build-tritonserver.mjs`);
    dir = mkdtempSync(join(tmpdir(), "operon-e2e-gpu-tensors-"));
    repository = tempRepository("operon-e2e-gpu-tensors-repo-");
    write(repository, "gpu_a", gpuIdentity("gpu_a"));
    write(repository, "gpu_b", gpuIdentity("gpu_b"));
    write(repository, "gpu_pipeline", PIPELINE);
    write(repository, "gpu_other", gpuIdentity("gpu_other", "kind: KIND_GPU, count: 1, gpus: [ 1 ]"));
    write(repository, "cpu_id", cpuIdentity("cpu_id"));
    write(repository, "cross_gpus", chain("cross_gpus", ["gpu_a", "gpu_other"]));
    write(repository, "cpu_between", chain("cpu_between", ["gpu_a", "cpu_id", "gpu_b"]));
    write(repository, "gpu_as_cpu", gpuIdentity("gpu_as_cpu", "kind: KIND_CPU, count: 1"));
    const host = fakeGpuHost(join(dir, "root"));
    // The driver in a folder of its own, with the folder its copies write their counters to.
    const driver = join(dir, "driver/libcuda.so.1");
    mkdirSync(join(dir, "driver/fake-cuda-counters"), { recursive: true });
    copyFileSync(FAKE_DRIVER, driver);
    counters = join(dir, "driver/fake-cuda-counters");
    const common = ["--model-repository", repository, "--model-control-mode", "explicit", "--exit-on-error=false"];
    const models = ["gpu_a", "gpu_b", "gpu_other", "cpu_id", "gpu_pipeline", "cross_gpus", "cpu_between"];
    server = await startOperon([...common, ...models.flatMap((model) => ["--load-model", model])], {
      env: { OPERON_GPU_PROBE_ROOT: host, CUDA_VISIBLE_DEVICES: "0,1", OPERON_CUDA_DRIVER_LIB: driver },
    });
    driverless = await startOperon(common, {
      env: {
        OPERON_GPU_PROBE_ROOT: host,
        CUDA_VISIBLE_DEVICES: "0",
        OPERON_CUDA_DRIVER_LIB: join(dir, "no-such-libcuda.so.1"),
      },
    });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await driverless?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    if (repository !== undefined) rmSync(repository, { recursive: true, force: true });
  });

  it("keeps the intermediate of two KIND_GPU steps on one GPU on the device, answering in host memory", async () => {
    const data = [1.5, -2, 3.25, 4];
    const before = readCounters(counters);
    const body = await infer(server!, "gpu_pipeline", "IN", data);
    expect(body.outputs).toEqual([{ name: "OUT", datatype: "FP32", shape: [1, 4], data }]);
    const changes = grewBy(before, readCounters(counters));
    // The producer copied the request's input in and nothing out; the consumer read the intermediate in
    // place (opened through IPC) and copied the answer out to host memory. Nothing else moved.
    const producer = changes.find((change) => change.htod > 0);
    const consumer = changes.find((change) => change.dtoh > 0);
    expect(changes).toHaveLength(2);
    expect(producer).toMatchObject({ htod: 1, dtoh: 0, dtod: 0 });
    expect(consumer).toMatchObject({ htod: 0, dtoh: 1, dtod: 0 });
  });

  it("gives the intermediate's region back to the producer's pool after each request (reused, not reallocated)", async () => {
    await infer(server!, "gpu_pipeline", "IN", [1, 2, 3, 4]);
    const before = readCounters(counters);
    for (let i = 0; i < 3; i++) {
      const data = [i, i + 1, i + 2, i + 3];
      const body = await infer(server!, "gpu_pipeline", "IN", data);
      expect(body.outputs[0].data).toEqual(data);
    }
    const changes = grewBy(before, readCounters(counters));
    // Three requests, each region back in the pool once the consumer's request was done: the driver was
    // asked for no new memory and the consumer opened no new handle (the producer reuses its region).
    expect(changes.map((change) => change.allocs)).toEqual([0, 0]);
    expect(changes.map((change) => change.ipcOpens)).toEqual([0, 0]);
    expect(changes.find((change) => change.htod > 0)).toMatchObject({ htod: 3, dtoh: 0 });
    // The workers' device pools of GPU 0 (summed over the workers): nothing handed out once the requests were
    // answered, the intermediate's region cached for reuse in the producer, opened once in the consumer.
    await expect
      .poll(() => poolGauges(server!), { timeout: 5_000 })
      .toEqual({
        live: 0,
        cached: 1,
        imported: 1,
      });
  });

  it("serves again, from the restarted producer's new regions, after the producing worker was killed", async () => {
    await infer(server!, "gpu_pipeline", "IN", [1, 2, 3, 4]);
    const before = readCounters(counters);
    const producers = [...before].filter(([, counts]) => counts.htod > 0 && counts.dtoh === 0);
    expect(producers).toHaveLength(1);
    const pid = Number(producers[0]![0].replace(".json", ""));
    process.kill(pid, "SIGKILL");
    // The pool restarts the worker; until then the step fails (UNAVAILABLE), never hangs.
    const data = [4, 3, 2, 1];
    let body: any;
    for (let tries = 0; tries < 100 && body === undefined; tries++) {
      const response = await fetch(`${server!.httpUrl}/v2/models/gpu_pipeline/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1, 4], data }] }),
      });
      if (response.status === 200) body = await response.json();
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(body?.outputs[0].data).toEqual(data);
    const changes = grewBy(before, readCounters(counters));
    // A new producer process allocated a region; the consumer opened its handle (the dead worker's stays unused).
    expect(changes.find((change) => change.htod > 0)).toMatchObject({ htod: 1, dtoh: 0, allocs: 1 });
    expect(changes.find((change) => change.dtoh > 0)).toMatchObject({ dtoh: 1, ipcOpens: 1 });
  });

  it("moves the tensor through host memory between steps on different GPUs", async () => {
    const data = [9, 8, 7, 6];
    const before = readCounters(counters);
    const body = await infer(server!, "cross_gpus", "IN", data);
    expect(body.outputs[0].data).toEqual(data);
    // Host memory everywhere: the backends copied host to host, the driver saw no copy.
    expect(grewBy(before, readCounters(counters))).toEqual([]);
  });

  it("moves the tensor through host memory when a CPU step sits between the GPU steps", async () => {
    const data = [0.5, 0.25, -1, 2];
    const before = readCounters(counters);
    const body = await infer(server!, "cpu_between", "IN", data);
    expect(body.outputs[0].data).toEqual(data);
    expect(grewBy(before, readCounters(counters))).toEqual([]);
  });

  it("gets host memory from the worker for a GPU model called directly (only an operator's intermediates stay on the device)", async () => {
    const body = await infer(server!, "gpu_a", "INPUT0", [1, 2, 3, 4]);
    expect(body.outputs[0].data).toEqual([1, 2, 3, 4]);
    expect(body.parameters).toMatchObject({ input_memory: "CPU", output_memory: "CPU" });
  });

  it("refuses a KIND_CPU instance of the GPU-only backend at load, naming KIND_GPU", async () => {
    const result = await load(server!, "gpu_as_cpu");
    expect(result.status).toBe(400);
    expect(result.error).toContain("this backend runs on GPUs only: use instance_group { kind: KIND_GPU }");
  });

  it("refuses a KIND_GPU instance at load when the CUDA driver cannot be loaded, saying why", async () => {
    const result = await load(driverless!, "gpu_a");
    expect(result.status).toBe(400);
    expect(result.error).toMatch(/instance 'gpu_a[_0-9]*' on GPU 0: cannot load the CUDA driver /);
    expect(result.error).toContain("no-such-libcuda.so.1");
  });
});
