// The worker's addon (tritonserver-host.cc) handing a tensor from one process
// to another on a GPU, against the fake CUDA driver (two GPUs whose memory is
// memfd-backed host memory, shared between processes as CUDA IPC shares it):
// a child process runs the producing step and keeps its output in its device
// pool (deviceOutputs), this process imports the handle and runs the
// consuming step on it in place, then the child releases the region. A
// handle that cannot be opened (its producer gone) is refused as UNAVAILABLE.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TritonHostBinding, type TritonInstanceHandle, loadTritonHost } from "./tritonserver-host.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BUILD = path.join(ROOT, "native/build/tritonserver");
const DRIVER = path.join(BUILD, "test-fixtures/fake-cuda/libcuda.so.1");
const BACKEND = path.join(BUILD, "backends/operon_gpu_identity/libtriton_operon_gpu_identity.so");
const HOST = path.join(ROOT, "native/dist/tritonserver-host.js");

/** A KIND_GPU operon_gpu_identity instance on GPU 0, through the addon (the script's `instance`, `events`). */
const SETUP = `
const { loadTritonHost } = await import(${JSON.stringify(HOST)});
const binding = loadTritonHost(() => undefined);
const backend = binding.loadBackend("operon_gpu_identity", ${JSON.stringify(BACKEND)}, "{}");
const config = (name) => JSON.stringify({ name, backend: "operon_gpu_identity", max_batch_size: 8,
  input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }], output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
  instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [0] }] });
const events = [];
const model = binding.createModel(backend, "m", 1, "/tmp", config("m"), false);
const instance = binding.createInstance(model, "m_0", 2, 0, undefined, (...event) => events.push(event));
`;

/** The child: runs one request with OUTPUT0 kept on GPU 0, prints it, releases on "release", exits on "exit". */
const PRODUCER = `${SETUP}
binding.execute(instance, [{ token: 1, id: "", outputNames: [], parameters: [], deviceOutputs: ["OUTPUT0"],
  inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: Buffer.from(Float32Array.from([1.5, -2, 3.25, 4]).buffer) }] }]);
const output = events.find((event) => event[0] === "response")[2].outputs[0];
const say = (value) => process.stdout.write(JSON.stringify(value) + "\\n");
say({ output: { ...output, data: output.data.length, device: { ...output.device, handle: output.device.handle.toString("base64") } },
  pool: binding.devicePoolStatistics(0) });
for await (const line of (await import("node:readline")).createInterface({ input: process.stdin })) {
  if (line === "release") say({ released: binding.releaseDeviceOutput(output.device.region), again: binding.releaseDeviceOutput(output.device.region), pool: binding.devicePoolStatistics(0) });
  if (line === "exit") process.exit(0);
}
`;

interface Produced {
  output: { byteSize: number; data: number; device: { gpu: number; handle: string; region: number } };
  pool: { liveRegions: number; heldOutputs: number };
}

