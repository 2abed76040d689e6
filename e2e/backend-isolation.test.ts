import { appendFileSync, cpSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import {
  EXAMPLE_REPOSITORY,
  type RunningOperon,
  startOperon,
  tempRepository,
  workerProcesses,
} from "./support/operon-process.js";

/**
 * Execution modes (README "Execution modes"): by default ("auto") a tiny
 * ONNX Runtime model on the CPU runs on the gateway's event loop and any
 * other on threads of the gateway process, TypeScript models always in
 * worker processes, and a model's config parameter `operon_isolation`
 * overrides the server's --backend-isolation for its instances.
 */

const ISOLATION = (mode: string): string => `parameters { key: "operon_isolation" value: { string_value: "${mode}" } }`;

interface WorkerRow {
  model: string;
  instance: string;
  isolation: string;
  pid: number | null;
  state: string;
  cpuSeconds: number | null;
}

async function workers(server: RunningOperon): Promise<WorkerRow[]> {
  const response = await fetch(`${server.httpUrl}/v2/operon/workers`);
  return ((await response.json()) as { workers: WorkerRow[] }).workers;
}

async function inferAddSub(
  server: RunningOperon,
  model: string,
): Promise<{ status: number; body: { outputs?: Array<{ data: number[] }>; error?: string } }> {
  const response = await fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
      ],
    }),
  });
  return {
    status: response.status,
    body: (await response.json()) as { outputs?: Array<{ data: number[] }>; error?: string },
  };
}

