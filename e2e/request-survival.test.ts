import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startOperon, tempRepository, workerProcesses, type RunningOperon } from "./support/operon-process.js";

/**
 * Requests that survive a failing batch or a bloated worker (issue 25),
 * through the real server:
 * - a batch the model fails as a whole because of one bad request is split
 *   and run again request by request, so only the bad one fails;
 * - a worker over its memory cap (config parameter worker_memory_limit_mb)
 *   is recycled between requests without failing any.
 */
function tsModel(repository: string, name: string, source: string, config: string): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  writeFileSync(join(repository, name, "1", "model.js"), source);
  writeFileSync(
    join(repository, name, "config.pbtxt"),
    `name: "${name}"
backend: "typescript"
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
${config}
`,
  );
}

// Throws for the whole execution when any request carries -1 (a batch-wide failure), else echoes IN.
const POISONED = `export default class {
  execute(requests) {
    if (requests.some((request) => request.input("IN").toFloat32Array()[0] === -1)) throw new Error("poisoned batch: a request carried -1");
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;

// Keeps 40 MB more of memory on every request (a leak), then echoes IN.
const LEAKY = `const kept = [];
export default class {
  execute(requests) {
    for (const request of requests) kept.push(Buffer.alloc(40 * 1024 * 1024, 1));
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;

async function infer(
  server: RunningOperon,
  model: string,
  value: number,
): Promise<{ status: number; value?: number; error?: string }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1, 1], data: [value] }] }),
  });
  const body = (await response.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
  return { status: response.status, value: body.outputs?.[0]?.data[0], error: body.error };
}

async function metric(server: RunningOperon, prefix: string): Promise<number> {
  const text = await (await fetch(server.metricsUrl)).text();
  return text
    .split("\n")
    .filter((row) => row.startsWith(prefix))
    .reduce((sum, row) => sum + Number(row.split(" ").pop()), 0);
}

describe("requests that survive a failing batch or a bloated worker (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    // One instance and a 300 ms queue delay: requests sent together run as one batch.
    tsModel(
      repository,
      "poisoned",
      POISONED,
      `max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 300000 }
instance_group [ { count: 1 } ]`,
    );
    tsModel(
      repository,
      "leaky",
      LEAKY,
      `max_batch_size: 4
instance_group [ { count: 1 } ]
parameters { key: "worker_memory_limit_mb" value: { string_value: "200" } }`,
    );
    server = await startOperon(["--model-repository", repository]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("splits a batch that failed because of one bad request: only that request fails", async () => {
    const results = await Promise.all([1, 2, -1, 4].map((value) => infer(server, "poisoned", value)));
    expect(results.map((result) => result.status)).toEqual([200, 200, 500, 200]);
    expect(results.map((result) => result.value)).toEqual([1, 2, undefined, 4]);
    expect(results[2]!.error).toMatch(/poisoned batch: a request carried -1/);
    // The four ran as one batch that failed (executions count successes only), then one by one.
    expect(await metric(server, 'operon_batch_split_requests_total{model="poisoned"')).toBe(4);
    expect(await metric(server, 'nv_inference_exec_count{model="poisoned"')).toBe(3);
    // A good batch is not split.
    const good = await Promise.all([5, 6].map((value) => infer(server, "poisoned", value)));
    expect(good.map((result) => result.value)).toEqual([5, 6]);
    expect(await metric(server, 'nv_inference_exec_count{model="poisoned"')).toBe(4);
    expect(await metric(server, 'operon_batch_split_requests_total{model="poisoned"')).toBe(4);
  });

  it("recycles a worker over its memory cap between requests, without failing one", async () => {
    const first = workerProcesses(server.pid).find((worker) => worker.instance.startsWith("leaky"))?.pid;
    expect(first).toBeDefined();
    // 40 MB more per request against a 200 MB cap: a few requests in, the worker must be replaced.
    const results: Array<{ status: number; value?: number; error?: string }> = [];
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && results.length < 40) {
      results.push(await infer(server, "leaky", results.length));
      if ((await metric(server, 'operon_worker_recycles_total{model="leaky"')) >= 2 && results.length >= 12) break;
    }
    expect(results.filter((result) => result.status !== 200)).toEqual([]);
    expect(results.map((result) => result.value)).toEqual(results.map((_, index) => index));
    expect(await metric(server, 'operon_worker_recycles_total{model="leaky"')).toBeGreaterThanOrEqual(2);
    // A recycle is not a crash, and the worker serving now is a fresh process.
    expect(await metric(server, 'operon_worker_restarts_total{model="leaky"')).toBe(0);
    // The last recycle may still be under way (the old process gone, its replacement not yet spawned: seen on a
    // loaded host), so wait for the replacement instead of looking at the one moment after the last answer.
    const now = await vi.waitFor(
      () => {
        const pid = workerProcesses(server.pid).find((worker) => worker.instance.startsWith("leaky"))?.pid;
        if (pid === undefined) throw new Error("no leaky worker process is running");
        return pid;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(now).not.toBe(first);
    expect(server.output()).toMatch(/over its memory cap; recycling it between requests/);
  });

  it("concurrent requests all succeed while the worker is recycled under them", async () => {
    const before = await metric(server, 'operon_worker_recycles_total{model="leaky"');
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => infer(server, "leaky", i)));
    expect(results.filter((result) => result.status !== 200)).toEqual([]);
    expect(await metric(server, 'operon_worker_recycles_total{model="leaky"')).toBeGreaterThan(before);
  });
});
