import * as grpc from "@grpc/grpc-js";
import { ERROR_KINDS, type ErrorKind, OperonError, grpcStatusOf, logLevelOf } from "@operon/protocol/errors";
import type { Logger } from "@operon/protocol/logger";
import type {
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  ModelStatistics,
  ModelUnloadOptions,
  RepositoryIndexEntry,
} from "@operon/protocol/inference";
import { encodeBytesElements } from "@operon/protocol/tensor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiKeyGrant, type ApiKeyScope, generateApiKey } from "@operon/protocol/api-keys";
import { GatewayAccessPolicy } from "../../auth/access-policy.js";
import { ApiKeyRing } from "../../auth/api-key-ring.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { type GrpcFrontend, startGrpcFrontend } from "./grpc-frontend.js";
import { loadGrpcProtos } from "./grpc-wire.js";

// ---- A fake engine with canned behaviour ----

const MODELS = ["add", "echo", "slow", "fail", "boom"];

class FakeEngine implements InferenceEngine {
  ready = true;
  lastRequest: InferRequest | undefined;
  seenSignals: AbortSignal[] = [];
  loads: Array<{ name: string; options: ModelLoadOptions }> = [];
  unloads: Array<{ name: string; options: ModelUnloadOptions }> = [];
  private slowWaiters: Array<() => void> = [];

  serverMetadata() {
    return { name: "operon", version: "0.1.0", extensions: ["model_repository", "statistics"] };
  }
  isLive() {
    return true;
  }
  isReady() {
    return this.ready;
  }
  isModelReady(name: string) {
    return MODELS.includes(name);
  }
  modelMetadata(name: string) {
    if (!MODELS.includes(name)) throw new OperonError("NOT_FOUND", `model '${name}' not found`);
    return {
      name,
      versions: ["1"],
      platform: "onnxruntime_onnx",
      inputs: [{ name: "A", datatype: "FP32", shape: [-1, 4] }],
      outputs: [{ name: "SUM", datatype: "FP32", shape: [-1, 4] }],
    };
  }
  modelConfig(name: string) {
    if (!MODELS.includes(name)) throw new OperonError("NOT_FOUND", `model '${name}' not found`);
    return {
      name,
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      input: [{ name: "A", data_type: "TYPE_FP32", dims: [-1, 4] }],
      output: [{ name: "SUM", data_type: "TYPE_FP32", dims: [4] }],
      dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 100 },
      parameters: { k: { string_value: "v" } },
    };
  }
  async infer(request: InferRequest): Promise<InferResponse> {
    this.lastRequest = request;
    if (request.signal) this.seenSignals.push(request.signal);
    const base = { modelName: request.modelName, modelVersion: "1", ...(request.id ? { id: request.id } : {}) };
    const delay = request.parameters["delay_ms"];
    if (typeof delay === "number") await new Promise((resolve) => setTimeout(resolve, delay));
    switch (request.modelName) {
      case "add": {
        const [a, b] = request.inputs;
        if (!a || !b) throw new OperonError("INVALID_ARG", "add needs two inputs");
        const sum = Buffer.alloc(a.data.length);
        for (let i = 0; i < a.data.length; i += 4) sum.writeFloatLE(a.data.readFloatLE(i) + b.data.readFloatLE(i), i);
        return { ...base, outputs: [{ name: "SUM", datatype: "FP32", shape: a.shape, data: sum }] };
      }
      case "echo":
        return {
          ...base,
          parameters: request.parameters,
          outputs: request.inputs.map(({ name, datatype, shape, data }) => ({ name, datatype, shape, data })),
        };
      case "slow":
        return new Promise((_resolve, reject) => {
          const signal = request.signal;
          this.slowWaiters.splice(0).forEach((wake) => wake());
          if (!signal) return reject(new Error("no signal"));
          signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
        });
      case "fail": {
        const kind = request.parameters["kind"] as ErrorKind;
        throw new OperonError(kind, `failure of kind ${kind}`);
      }
      case "boom":
        throw new TypeError("unexpected crash");
      default:
        throw new OperonError("NOT_FOUND", `model '${request.modelName}' not found`);
    }
  }
  /**
   * 'tokens' is decoupled: one response per `count` (TOKEN = i), then the
   * final flag alone, or with a last TOKEN when `final_data` is set; `fail_at`
   * turns that response into a (non-final) error.
   */
  async inferStream(
    request: InferRequest,
    onResponse: (response: InferResponse | OperonError, final: boolean, decoupled: boolean) => void,
  ): Promise<void> {
    if (request.modelName !== "tokens") {
      onResponse(await this.infer(request), true, false);
      return;
    }
    this.lastRequest = request;
    const count = Number(request.parameters["count"] ?? 0);
    const base = { modelName: "tokens", modelVersion: "1", ...(request.id ? { id: request.id } : {}) };
    for (let i = 0; i < count; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      if (request.parameters["fail_at"] === i)
        onResponse(new OperonError("INVALID_ARG", `token ${i} failed`), false, true);
      else
        onResponse({ ...base, outputs: [{ name: "TOKEN", datatype: "FP32", shape: [1], data: fp32(i) }] }, false, true);
    }
    const last =
      request.parameters["final_data"] === true
        ? [{ name: "TOKEN", datatype: "FP32" as const, shape: [1], data: fp32(99) }]
        : [];
    onResponse({ ...base, outputs: last }, true, true);
  }
  async whenServed(): Promise<void> {}
  isDecoupled(name: string) {
    return name === "tokens";
  }
  /** Resolves once a 'slow' request has reached the engine. */
  slowArrived(): Promise<void> {
    return new Promise((resolve) => this.slowWaiters.push(resolve));
  }
  async repositoryIndex(options: { ready?: boolean }): Promise<RepositoryIndexEntry[]> {
    const all: RepositoryIndexEntry[] = [
      ...MODELS.map((name) => ({ name, version: "1", state: "READY" as const })),
      { name: "cold", state: "UNAVAILABLE", reason: "unloaded" },
    ];
    return options.ready ? all.filter((m) => m.state === "READY") : all;
  }
  async loadModel(name: string, options: ModelLoadOptions) {
    if (name === "locked") throw new OperonError("UNSUPPORTED", "model control mode is not explicit");
    this.loads.push({ name, options });
  }
  async unloadModel(name: string, options: ModelUnloadOptions) {
    this.unloads.push({ name, options });
  }
  modelStatistics(name?: string): ModelStatistics[] {
    if (name !== undefined && !MODELS.includes(name)) throw new OperonError("NOT_FOUND", `model '${name}' not found`);
    const d = (count: number) => ({ count, ns: count * 1000 });
    return [
      {
        name: name ?? "add",
        version: "1",
        last_inference: 1_700_000_000_000,
        inference_count: 7,
        execution_count: 3,
        inference_stats: {
          success: d(7),
          fail: d(1),
          queue: d(7),
          compute_input: d(7),
          compute_infer: d(7),
          compute_output: d(7),
          cache_hit: d(0),
          cache_miss: d(0),
        },
        response_stats: { "0": { success: d(2), compute_infer: d(2) } },
        batch_stats: [{ batch_size: 4, compute_input: d(1), compute_infer: d(1), compute_output: d(1) }],
        memory_usage: [{ type: "CPU", id: 0, byte_size: 1024 }],
      },
    ];
  }
}