describe("execution modes", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "on_threads", addSubModel(), {
      config: ADD_SUB_CONFIG("on_threads", `instance_group [ { count: 2 } ]\n${ISOLATION("thread")}`),
    });
    // Unasked: add_sub proves tiny (its largest batch runs in microseconds), so it runs on the event loop.
    writeModel(repository, "tiny_auto", addSubModel(), {
      config: ADD_SUB_CONFIG("tiny_auto", "instance_group [ { count: 2 } ]"),
    });
    // Unasked, but any request's size is unknown (a dynamic dimension besides the batch): on threads.
    writeModel(repository, "open_shape", writeAddSubModel({ datatype: "FP32", shape: [-1, -1] }), {
      config: ADD_SUB_CONFIG("open_shape").replaceAll("dims: [ 16 ]", "dims: [ -1 ]"),
    });
    writeModel(repository, "in_process", addSubModel(), { config: ADD_SUB_CONFIG("in_process", ISOLATION("process")) });
    writeModel(repository, "on_loop", addSubModel(), {
      config: ADD_SUB_CONFIG(
        "on_loop",
        `instance_group [ { count: 2 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }\n${ISOLATION("inline")}`,
      ),
    });
    symlinkSync(join(EXAMPLE_REPOSITORY, "tokenizer_ts"), join(repository, "tokenizer_ts"));
    server = await startOperon(["--model-repository", repository]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("runs a tiny ONNX Runtime model on the event loop unasked, and one whose requests' size is unknown on threads", async () => {
    const rows = (await workers(server)).filter((row) => row.model === "tiny_auto" || row.model === "open_shape");
    expect(rows.map((row) => [row.instance, row.isolation, row.pid, row.state])).toEqual([
      ["open_shape_0", "thread", server.pid, "READY"],
      ["tiny_auto_0_0", "inline", server.pid, "READY"],
      ["tiny_auto_0_1", "inline", server.pid, "READY"],
    ]);
    // The log says where each went and why.
    expect(server.output()).toMatch(
      /instance 'tiny_auto_0_0' runs on the gateway's event loop: a batch of 8 runs in \d+ µs/,
    );
    expect(server.output()).toMatch(
      /instance 'open_shape_0' runs on a thread: the largest request it can be sent is unknown: input 'INPUT0' has a dynamic dimension \(axis 1\)/,
    );
    const replies = await Promise.all(Array.from({ length: 20 }, () => inferAddSub(server, "tiny_auto")));
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.body.outputs![0]!.data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    }
    expect((await inferAddSub(server, "open_shape")).body.outputs![1]!.data).toEqual(
      Array.from({ length: 16 }, (_, i) => i - 1),
    );
  });

  it("runs ONNX Runtime instances on threads of the gateway when asked, and answers through them", async () => {
    const rows = (await workers(server)).filter((row) => row.model === "on_threads");
    expect(rows.map((row) => [row.instance, row.isolation, row.pid, row.state])).toEqual([
      ["on_threads_0_0", "thread", server.pid, "READY"],
      ["on_threads_0_1", "thread", server.pid, "READY"],
    ]);
    // Each thread's own CPU time (from /proc/<pid>/task/<tid>); its memory is the gateway's.
    for (const row of rows) expect(row.cpuSeconds).toBeGreaterThanOrEqual(0);
    expect(workerProcesses(server.pid).filter((worker) => worker.instance.startsWith("on_threads"))).toEqual([]);
    const replies = await Promise.all(Array.from({ length: 20 }, () => inferAddSub(server, "on_threads")));
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.body.outputs![0]!.data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
      expect(reply.body.outputs![1]!.data).toEqual(Array.from({ length: 16 }, (_, i) => i - 1));
    }
  });

  it('runs a model in a worker process when its config asks for operon_isolation "process"', async () => {
    const [row] = (await workers(server)).filter((candidate) => candidate.model === "in_process");
    expect(row).toMatchObject({ isolation: "process", state: "READY" });
    expect(row!.pid).not.toBe(server.pid);
    expect(workerProcesses(server.pid).map((worker) => worker.instance)).toContain(row!.instance);
    expect((await inferAddSub(server, "in_process")).status).toBe(200);
  });

  it('runs a model on the gateway\'s event loop when its config asks for operon_isolation "inline", batched, with the same answers', async () => {
    const rows = (await workers(server)).filter((row) => row.model === "on_loop");
    // No thread and no process of its own: its memory is the gateway's; its CPU, the time its executions took there.
    expect(rows.map((row) => [row.instance, row.isolation, row.pid, row.state, typeof row.cpuSeconds])).toEqual([
      ["on_loop_0_0", "inline", server.pid, "READY", "number"],
      ["on_loop_0_1", "inline", server.pid, "READY", "number"],
    ]);
    expect(workerProcesses(server.pid).filter((worker) => worker.instance.startsWith("on_loop"))).toEqual([]);
    const replies = await Promise.all(Array.from({ length: 40 }, () => inferAddSub(server, "on_loop")));
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.body.outputs![0]!.data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
      expect(reply.body.outputs![1]!.data).toEqual(Array.from({ length: 16 }, (_, i) => i - 1));
    }
    // 40 requests at once were batched (fewer executions than inferences), as on threads.
    const stats = (await (await fetch(`${server.httpUrl}/v2/models/on_loop/stats`)).json()) as {
      model_stats: Array<{ inference_count: number; execution_count: number }>;
    };
    expect(stats.model_stats[0]!.inference_count).toBe(40);
    expect(stats.model_stats[0]!.execution_count).toBeLessThan(40);
    const busy = (await workers(server)).filter((row) => row.model === "on_loop");
    expect(busy.reduce((total, row) => total + row.cpuSeconds!, 0)).toBeGreaterThan(0);
    // A bad request is refused with the model's own error, the server goes on serving.
    const bad = await fetch(`${server.httpUrl}/v2/models/on_loop/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(0) }],
      }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/INPUT1/);
    expect((await inferAddSub(server, "on_loop")).status).toBe(200);
  });

  it("always runs TypeScript models (user code) in worker processes", async () => {
    const [row] = (await workers(server)).filter((candidate) => candidate.model === "tokenizer_ts");
    expect(row).toMatchObject({ isolation: "process", state: "READY" });
    expect(row!.pid).not.toBe(server.pid);
  });
});

describe("operon_isolation values a model cannot have", () => {
  it("fails the load naming the problem: an unknown mode, or a thread for user code", async () => {
    const repository = tempRepository();
    writeModel(repository, "bogus", addSubModel(), { config: ADD_SUB_CONFIG("bogus", ISOLATION("fiber")) });
    // The example TypeScript model, asking for a thread.
    cpSync(join(EXAMPLE_REPOSITORY, "tokenizer_ts"), join(repository, "tokenizer_ts"), {
      recursive: true,
      dereference: true,
    });
    appendFileSync(join(repository, "tokenizer_ts", "config.pbtxt"), `\n${ISOLATION("thread")}\n`);
    // And a copy of it asking for the gateway's event loop.
    cpSync(join(repository, "tokenizer_ts"), join(repository, "tokenizer_inline"), { recursive: true });
    const inlineConfig = join(repository, "tokenizer_inline", "config.pbtxt");
    writeFileSync(
      inlineConfig,
      readFileSync(inlineConfig, "utf8")
        .replace(/name: "tokenizer_ts"/, 'name: "tokenizer_inline"')
        .replace(/string_value: "thread"/, 'string_value: "inline"'),
    );
    const server = await startOperon(["--model-repository", repository, "--model-control-mode", "explicit"]);
    try {
      const bogus = await fetch(`${server.httpUrl}/v2/repository/models/bogus/load`, { method: "POST" });
      expect(bogus.status).toBe(400);
      expect(((await bogus.json()) as { error: string }).error).toMatch(
        /operon_isolation must be "auto", "thread", "process" or "inline", got "fiber"/,
      );
      const typescript = await fetch(`${server.httpUrl}/v2/repository/models/tokenizer_ts/load`, { method: "POST" });
      expect(typescript.status).toBe(400);
      expect(((await typescript.json()) as { error: string }).error).toMatch(
        /backend 'typescript' runs user code, which always runs in a worker process/,
      );
      const inline = await fetch(`${server.httpUrl}/v2/repository/models/tokenizer_inline/load`, { method: "POST" });
      expect(inline.status).toBe(400);
      expect(((await inline.json()) as { error: string }).error).toMatch(
        /backend 'typescript' runs user code, which always runs in a worker process \(operon_isolation "inline" is for/,
      );
    } finally {
      await server.stop();
    }
  });
});
