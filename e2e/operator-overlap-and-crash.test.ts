import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempRepository, startOperon, type RunningOperon } from "./support/operon-process.js";

/**
 * Two operator properties through the real server: independent DAG branches
 * run at the same time, and a TypeScript model that crashes its worker
 * process fails only its own requests.
 */
function tsModel(repository: string, name: string, source: string, config: string): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  writeFileSync(join(repository, name, "1", "model.js"), source);
  writeFileSync(join(repository, name, "config.pbtxt"), `name: "${name}"\nbackend: "typescript"\n${config}`);
}

const IO = `max_batch_size: 0
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]`;

// Waits 300 ms (without blocking its worker's event loop), then echoes IN as OUT.
const SLEEPER = `export default class {
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;

// Echoes IN, but exits its whole process when IN is -1 (a backend bug that kills the worker).
const CRASHER = `export default class {
  execute(requests) {
    for (const request of requests) if (request.input("IN").toFloat32Array()[0] === -1) process.exit(3);
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;

async function infer(
  server: RunningOperon,
  model: string,
  value: number,
): Promise<{ status: number; body: { outputs?: Array<{ name: string; data: number[] }>; error?: string } }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [value] }] }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

async function metricSum(server: RunningOperon, prefix: string): Promise<number> {
  const text = await (await fetch(server.metricsUrl)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(prefix))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
}

describe("operator branches and TypeScript model crashes (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    tsModel(repository, "sleeper", SLEEPER, `${IO}\ninstance_group [ { count: 2 } ]`);
    tsModel(repository, "crasher", CRASHER, IO);
    tsModel(repository, "bystander", SLEEPER.replace("300", "1"), IO);
    server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "*",
    ]);
    const spec = {
      inputs: [{ name: "IN", datatype: "FP32", dims: [1] }],
      outputs: [
        { name: "LEFT", datatype: "FP32", dims: [1] },
        { name: "RIGHT", datatype: "FP32", dims: [1] },
      ],
      steps: [
        { id: "left", kind: "model", model: "sleeper", inputs: { IN: "IN" }, outputs: { OUT: "LEFT" } },
        { id: "right", kind: "model", model: "sleeper", inputs: { IN: "IN" }, outputs: { OUT: "RIGHT" } },
      ],
    };
    const registered = await fetch(`${server.httpUrl}/v2/operators/fork`, {
      method: "POST",
      body: JSON.stringify(spec),
    });
    expect(registered.status, await registered.text()).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("runs independent branches at the same time: the request takes less than the sum of its steps", async () => {
    const started = performance.now();
    const result = await infer(server, "fork", 7);
    const elapsedUs = (performance.now() - started) * 1000;
    expect(result.status).toBe(200);
    expect(result.body.outputs!.map((output) => [output.name, output.data[0]])).toEqual([
      ["LEFT", 7],
      ["RIGHT", 7],
    ]);
    // Each step took ≥ 300 ms (the model sleeps); run one after the other they would take their sum.
    const stepsUs = await metricSum(server, 'operon_operator_step_duration_us{operator="fork"');
    expect(await metricSum(server, 'operon_operator_step_executions_total{operator="fork"')).toBe(2);
    expect(stepsUs).toBeGreaterThanOrEqual(600_000);
    expect(elapsedUs).toBeLessThan(stepsUs);
  });

  it("answers with each step's timing when asked (operon_step_timings): the two branches' intervals overlap", async () => {
    const response = await fetch(`${server.httpUrl}/v2/models/fork/infer`, {
      method: "POST",
      body: JSON.stringify({
        parameters: { operon_step_timings: true },
        inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [3] }],
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { parameters?: Record<string, unknown> };
    const steps = JSON.parse(String(body.parameters?.operon_step_timings)) as Array<{
      step: string;
      status: string;
      startMs: number;
      durationMs: number;
    }>;
    expect(steps.map((step) => [step.step, step.status])).toEqual([
      ["left", "ok"],
      ["right", "ok"],
    ]);
    const [left, right] = steps as [(typeof steps)[0], (typeof steps)[0]];
    for (const step of steps) expect(step.durationMs).toBeGreaterThanOrEqual(290);
    // Overlap: each branch starts before the other one ends.
    expect(right.startMs).toBeLessThan(left.startMs + left.durationMs);
    expect(left.startMs).toBeLessThan(right.startMs + right.durationMs);
    // Without the parameter, no timings are sent.
    const plain = (await (
      await fetch(`${server.httpUrl}/v2/models/fork/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [3] }] }),
      })
    ).json()) as { parameters?: Record<string, unknown> };
    expect(plain.parameters?.operon_step_timings).toBeUndefined();
  });

  it("a model that kills its own worker fails only its request; other models keep serving and it comes back", async () => {
    const bystanders = Promise.all(Array.from({ length: 10 }, (_, i) => infer(server, "bystander", i)));
    const crashed = await infer(server, "crasher", -1);
    expect(crashed.status).toBe(503);
    expect(crashed.body.error).toMatch(/worker for instance 'crasher_0' .*exited unexpectedly/);
    for (const [i, result] of (await bystanders).entries()) {
      expect(result.status).toBe(200);
      expect(result.body.outputs![0]!.data[0]).toBe(i);
    }
    const deadline = Date.now() + 20_000;
    let recovered = await infer(server, "crasher", 5);
    while (recovered.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      recovered = await infer(server, "crasher", 5);
    }
    expect(recovered.status).toBe(200);
    expect(recovered.body.outputs![0]!.data[0]).toBe(5);
    expect(await metricSum(server, 'operon_worker_restarts_total{model="crasher"')).toBe(1);
    expect(server.output()).toMatch(/backend worker exited unexpectedly; restarting it/);
  });
});