// ---- A real gRPC client over the same protos ----

type Reply = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Client = grpc.Client & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function makeClients(port: number): Promise<{ inference: Client; health: Client }> {
  const loaded = grpc.loadPackageDefinition(await loadGrpcProtos()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  const address = `127.0.0.1:${port}`;
  const credentials = grpc.credentials.createInsecure();
  return {
    inference: new loaded.inference.GRPCInferenceService(address, credentials),
    health: new loaded.grpc.health.v1.Health(address, credentials),
  };
}

function call(client: Client, method: string, request: object): Promise<Reply> {
  return new Promise((resolve, reject) => {
    client[method](request, (error: grpc.ServiceError | null, reply: Reply) =>
      error ? reject(error) : resolve(reply),
    );
  });
}

async function callError(client: Client, method: string, request: object): Promise<grpc.ServiceError> {
  try {
    await call(client, method, request);
  } catch (error) {
    return error as grpc.ServiceError;
  }
  throw new Error(`${method} unexpectedly succeeded`);
}

function fp32(...values: number[]): Buffer {
  const out = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => out.writeFloatLE(v, i * 4));
  return out;
}

const engine = new FakeEngine();
let frontend: GrpcFrontend;
let client: Client;
let health: Client;
const logs: Array<{ level: "info" | "warn" | "error"; obj: object | string; msg: string | undefined }> = [];
const logger: Logger = {
  info: (obj, msg) => void logs.push({ level: "info", obj, msg }),
  warn: (obj, msg) => void logs.push({ level: "warn", obj, msg }),
  error: (obj, msg) => void logs.push({ level: "error", obj, msg }),
};

beforeAll(async () => {
  frontend = await startGrpcFrontend(engine, { host: "127.0.0.1", port: 0, healthWatchIntervalMs: 20, logger });
  ({ inference: client, health } = await makeClients(frontend.port));
});

afterAll(async () => {
  client.close();
  health.close();
  await frontend.stop(500);
});