describe("the worker's addon: a GPU output handed to another process (fake CUDA driver)", () => {
  let child: ReturnType<typeof spawn>;
  let lines: AsyncIterator<string>;
  let consumer: { binding: TritonHostBinding; instance: TritonInstanceHandle; events: unknown[][] };

  const next = async (): Promise<any> => JSON.parse((await lines.next()).value as string);

  beforeAll(async () => {
    child = spawn(process.execPath, ["--input-type=module", "-e", PRODUCER], {
      env: { ...process.env, OPERON_CUDA_DRIVER_LIB: DRIVER },
      stdio: ["pipe", "pipe", "inherit"],
    });
    lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    // This process is the consumer: the same instance, with the fake driver (read when the pool first needs it).
    process.env.OPERON_CUDA_DRIVER_LIB = DRIVER;
    const binding = loadTritonHost(() => undefined);
    const backend = binding.loadBackend("operon_gpu_identity", BACKEND, "{}");
    const config = JSON.stringify({
      name: "m",
      backend: "operon_gpu_identity",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
      instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [0] }],
    });
    const events: unknown[][] = [];
    const model = binding.createModel(backend, "m", 1, "/tmp", config, false);
    const instance = binding.createInstance(model, "m_0", 2, 0, undefined, (...event) => events.push(event));
    consumer = { binding, instance, events };
  }, 30_000);

  afterAll(async () => {
    if (child.exitCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  });

  it("keeps the output in the producer's pool and hands out its handle, no bytes", async () => {
    const produced: Produced = await next();
    expect(produced.output.byteSize).toBe(16);
    expect(produced.output.data).toBe(0);
    expect(produced.output.device.gpu).toBe(0);
    expect(Buffer.from(produced.output.device.handle, "base64").length).toBe(72);
    expect(produced.pool).toMatchObject({ liveRegions: 1, heldOutputs: 1 });

    // Consumed here in place: the backend reports its input in GPU memory and answers in host memory.
    const { binding, instance, events } = consumer;
    binding.execute(instance, [
      {
        token: 1,
        id: "",
        outputNames: [],
        parameters: [],
        inputs: [
          {
            name: "INPUT0",
            datatype: "FP32",
            shape: [1, 4],
            data: Buffer.alloc(0),
            device: { gpu: 0, handle: Buffer.from(produced.output.device.handle, "base64"), byteLength: 16 },
          },
        ],
      },
    ]);
    const response = events.find((event) => event[0] === "response")![2] as any;
    expect(response.error).toBeUndefined();
    expect(response.parameters).toMatchObject({ input_memory: "GPU:0", output_memory: "CPU" });
    const data = response.outputs[0].data as Buffer;
    expect([...new Float32Array(data.buffer, data.byteOffset, 4)]).toEqual([1.5, -2, 3.25, 4]);
    expect(binding.devicePoolStatistics(0)).toMatchObject({ importedRegions: 1, liveRegions: 0 });

    // The producer gives the region back to its pool (once).
    child.stdin!.write("release\n");
    expect(await next()).toMatchObject({
      released: true,
      again: false,
      pool: { liveRegions: 0, cachedRegions: 1, heldOutputs: 0 },
    });
  });

  it("refuses a handle it cannot open (its producer gone) as UNAVAILABLE, naming the input", async () => {
    child.stdin!.write("exit\n");
    await once(child, "exit");
    // Not a handle any live process exported (the fake driver checks its magic and the exporter's pid).
    const handle = Buffer.alloc(72);
    const { binding, instance } = consumer;
    const stale = {
      token: 2,
      id: "",
      outputNames: [],
      parameters: [],
      inputs: [
        {
          name: "INPUT0",
          datatype: "FP32",
          shape: [1, 4],
          data: Buffer.alloc(0),
          device: { gpu: 0, handle, byteLength: 16 },
        },
      ],
    };
    expect(() => binding.execute(instance, [stale])).toThrow(/input 'INPUT0' on GPU 0 cannot be opened/);
    try {
      binding.execute(instance, [stale]);
    } catch (error) {
      expect((error as { tritonCode?: number }).tritonCode).toBe(4);
    }
  });
});

/** The child: one request asking for an output the backend does not answer, then its error and a second request. */
const BAD_OUTPUT = `${SETUP}
const request = (token, outputNames) => ({ token, id: "", outputNames, parameters: [],
  inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: Buffer.from(Float32Array.from([1, 2, 3, 4]).buffer) }] });
binding.execute(instance, [request(1, ["OTHER0"]), request(2, ["OUTPUT0"])]);
const responses = events.filter((event) => event[0] === "response").map((event) => event[2]);
process.stdout.write(JSON.stringify(responses.map((response) => ({ error: response.error?.message ?? null, outputs: response.outputs.length }))));
`;

describe("operon_gpu_identity's error responses (fake CUDA driver)", () => {
  it("answers a bad request with its error and the next one normally: the error is freed once, by the host", async () => {
    // Before the backends shared their request loop, operon_gpu_identity deleted the error it had handed to
    // TRITONBACKEND_ResponseSend, which Operon's libtritonserver.so deletes: a double free on every bad request.
    const child = spawn(process.execPath, ["--input-type=module", "-e", BAD_OUTPUT], {
      env: { ...process.env, OPERON_CUDA_DRIVER_LIB: DRIVER, MALLOC_CHECK_: "3" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += String(chunk)));
    child.stderr.on("data", (chunk) => (stderr += String(chunk)));
    const [code, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(JSON.parse(stdout)).toEqual([
      { error: expect.stringMatching(/unknown output 'OTHER0' \(OUTPUTn answers INPUTn\)/), outputs: 0 },
      { error: null, outputs: 1 },
    ]);
  }, 30_000);
});
