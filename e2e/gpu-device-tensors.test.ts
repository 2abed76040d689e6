import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * A GPU-aware native backend in the real `operon serve`, on a host without a
 * GPU: the gateway's inventory is faked (OPERON_GPU_PROBE_ROOT, one GPU) and
 * the workers load the fake CUDA driver (native/test-fixtures/fake-cuda-driver.cc,
 * named by OPERON_CUDA_DRIVER_LIB, which the worker environment passes on).
 * `operon_gpu_identity` asks for its outputs in GPU memory and copies with
 * the driver API only. Served as two KIND_GPU steps of an operator, its
 * outputs come back in host memory: the worker answers the backend's GPU
 * preference with its shared memory, since the gateway does not yet keep an
 * operator's tensors on the device between workers (README "GPUs"; the
 * native layer's device pool, GPU inputs and CUDA IPC are tested in the C++
 * suite). A missing driver and a KIND_CPU instance are refused at load.
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

/** A folder laid out like a host with one NVIDIA GPU, for the gateway's inventory. */
function fakeGpuHost(dir: string): string {
  mkdirSync(join(dir, "dev"), { recursive: true });
  writeFileSync(join(dir, "dev/nvidiactl"), "");
  mkdirSync(join(dir, "proc/driver/nvidia/gpus/0000:01:00.0"), { recursive: true });
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

  beforeAll(async () => {
    for (const file of [FAKE_DRIVER, BACKEND])
      if (!existsSync(file)) throw new Error(`${file} is missing: run node native/scripts/build-tritonserver.mjs`);
    dir = mkdtempSync(join(tmpdir(), "operon-e2e-gpu-tensors-"));
    repository = tempRepository("operon-e2e-gpu-tensors-repo-");
    write(repository, "gpu_a", gpuIdentity("gpu_a"));
    write(repository, "gpu_b", gpuIdentity("gpu_b"));
    write(repository, "gpu_pipeline", PIPELINE);
    write(repository, "gpu_as_cpu", gpuIdentity("gpu_as_cpu", "kind: KIND_CPU, count: 1"));
    const host = fakeGpuHost(join(dir, "root"));
    const common = ["--model-repository", repository, "--model-control-mode", "explicit", "--exit-on-error=false"];
    server = await startOperon(
      [...common, "--load-model", "gpu_a", "--load-model", "gpu_b", "--load-model", "gpu_pipeline"],
      {
        env: { OPERON_GPU_PROBE_ROOT: host, CUDA_VISIBLE_DEVICES: "0", OPERON_CUDA_DRIVER_LIB: FAKE_DRIVER },
      },
    );
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

  it("serves an operator of two KIND_GPU steps with the right answer", async () => {
    const data = [1.5, -2, 3.25, 4];
    const body = await infer(server!, "gpu_pipeline", "IN", data);
    expect(body.outputs).toEqual([{ name: "OUT", datatype: "FP32", shape: [1, 4], data }]);
  });

  it("gets host memory from the worker for an output the backend asked to have on the GPU (not yet kept there)", async () => {
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