describe("health and metadata RPCs", () => {
  it("binds a real port when asked for port 0", () => {
    expect(frontend.port).toBeGreaterThan(0);
  });

  it("answers ServerLive, ServerReady, ServerMetadata and ModelReady", async () => {
    expect(await call(client, "ServerLive", {})).toEqual({ live: true });
    expect(await call(client, "ServerReady", {})).toEqual({ ready: true });
    expect(await call(client, "ServerMetadata", {})).toEqual(engine.serverMetadata());
    expect(await call(client, "ModelReady", { name: "add" })).toEqual({ ready: true });
    expect(await call(client, "ModelReady", { name: "nope", version: "3" })).toEqual({ ready: false });
  });

  it("answers ModelMetadata with int64 shapes and maps NOT_FOUND", async () => {
    const reply = await call(client, "ModelMetadata", { name: "add" });
    expect(reply).toMatchObject({ name: "add", versions: ["1"], platform: "onnxruntime_onnx" });
    expect(reply["inputs"]).toEqual([{ name: "A", datatype: "FP32", shape: ["-1", "4"] }]);
    const error = await callError(client, "ModelMetadata", { name: "nope" });
    expect(error.code).toBe(grpc.status.NOT_FOUND);
    expect(error.details).toBe("model 'nope' not found");
  });

  it("serves ModelConfig through model_config.proto", async () => {
    const { config } = await call(client, "ModelConfig", { name: "add" });
    expect(config).toMatchObject({
      name: "add",
      max_batch_size: 8,
      input: [{ name: "A", data_type: "TYPE_FP32", dims: ["-1", "4"] }],
      output: [{ name: "SUM", data_type: "TYPE_FP32", dims: ["4"] }],
      dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: "100" },
      parameters: { k: { string_value: "v" } },
    });
  });

  it("serves ModelStatistics", async () => {
    const { model_stats } = await call(client, "ModelStatistics", { name: "add" });
    expect(model_stats).toHaveLength(1);
    expect(model_stats[0]).toMatchObject({
      name: "add",
      last_inference: "1700000000000",
      inference_count: "7",
      inference_stats: { success: { count: "7", ns: "7000" } },
      batch_stats: [{ batch_size: "4", compute_infer: { count: "1", ns: "1000" } }],
      memory_usage: [{ type: "CPU", id: "0", byte_size: "1024" }],
      response_stats: { "0": { success: { count: "2", ns: "2000" } } },
    });
    expect((await callError(client, "ModelStatistics", { name: "nope" })).code).toBe(grpc.status.NOT_FOUND);
  });
});

