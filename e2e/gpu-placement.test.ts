import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * GPU placement through the real server with no usable GPU: a KIND_GPU
 * instance is refused at load with the reason, never run on the CPU instead
 * (before placement reached launchInstance, the mixed config below loaded
 * every instance on the CPU while the Workers page said GPU), and the server
 * stays ready. The server runs with CUDA_VISIBLE_DEVICES="" (every GPU
 * hidden), so the inventory is none on any host, a GPU CI host included.
 * Placement on GPUs themselves: model-instances-placement.test.ts.
 */
interface Reply {
  status: number;
  body: {
    error?: string;
    workers?: Array<{ model: string; instance: string; kind: string; device: number | null; state: string }>;
  };
}

async function call(url: string, body?: unknown): Promise<Reply> {
  const response = await fetch(url, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Reply["body"]) };
}

const MIXED = `instance_group [ { kind: KIND_CPU, count: 1 }, { kind: KIND_GPU, count: 1, gpus: [ 0 ] } ]`;

describe("KIND_GPU instances on a host without a usable GPU", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "mixed", addSubModel(), { config: ADD_SUB_CONFIG("mixed", MIXED) });
    writeModel(repository, "on_cpu", addSubModel(), {
      config: ADD_SUB_CONFIG("on_cpu", "instance_group [ { kind: KIND_CPU, count: 2 } ]"),
    });
    server = await startOperon(
      ["--model-repository", repository, "--model-control-mode", "explicit", "--load-model", "on_cpu"],
      { env: { CUDA_VISIBLE_DEVICES: "" } },
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses the load, naming the instance, its GPU and why there is none", async () => {
    const reply = await call(`${server.httpUrl}/v2/repository/models/mixed/load`, {});
    expect(reply.status).toBe(503);
    expect(reply.body.error).toContain(
      "instance 'mixed_1_0' is KIND_GPU on GPU 0, but this host has no usable GPU: CUDA_VISIBLE_DEVICES is set and empty (every GPU hidden); use kind KIND_CPU to run it on the CPU",
    );
    const workers = await call(`${server.httpUrl}/v2/operon/workers`);
    expect(workers.body.workers!.filter((w) => w.model === "mixed")).toEqual([]);
    expect((await call(`${server.httpUrl}/v2/models/mixed/ready`)).status).not.toBe(200);
  });

  it("is ready again once the failed model is unloaded, and keeps serving CPU models, whose Workers rows say CPU", async () => {
    expect((await call(`${server.httpUrl}/v2/repository/models/mixed/unload`, {})).status).toBe(200);
    expect((await call(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
    const rows = (await call(`${server.httpUrl}/v2/operon/workers`)).body.workers!.filter((w) => w.model === "on_cpu");
    expect(rows.map((w) => [w.instance, w.kind, w.device, w.state])).toEqual([
      ["on_cpu_0_0", "CPU", null, "READY"],
      ["on_cpu_0_1", "CPU", null, "READY"],
    ]);
    const infer = await fetch(`${server.httpUrl}/v2/models/on_cpu/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
        ],
      }),
    });
    expect([infer.status, await infer.text()]).toEqual([200, expect.stringContaining('"OUTPUT0"')]);
  });

  it("loads the same model once its GPU group is changed to KIND_CPU (the failed load left nothing behind)", async () => {
    const config = JSON.stringify({
      name: "mixed",
      backend: "onnxruntime",
      max_batch_size: 8,
      input: [
        { name: "INPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "INPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      output: [
        { name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "OUTPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
    });
    const reply = await call(`${server.httpUrl}/v2/repository/models/mixed/load`, { parameters: { config } });
    expect(reply.status).toBe(200);
    expect((await call(`${server.httpUrl}/v2/models/mixed/ready`)).status).toBe(200);
  });
});