describe("repository RPCs", () => {
  it("lists the repository, with the ready filter", async () => {
    const all = await call(client, "RepositoryIndex", {});
    expect(all["models"]).toContainEqual({ name: "cold", version: "", state: "UNAVAILABLE", reason: "unloaded" });
    const ready = await call(client, "RepositoryIndex", { ready: true });
    expect(ready["models"].map((m: Reply) => m["name"])).toEqual(MODELS);
    const error = await callError(client, "RepositoryIndex", { repository_name: "other" });
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("loads with config and file parameters", async () => {
    await call(client, "RepositoryModelLoad", {
      model_name: "m",
      parameters: {
        config: { string_param: '{"backend":"onnxruntime"}' },
        "file:1/model.onnx": { bytes_param: Buffer.from([1, 2, 3]) },
      },
    });
    const load = engine.loads.at(-1);
    expect(load?.name).toBe("m");
    expect(load?.options.config).toBe('{"backend":"onnxruntime"}');
    expect([...(load?.options.files ?? new Map())]).toEqual([["1/model.onnx", Buffer.from([1, 2, 3])]]);

    await call(client, "RepositoryModelLoad", { model_name: "plain" });
    expect(engine.loads.at(-1)).toEqual({ name: "plain", options: {} });
  });

  it("rejects bad load parameters and maps engine errors", async () => {
    const noConfig = await callError(client, "RepositoryModelLoad", {
      model_name: "m",
      parameters: { "file:1/model.onnx": { bytes_param: Buffer.from([1]) } },
    });
    expect(noConfig.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(noConfig.details).toMatch(/'config' is required/);
    const unknown = await callError(client, "RepositoryModelLoad", {
      model_name: "m",
      parameters: { x: { bool_param: true } },
    });
    expect(unknown.details).toMatch(/unrecognized load parameter 'x'/);
    const wrongType = await callError(client, "RepositoryModelLoad", {
      model_name: "m",
      parameters: { config: { bool_param: true } },
    });
    expect(wrongType.code).toBe(grpc.status.INVALID_ARGUMENT);
    const locked = await callError(client, "RepositoryModelLoad", { model_name: "locked" });
    expect(locked.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("unloads with unload_dependents", async () => {
    await call(client, "RepositoryModelUnload", {
      model_name: "m",
      parameters: { unload_dependents: { bool_param: true } },
    });
    expect(engine.unloads.at(-1)).toEqual({ name: "m", options: { unloadDependents: true } });
    await call(client, "RepositoryModelUnload", { model_name: "n" });
    expect(engine.unloads.at(-1)).toEqual({ name: "n", options: { unloadDependents: false } });
  });
});

describe("ModelInfer", () => {
  it("adds two FP32 inputs sent as raw_input_contents", async () => {
    const reply = await call(client, "ModelInfer", {
      model_name: "add",
      id: "req-1",
      inputs: [
        { name: "A", datatype: "FP32", shape: [1, 3] },
        { name: "B", datatype: "FP32", shape: [1, 3] },
      ],
      raw_input_contents: [fp32(1, 2, 3), fp32(10, 20, 30)],
    });
    expect(reply).toMatchObject({ model_name: "add", model_version: "1", id: "req-1" });
    expect(reply["outputs"]).toEqual([
      { name: "SUM", datatype: "FP32", shape: ["1", "3"], parameters: {}, contents: null },
    ]);
    expect(reply["raw_output_contents"]).toEqual([fp32(11, 22, 33)]);
  });

  it("adds two FP32 inputs sent as typed contents", async () => {
    const reply = await call(client, "ModelInfer", {
      model_name: "add",
      inputs: [
        { name: "A", datatype: "FP32", shape: [2], contents: { fp32_contents: [0.5, 1] } },
        { name: "B", datatype: "FP32", shape: [2], contents: { fp32_contents: [0.25, -1] } },
      ],
    });
    expect(reply["raw_output_contents"]).toEqual([fp32(0.75, 0)]);
    expect(engine.lastRequest?.id).toBeUndefined();
    expect(engine.lastRequest?.outputs).toBeUndefined();
  });

  it("decodes typed INT64, BOOL, BYTES and UINT8 contents into raw tensors", async () => {
    const reply = await call(client, "ModelInfer", {
      model_name: "echo",
      inputs: [
        {
          name: "I64",
          datatype: "INT64",
          shape: [2],
          contents: { int64_contents: ["-9223372036854775808", "9007199254740993"] },
        },
        { name: "B", datatype: "BOOL", shape: [3], contents: { bool_contents: [true, false, true] } },
        {
          name: "S",
          datatype: "BYTES",
          shape: [2],
          contents: { bytes_contents: [Buffer.from("héllo"), Buffer.alloc(0)] },
        },
        { name: "U8", datatype: "UINT8", shape: [2, 2], contents: { uint_contents: [0, 1, 254, 255] } },
      ],
    });
    const [i64, b, s, u8] = reply["raw_output_contents"] as Buffer[];
    expect(i64?.readBigInt64LE(0)).toBe(-9223372036854775808n);
    expect(i64?.readBigInt64LE(8)).toBe(9007199254740993n);
    expect([...(b ?? [])]).toEqual([1, 0, 1]);
    expect(s).toEqual(encodeBytesElements(["héllo", ""]));
    expect([...(u8 ?? [])]).toEqual([0, 1, 254, 255]);
    expect(reply["outputs"].map((o: Reply) => [o["name"], o["datatype"], o["shape"]])).toEqual([
      ["I64", "INT64", ["2"]],
      ["B", "BOOL", ["3"]],
      ["S", "BYTES", ["2"]],
      ["U8", "UINT8", ["2", "2"]],
    ]);
  });

  it("passes raw INT64, BOOL, BYTES, UINT8 and FP16 through unchanged", async () => {
    const i64 = Buffer.alloc(8);
    i64.writeBigInt64LE(-5n);
    const bytes = encodeBytesElements(["a", "bc"]);
    const fp16 = Buffer.from([0x00, 0x3c, 0x00, 0xc0]); // 1.0, -2.0
    const raw = [i64, Buffer.from([1, 0]), bytes, Buffer.from([7, 8, 9]), fp16];
    const reply = await call(client, "ModelInfer", {
      model_name: "echo",
      inputs: [
        { name: "I64", datatype: "INT64", shape: [1] },
        { name: "B", datatype: "BOOL", shape: [2] },
        { name: "S", datatype: "BYTES", shape: [2] },
        { name: "U8", datatype: "UINT8", shape: [3] },
        { name: "H", datatype: "FP16", shape: [2] },
      ],
      raw_input_contents: raw,
    });
    expect(reply["raw_output_contents"]).toEqual(raw);
    expect(engine.lastRequest?.inputs.map((input) => input.datatype)).toEqual([
      "INT64",
      "BOOL",
      "BYTES",
      "UINT8",
      "FP16",
    ]);
  });

  it("round-trips request, input and output parameters of every kind", async () => {
    const reply = await call(client, "ModelInfer", {
      model_name: "echo",
      parameters: {
        flag: { bool_param: true },
        small: { int64_param: 42 },
        big: { int64_param: "9007199254740993" },
        neg: { int64_param: "-3" },
        huge: { uint64_param: "18446744073709551615" },
        name: { string_param: "x" },
        ratio: { double_param: 0.25 },
      },
      inputs: [
        {
          name: "A",
          datatype: "FP32",
          shape: [1],
          parameters: { p: { string_param: "in" } },
          contents: { fp32_contents: [1] },
        },
      ],
      outputs: [{ name: "A", parameters: { classification: { int64_param: 2 } } }],
    });
    expect(engine.lastRequest?.parameters).toEqual({
      flag: true,
      small: 42,
      big: 9007199254740993n,
      neg: -3,
      huge: 18446744073709551615n,
      name: "x",
      ratio: 0.25,
    });
    expect(engine.lastRequest?.inputs[0]?.parameters).toEqual({ p: "in" });
    expect(engine.lastRequest?.outputs).toEqual([{ name: "A", parameters: { classification: 2 } }]);
    expect(reply["parameters"]).toEqual({
      flag: { bool_param: true, parameter_choice: "bool_param" },
      small: { int64_param: "42", parameter_choice: "int64_param" },
      big: { int64_param: "9007199254740993", parameter_choice: "int64_param" },
      neg: { int64_param: "-3", parameter_choice: "int64_param" },
      huge: { uint64_param: "18446744073709551615", parameter_choice: "uint64_param" },
      name: { string_param: "x", parameter_choice: "string_param" },
      ratio: { double_param: 0.25, parameter_choice: "double_param" },
    });
  });

  it.each([
    [
      "raw and typed contents together",
      {
        inputs: [{ name: "A", datatype: "FP32", shape: [1], contents: { fp32_contents: [1] } }],
        raw_input_contents: [fp32(1)],
      },
      /input 'A': contents must not be set/,
    ],
    [
      "fewer raw contents than inputs",
      {
        inputs: [
          { name: "A", datatype: "FP32", shape: [1] },
          { name: "B", datatype: "FP32", shape: [1] },
        ],
        raw_input_contents: [fp32(1)],
      },
      /expected 2 raw_input_contents/,
    ],
    [
      "a raw size that does not match the shape",
      { inputs: [{ name: "A", datatype: "FP32", shape: [2] }], raw_input_contents: [fp32(1)] },
      /input 'A': expected 8 bytes/,
    ],
    [
      "FP16 as typed contents",
      { inputs: [{ name: "H", datatype: "FP16", shape: [1], contents: {} }] },
      /input 'H': FP16.*raw_input_contents/,
    ],
    [
      "a typed element count that does not match",
      { inputs: [{ name: "A", datatype: "FP32", shape: [3], contents: { fp32_contents: [1] } }] },
      /expected 3 elements/,
    ],
    ["an unknown datatype", { inputs: [{ name: "A", datatype: "FP8", shape: [1] }] }, /unknown datatype 'FP8'/],
    ["a negative dimension", { inputs: [{ name: "A", datatype: "FP32", shape: [-1] }] }, /invalid shape dimension -1/],
  ])("rejects %s with INVALID_ARGUMENT", async (_what, request, pattern) => {
    const error = await callError(client, "ModelInfer", { model_name: "echo", ...request });
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(pattern);
  });

  it.each(ERROR_KINDS.map((kind) => [kind]))(
    "maps OperonError %s to its gRPC status and logs it at its kind's level",
    async (kind) => {
      const error = await callError(client, "ModelInfer", {
        model_name: "fail",
        parameters: { kind: { string_param: kind } },
      });
      expect(error.code).toBe(grpcStatusOf(kind));
      expect(error.details).toBe(`failure of kind ${kind}`);
      expect(logs.filter((line) => line.msg === `failure of kind ${kind}`).map((line) => line.level)).toEqual([
        logLevelOf(kind),
      ]);
    },
  );

  it("maps other exceptions to INTERNAL with a fixed text, logging the details at error", async () => {
    const error = await callError(client, "ModelInfer", { model_name: "boom" });
    expect(error.code).toBe(grpc.status.INTERNAL);
    expect(error.details).toBe("internal server error");
    const line = logs.find(
      (entry) => entry.level === "error" && (entry.obj as { err?: Error }).err?.message === "unexpected crash",
    );
    expect(line?.msg).toBe("gRPC call failed unexpectedly");
  });

  it("hides an unexpected exception's text on a stream too", async () => {
    const stream = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const replies: Reply[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", (reply: Reply) => replies.push(reply));
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    stream.write({ model_name: "boom", id: "crash" });
    stream.end();
    await ended;
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatchObject({ error_message: "internal server error", infer_response: { id: "crash" } });
    expect(
      logs.some(
        (entry) =>
          entry.msg === "stream inference failed unexpectedly" &&
          (entry.obj as { err?: Error }).err?.message === "unexpected crash",
      ),
    ).toBe(true);
  });

  it("aborts the engine's signal when the client cancels", async () => {
    const arrived = engine.slowArrived();
    const result = new Promise<grpc.ServiceError>((resolve) => {
      const pending = client["ModelInfer"]({ model_name: "slow" }, (error: grpc.ServiceError) => resolve(error));
      void arrived.then(() => pending.cancel());
    });
    expect((await result).code).toBe(grpc.status.CANCELLED);
    const signal = engine.seenSignals.at(-1);
    await expect.poll(() => signal?.aborted).toBe(true);
    expect((signal?.reason as OperonError).kind).toBe("CANCELLED");
  });
});

describe("ModelStreamInfer", () => {
  it("answers every request in completion order and keeps the stream open after an error", async () => {
    const stream = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const replies: Reply[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", (reply: Reply) => replies.push(reply));
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    const add = (id: string, delay: number, a: number) => ({
      model_name: "add",
      id,
      parameters: { delay_ms: { int64_param: delay } },
      inputs: [
        { name: "A", datatype: "FP32", shape: [1] },
        { name: "B", datatype: "FP32", shape: [1] },
      ],
      raw_input_contents: [fp32(a), fp32(1)],
    });
    stream.write(add("first", 150, 1));
    stream.write({ model_name: "fail", id: "bad", parameters: { kind: { string_param: "INVALID_ARG" } } });
    stream.write(add("third", 0, 2));
    stream.end();
    await ended;

    expect(replies.map((r) => r["infer_response"]["id"])).toEqual(["bad", "third", "first"]);
    expect(replies[0]).toMatchObject({
      error_message: "failure of kind INVALID_ARG",
      infer_response: { model_name: "fail" },
    });
    expect(replies[1]).toMatchObject({ error_message: "", infer_response: { raw_output_contents: [fp32(3)] } });
    expect(replies[2]).toMatchObject({ error_message: "", infer_response: { raw_output_contents: [fp32(2)] } });
  });

  it("streams every response of a decoupled model in order, marked triton_final_response; the flag alone only when asked", async () => {
    const stream = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const replies: Reply[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", (reply: Reply) => replies.push(reply));
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    stream.write({ model_name: "tokens", id: "plain", parameters: { count: { int64_param: 3 } } });
    await expect.poll(() => replies.length).toBe(3);
    stream.write({
      model_name: "tokens",
      id: "empty-final",
      parameters: { count: { int64_param: 2 }, triton_enable_empty_final_response: { bool_param: true } },
    });
    await expect.poll(() => replies.length).toBe(6);
    expect(engine.lastRequest?.parameters).toEqual({ count: 2 }); // the frontend's flag is not the model's business
    stream.write({
      model_name: "tokens",
      id: "final-data",
      parameters: { count: { int64_param: 1 }, final_data: { bool_param: true } },
    });
    stream.write({
      model_name: "tokens",
      id: "error",
      parameters: { count: { int64_param: 2 }, fail_at: { int64_param: 0 } },
    });
    stream.end();
    await ended;

    const summary = (reply: Reply): [string, string, unknown, boolean | undefined] => [
      reply["infer_response"]["id"],
      reply["error_message"],
      reply["infer_response"]["raw_output_contents"]?.map((data: Buffer) => data.readFloatLE(0)),
      reply["infer_response"]["parameters"]?.["triton_final_response"]?.["bool_param"],
    ];
    const of = (id: string) => replies.filter((reply) => reply["infer_response"]["id"] === id).map(summary);
    expect(of("plain")).toEqual([
      ["plain", "", [0], false],
      ["plain", "", [1], false],
      ["plain", "", [2], false],
    ]);
    expect(of("empty-final")).toEqual([
      ["empty-final", "", [0], false],
      ["empty-final", "", [1], false],
      ["empty-final", "", [], true],
    ]);
    expect(of("final-data")).toEqual([
      ["final-data", "", [0], false],
      ["final-data", "", [99], true],
    ]);
    expect(of("error")).toEqual([
      ["error", "token 0 failed", [], false],
      ["error", "", [1], false],
    ]);
    // Non-decoupled models keep one reply without the parameter.
    const unary = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const reply = new Promise<Reply>((resolve) => unary.once("data", resolve));
    unary.write({
      model_name: "echo",
      id: "e",
      inputs: [{ name: "A", datatype: "FP32", shape: [1] }],
      raw_input_contents: [fp32(5)],
    });
    expect((await reply)["infer_response"]["parameters"]).toEqual({});
    unary.end();
  });

  it("reports decode errors on the stream", async () => {
    const stream = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const reply = new Promise<Reply>((resolve) => stream.once("data", resolve));
    stream.write({ model_name: "echo", id: "x", inputs: [{ name: "A", datatype: "FP16", shape: [1], contents: {} }] });
    expect((await reply)["error_message"]).toMatch(/FP16.*raw_input_contents/);
    stream.end();
  });

  it("aborts in-flight requests when the stream is cancelled", async () => {
    const arrived = engine.slowArrived();
    const stream = client["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
    const failed = new Promise<grpc.ServiceError>((resolve) => stream.on("error", resolve));
    stream.write({ model_name: "slow" });
    await arrived;
    const signal = engine.seenSignals.at(-1);
    stream.cancel();
    expect((await failed).code).toBe(grpc.status.CANCELLED);
    await expect.poll(() => signal?.aborted).toBe(true);
  });
});

describe("the message budget across calls and streams (--grpc-max-inflight-message-bytes)", () => {
  const MiB = 1024 * 1024;
  const bytes = (size: number) => ({
    inputs: [{ name: "A", datatype: "UINT8", shape: [size] }],
    raw_input_contents: [Buffer.alloc(size)],
  });

  it("refuses a message while others hold the budget, on ModelInfer and on a stream, and takes it once they are done", async () => {
    const local = new FakeEngine();
    const budgeted = await startGrpcFrontend(local, {
      host: "127.0.0.1",
      port: 0,
      maxInferMessageBytes: 2 * MiB,
      maxInflightInferBytes: 3 * MiB,
    });
    const { inference, health: localHealth } = await makeClients(budgeted.port);
    try {
      // A 1.75 MiB request the model holds: that much of the 3 MiB is taken while it runs.
      const arrived = local.slowArrived();
      let held: grpc.ClientUnaryCall | undefined;
      const heldResult = new Promise<grpc.ServiceError>((resolve) => {
        held = inference["ModelInfer"]({ model_name: "slow", ...bytes(1.75 * MiB) }, (error: grpc.ServiceError) =>
          resolve(error),
        );
      });
      await arrived;

      const refused = await callError(inference, "ModelInfer", { model_name: "echo", ...bytes(1.5 * MiB) });
      expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refused.details).toMatch(
        /^the server holds \d+ bytes of gRPC inference messages already; this one's \d+ more would pass its limit of 3145728 \(--grpc-max-inflight-message-bytes\): retry shortly$/,
      );
      // What still fits is served.
      const small = await call(inference, "ModelInfer", { model_name: "echo", ...bytes(512 * 1024) });
      expect(small["outputs"][0]["shape"]).toEqual(["524288"]);

      // On a stream: the over-budget message gets the error as its reply, and the stream goes on.
      const stream = inference["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Reply>;
      const replies: Reply[] = [];
      const two = new Promise<void>((resolve) =>
        stream.on("data", (reply: Reply) => {
          replies.push(reply);
          if (replies.length === 2) resolve();
        }),
      );
      stream.write({ model_name: "echo", id: "big", ...bytes(1.5 * MiB) });
      stream.write({ model_name: "echo", id: "small", ...bytes(1024) });
      await two;
      const byId = (id: string) => replies.find((reply) => reply["infer_response"]["id"] === id)!;
      expect(byId("big")["error_message"]).toMatch(/--grpc-max-inflight-message-bytes/);
      expect(byId("small")["error_message"]).toBe("");
      stream.end();

      // Once the held call ends, its bytes are given back: the refused size is served.
      held!.cancel();
      expect((await heldResult).code).toBe(grpc.status.CANCELLED);
      await expect
        .poll(
          async () =>
            (await call(inference, "ModelInfer", { model_name: "echo", ...bytes(1.5 * MiB) }).catch((e) => e))[
              "outputs"
            ]?.[0]?.["shape"],
        )
        .toEqual([String(1.5 * MiB)]);
    } finally {
      inference.close();
      localHealth.close();
      await budgeted.stop(100);
    }
  });
});

describe("extensions not offered", () => {
  it.each([
    "SystemSharedMemoryStatus",
    "SystemSharedMemoryRegister",
    "SystemSharedMemoryUnregister",
    "CudaSharedMemoryStatus",
    "CudaSharedMemoryRegister",
    "CudaSharedMemoryUnregister",
    "TraceSetting",
    "LogSettings",
  ])("%s answers UNIMPLEMENTED", async (method) => {
    const error = await callError(client, method, {});
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(error.details).toMatch(/not supported/);
  });
});

describe("grpc.health.v1.Health", () => {
  it("checks the server and models", async () => {
    expect(await call(health, "Check", {})).toEqual({ status: "SERVING" });
    expect(await call(health, "Check", { service: "inference.GRPCInferenceService" })).toEqual({ status: "SERVING" });
    expect(await call(health, "Check", { service: "add" })).toEqual({ status: "SERVING" });
    expect(await call(health, "Check", { service: "cold" })).toEqual({ status: "NOT_SERVING" });
    expect((await callError(health, "Check", { service: "nope" })).code).toBe(grpc.status.NOT_FOUND);
    engine.ready = false;
    try {
      expect(await call(health, "Check", {})).toEqual({ status: "NOT_SERVING" });
    } finally {
      engine.ready = true;
    }
  });

  it("watches: sends the current status, then changes, until cancelled", async () => {
    const stream = health["Watch"]({}) as grpc.ClientReadableStream<Reply>;
    const statuses: string[] = [];
    stream.on("data", (reply: Reply) => {
      statuses.push(reply["status"]);
      if (statuses.length === 1) engine.ready = false;
      if (statuses.length === 2) stream.cancel();
    });
    const code = await new Promise<number>((resolve) => stream.on("error", (e: grpc.ServiceError) => resolve(e.code)));
    engine.ready = true;
    expect(statuses).toEqual(["SERVING", "NOT_SERVING"]);
    expect(code).toBe(grpc.status.CANCELLED);
  });

  it("reports SERVICE_UNKNOWN to Watch for an unknown model", async () => {
    const stream = health["Watch"]({ service: "nope" }) as grpc.ClientReadableStream<Reply>;
    const first = await new Promise<Reply>((resolve) => stream.once("data", resolve));
    stream.cancel();
    stream.on("error", () => undefined);
    expect(first).toEqual({ status: "SERVICE_UNKNOWN" });
  });
});

describe("server lifecycle and limits", () => {
  it("stop() ends open Watch streams and returns promptly", async () => {
    const local = await startGrpcFrontend(new FakeEngine(), { host: "127.0.0.1", port: 0 });
    const { health: localHealth, inference } = await makeClients(local.port);
    const stream = localHealth["Watch"]({}) as grpc.ClientReadableStream<Reply>;
    const ended = new Promise<void>((resolve) => {
      stream.on("end", resolve);
      stream.on("error", () => resolve());
    });
    await new Promise((resolve) => stream.once("data", resolve));
    const started = Date.now();
    await local.stop(5000);
    await ended;
    expect(Date.now() - started).toBeLessThan(2000);
    localHealth.close();
    inference.close();
  });

  it("enforces the configured receive limit", async () => {
    const local = await startGrpcFrontend(new FakeEngine(), {
      host: "127.0.0.1",
      port: 0,
      maxReceiveMessageLength: 1024,
    });
    const { inference, health: localHealth } = await makeClients(local.port);
    try {
      const error = await callError(inference, "ModelInfer", {
        model_name: "echo",
        inputs: [{ name: "A", datatype: "UINT8", shape: [4096] }],
        raw_input_contents: [Buffer.alloc(4096)],
      });
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    } finally {
      inference.close();
      localHealth.close();
      await local.stop(100);
    }
  });
});

describe("API keys (authorization metadata)", () => {
  const makeKey = (id: string, scopes: ApiKeyScope[], extra: Partial<ApiKeyGrant> = {}) => {
    const { key, prefix, hash } = generateApiKey();
    return {
      key,
      prefix,
      grant: { id, hash, scopes, priorityLevel: 0, qpsQuota: null, expiresAt: null, ...extra } satisfies ApiKeyGrant,
    };
  };
  const inferKey = makeKey("infer-key", ["infer"], { priorityLevel: 2 });
  const adminKey = makeKey("admin-key", ["admin"]);
  const limitedKey = makeKey("limited-key", ["infer"], { qpsQuota: 1 });
  let secured: GrpcFrontend;
  let securedClient: Client;

  const withKey = (key?: { key: string }): grpc.Metadata => {
    const metadata = new grpc.Metadata();
    if (key !== undefined) metadata.set("authorization", `Bearer ${key.key}`);
    return metadata;
  };
  const callAs = (method: string, request: object, key?: { key: string }): Promise<Reply> =>
    new Promise((resolve, reject) => {
      securedClient[method](request, withKey(key), (error: grpc.ServiceError | null, reply: Reply) =>
        error ? reject(error) : resolve(reply),
      );
    });
  const errorAs = async (method: string, request: object, key?: { key: string }): Promise<grpc.ServiceError> => {
    try {
      await callAs(method, request, key);
    } catch (error) {
      return error as grpc.ServiceError;
    }
    throw new Error(`${method} unexpectedly succeeded`);
  };

  beforeAll(async () => {
    const ring = new ApiKeyRing([inferKey.grant, adminKey.grant, limitedKey.grant]);
    secured = await startGrpcFrontend(engine, {
      host: "127.0.0.1",
      port: 0,
      access: new GatewayAccessPolicy({ ring, requireApiKey: true, loopbackOnly: true }),
    });
    ({ inference: securedClient } = await makeClients(secured.port));
  });
  afterAll(async () => {
    securedClient.close();
    await secured.stop(500);
  });

  it("refuses model load without a key (UNAUTHENTICATED) and with an infer key (PERMISSION_DENIED); an admin key loads", async () => {
    const anonymous = await errorAs("RepositoryModelLoad", { model_name: "m" });
    expect(anonymous.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(anonymous.details).toBe("model control on this server needs an API key (Authorization: Bearer <key>)");
    const inferOnly = await errorAs("RepositoryModelUnload", { model_name: "m" }, inferKey);
    expect(inferOnly.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(inferOnly.details).toBe("this API key lacks the 'admin' scope that model control needs");
    await callAs("RepositoryModelLoad", { model_name: "secured" }, adminKey);
    expect(engine.loads.at(-1)?.name).toBe("secured");
  });

  it("keeps ServerLive, ServerReady and ServerMetadata open, and guards the rest", async () => {
    expect(await callAs("ServerLive", {})).toEqual({ live: true });
    expect(await callAs("ServerReady", {})).toEqual({ ready: true });
    expect((await callAs("ServerMetadata", {})).name).toBe("operon");
    expect((await errorAs("ModelMetadata", { name: "add" })).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await errorAs("RepositoryIndex", {})).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await callAs("ModelMetadata", { name: "add" }, inferKey)).name).toBe("add");
  });

  it("gives ModelInfer its key's priority and answers RESOURCE_EXHAUSTED over the quota", async () => {
    await callAs("ModelInfer", { model_name: "echo", inputs: [] }, inferKey);
    expect(engine.lastRequest?.parameters["priority"]).toBe(2);
    await callAs("ModelInfer", { model_name: "echo", inputs: [] }, limitedKey);
    const over = await errorAs("ModelInfer", { model_name: "echo", inputs: [] }, limitedKey);
    expect(over.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(over.details).toBe(`API key opk_${limitedKey.prefix}… exceeded its quota of 1 requests/s`);
  });

  it("fails a ModelStreamInfer call without a key", async () => {
    const stream = securedClient["ModelStreamInfer"](withKey());
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      stream.on("error", () => undefined);
      stream.on("status", resolve);
      stream.on("data", () => undefined);
    });
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
  });
});
