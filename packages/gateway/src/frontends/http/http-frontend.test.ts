import http from "node:http";
import { gzipSync } from "node:zlib";
import type { DataType } from "@operon/protocol/datatypes";
import { ERROR_KINDS, type ErrorKind, OperonError, httpStatusOf, logLevelOf } from "@operon/protocol/errors";
import type {
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  ModelMetadata,
  ModelStatistics,
  ModelUnloadOptions,
  RepositoryIndexEntry,
  ServerMetadata,
  TensorMetadata,
} from "@operon/protocol/inference";
import { encodeBytesElements } from "@operon/protocol/tensor";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { WorkersResponse } from "@operon/protocol/admin";
import { type ApiKeyGrant, type ApiKeyScope, generateApiKey } from "@operon/protocol/api-keys";
import { GatewayAccessPolicy } from "../../auth/access-policy.js";
import { ApiKeyRing } from "../../auth/api-key-ring.js";
import type { InferenceEngine, OperatorValidation } from "../../engine/engine-api.js";
import { DECODE_OFF_LOOP_BYTES, DecodePool } from "../decode/decode-pool.js";
import { type HttpFrontend, startHttpFrontend } from "./http-frontend.js";
import type { Logger } from "@operon/protocol/logger";

// ---------------------------------------------------------------------------
// A fake engine with canned models:
//   add    INPUT0 + INPUT1 (FP32 [4]) -> OUTPUT0 = sum, OUTPUT1 = difference
//   echo   every input comes back as an output of the same name
//   image  one input IMAGE FP32 [-1,2,2] (batching, max_batch_size 4) -> OUT
//   fail   throws the OperonError kind named by the request parameter "kind" ("bug": a TypeError)
//   slow   never answers; settles only when its signal aborts
//   delay  echo after 50 ms
//   story  decoupled: one text_output per word of text_input (at most max_tokens), then the final flag alone;
//          parameter fail_after=n: an error response after n words; wait=true: waits after the first word until cancelled
// ---------------------------------------------------------------------------

interface FakeModel {
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
  maxBatchSize: number;
  /** More config fields (e.g. dynamic_batching). */
  config?: Record<string, unknown>;
  infer: (request: InferRequest) => Promise<InferResponse> | InferResponse;
}

const fp32 = (...values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
const readFp32 = (data: Buffer): number[] => Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));

function respond(request: InferRequest, outputs: InferResponse["outputs"]): InferResponse {
  return { modelName: request.modelName, modelVersion: request.modelVersion ?? "1", outputs };
}

class FakeEngine implements InferenceEngine {
  live = true;
  ready = true;
  lastRequest: InferRequest | undefined;
  loads: Array<{ name: string; options: ModelLoadOptions }> = [];
  unloads: Array<{ name: string; options: ModelUnloadOptions }> = [];
  slowStarted: Promise<void> = Promise.resolve();
  slowAborted: Promise<unknown> = Promise.resolve();
  private markSlowStarted = (): void => {};
  private markSlowAborted = (_reason: unknown): void => {};

  readonly models = new Map<string, FakeModel>([
    [
      "add",
      {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [4] },
          { name: "INPUT1", datatype: "FP32", shape: [4] },
        ],
        outputs: [
          { name: "OUTPUT0", datatype: "FP32", shape: [4] },
          { name: "OUTPUT1", datatype: "FP32", shape: [4] },
        ],
        maxBatchSize: 0,
        infer: (request) => {
          const a = readFp32(request.inputs.find((input) => input.name === "INPUT0")!.data);
          const b = readFp32(request.inputs.find((input) => input.name === "INPUT1")!.data);
          return respond(request, [
            { name: "OUTPUT0", datatype: "FP32", shape: [4], data: fp32(...a.map((x, i) => x + b[i]!)) },
            { name: "OUTPUT1", datatype: "FP32", shape: [4], data: fp32(...a.map((x, i) => x - b[i]!)) },
          ]);
        },
      },
    ],
    ["echo", { inputs: [], outputs: [], maxBatchSize: 0, infer: (request) => echo(request) }],
    // echo with 3 priority levels (key priorities are capped at 3)
    [
      "ranked",
      {
        inputs: [],
        outputs: [],
        maxBatchSize: 0,
        config: { dynamic_batching: { priority_levels: 3 } },
        infer: (request) => echo(request),
      },
    ],
    ["dir/model name", { inputs: [], outputs: [], maxBatchSize: 0, infer: (request) => echo(request) }],
    [
      "image",
      {
        inputs: [{ name: "IMAGE", datatype: "FP32", shape: [-1, 2, 2] }],
        outputs: [{ name: "OUT", datatype: "FP32", shape: [-1, 2, 2] }],
        maxBatchSize: 4,
        infer: (request) => {
          const input = request.inputs[0]!;
          return respond(request, [{ name: "OUT", datatype: input.datatype, shape: input.shape, data: input.data }]);
        },
      },
    ],
    [
      "fail",
      {
        inputs: [],
        outputs: [],
        maxBatchSize: 0,
        infer: (request) => {
          const kind = request.parameters["kind"];
          if (kind === "bug") throw new TypeError("cannot read properties of undefined (secret internals)");
          throw new OperonError(kind as ErrorKind, `failed with ${String(kind)}`);
        },
      },
    ],
    [
      "slow",
      {
        inputs: [],
        outputs: [],
        maxBatchSize: 0,
        infer: (request) =>
          new Promise<InferResponse>((_resolve, reject) => {
            this.markSlowStarted();
            request.signal?.addEventListener("abort", () => {
              this.markSlowAborted(request.signal?.reason);
              reject(new OperonError("CANCELLED", "request cancelled"));
            });
          }),
      },
    ],
    [
      "delay",
      {
        inputs: [],
        outputs: [],
        maxBatchSize: 0,
        infer: (request) => new Promise((resolve) => setTimeout(() => resolve(echo(request)), 50)),
      },
    ],
    [
      "story",
      {
        inputs: [
          { name: "text_input", datatype: "BYTES", shape: [1] },
          { name: "max_tokens", datatype: "INT32", shape: [1] },
        ],
        outputs: [{ name: "text_output", datatype: "BYTES", shape: [1] }],
        maxBatchSize: 0,
        infer: () => {
          throw new OperonError(
            "UNSUPPORTED",
            "model 'story' is decoupled: use ModelStreamInfer (gRPC) or generate_stream / infer_stream (HTTP)",
          );
        },
      },
    ],
  ]);
  storyCancelled: Promise<unknown> = Promise.resolve();

  /** 'story' streams (see the table above); every other model answers once, through infer. */
  async inferStream(
    request: InferRequest,
    onResponse: (response: InferResponse | OperonError, final: boolean, decoupled: boolean) => void,
  ): Promise<void> {
    if (request.modelName !== "story") {
      onResponse(await this.infer(request), true, false);
      return;
    }
    this.lastRequest = request;
    const input = (name: string) => request.inputs.find((tensor) => tensor.name === name);
    const text = input("text_input");
    if (text === undefined)
      throw new OperonError(
        "INVALID_ARG",
        "expected 1 inputs but got 0 inputs for model 'story'; missing: 'text_input'",
      );
    const cap = input("max_tokens")?.data.readInt32LE(0);
    const words = text.data.subarray(4).toString("utf8").split(" ").slice(0, cap);
    for (const [i, word] of words.entries()) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (request.parameters["fail_after"] === i)
        onResponse(new OperonError("INTERNAL", `story broke after ${i} words`), false, true);
      onResponse(
        respond(request, [{ name: "text_output", datatype: "BYTES", shape: [1], data: encodeBytesElements([word]) }]),
        false,
        true,
      );
      if (request.parameters["wait"] === true) {
        const signal = request.signal!;
        this.storyCancelled = new Promise((resolve) =>
          signal.addEventListener("abort", () => resolve(signal.reason), { once: true }),
        );
        await this.storyCancelled;
        onResponse(new OperonError("CANCELLED", "cancelled"), true, true);
        return;
      }
    }
    onResponse(respond(request, []), true, true);
  }
  async whenServed(): Promise<void> {}
  isDecoupled(name: string): boolean {
    return name === "story";
  }

  armSlow(): void {
    this.slowStarted = new Promise((resolve) => (this.markSlowStarted = resolve));
    this.slowAborted = new Promise((resolve) => (this.markSlowAborted = resolve));
  }

  private model(name: string, version?: string): FakeModel {
    const model = this.models.get(name);
    if (model === undefined) throw new OperonError("NOT_FOUND", `Request for unknown model: '${name}' is not found`);
    if (version !== undefined && version !== "1") {
      throw new OperonError("NOT_FOUND", `Request for unknown model: '${name}' version ${version} is not found`);
    }
    return model;
  }

  serverMetadata(): ServerMetadata {
    return { name: "operon", version: "0.1.0", extensions: ["binary_tensor_data", "model_repository", "statistics"] };
  }
  isLive(): boolean {
    return this.live;
  }
  isReady(): boolean {
    return this.ready;
  }
  isModelReady(name: string, version?: string): boolean {
    return this.models.has(name) && (version === undefined || version === "1");
  }
  modelMetadata(name: string, version?: string): ModelMetadata {
    const model = this.model(name, version);
    return { name, versions: ["1"], platform: "fake", inputs: model.inputs, outputs: model.outputs };
  }
  modelConfig(name: string, version?: string): Record<string, unknown> {
    const model = this.model(name, version);
    return { name, max_batch_size: model.maxBatchSize, backend: "fake", ...model.config };
  }
  async infer(request: InferRequest): Promise<InferResponse> {
    this.lastRequest = request;
    return this.model(request.modelName, request.modelVersion).infer(request);
  }
  async repositoryIndex(options: { ready?: boolean }): Promise<RepositoryIndexEntry[]> {
    const all: RepositoryIndexEntry[] = [
      { name: "add", version: "1", state: "READY", reason: "" },
      { name: "broken", state: "UNAVAILABLE", reason: "load failed" },
    ];
    return options.ready === true ? all.filter((entry) => entry.state === "READY") : all;
  }
  async loadModel(name: string, options: ModelLoadOptions): Promise<void> {
    if (name === "locked")
      throw new OperonError("UNSUPPORTED", "explicit model load / unload is not allowed if polling is enabled");
    this.loads.push({ name, options });
  }
  async unloadModel(name: string, options: ModelUnloadOptions): Promise<void> {
    this.unloads.push({ name, options });
  }
  /** Valid unless a step names a model this engine does not have. */
  async validateOperator(spec: unknown): Promise<OperatorValidation> {
    const steps = (spec as { steps?: Array<{ model?: string }> }).steps ?? [];
    const problems = steps
      .filter((step) => step.model !== undefined && !this.models.has(step.model))
      .map((step) => ({ code: "unknown-model", message: `unknown model '${step.model}'` }));
    return { valid: problems.length === 0, problems };
  }
  async workers(): Promise<WorkersResponse> {
    return { workers: [], hostCpuCores: 2, gateway: { pid: process.pid, cpuSeconds: 1, rssBytes: 2 }, gpus: [] };
  }
  modelStatistics(name?: string, version?: string): ModelStatistics[] {
    const names = name === undefined ? [...this.models.keys()] : [name];
    for (const n of names) this.model(n, version);
    return names.map((n) => stats(n));
  }
}

function echo(request: InferRequest): InferResponse {
  return respond(
    request,
    request.inputs.map(({ name, datatype, shape, data }) => ({ name, datatype, shape, data })),
  );
}

function stats(name: string): ModelStatistics {
  const zero = { count: 0, ns: 0 };
  return {
    name,
    version: "1",
    last_inference: 0,
    inference_count: 0,
    execution_count: 0,
    inference_stats: {
      success: zero,
      fail: zero,
      queue: zero,
      compute_input: zero,
      compute_infer: zero,
      compute_output: zero,
      cache_hit: zero,
      cache_miss: zero,
    },
    response_stats: {},
    batch_stats: [],
    memory_usage: [],
  };
}

// ---------------------------------------------------------------------------

interface LogLine {
  level: "info" | "warn" | "error";
  obj: object | string;
  msg: string | undefined;
}

const MAX_BODY = 64 * 1024;
const engine = new FakeEngine();
const logs: LogLine[] = [];
const logger: Logger = {
  info: (obj, msg) => logs.push({ level: "info", obj, msg }),
  warn: (obj, msg) => logs.push({ level: "warn", obj, msg }),
  error: (obj, msg) => logs.push({ level: "error", obj, msg }),
};
let frontend: HttpFrontend;
let base: string;

beforeAll(async () => {
  frontend = await startHttpFrontend(engine, { host: "127.0.0.1", port: 0, maxBodyBytes: MAX_BODY, logger });
  base = `http://127.0.0.1:${frontend.port}`;
});
afterAll(() => frontend.stop(100));
beforeEach(() => {
  logs.length = 0;
});

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const payload = Buffer.isBuffer(body) ? body : typeof body === "string" ? body : JSON.stringify(body);
  return fetch(`${base}${path}`, { method: "POST", body: payload, headers });
}

/** A binary_tensor_data request body: the JSON header then the chunks. */
function binaryBody(header: object, ...chunks: Buffer[]): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return {
    body: Buffer.concat([json, ...chunks]),
    headers: { "Inference-Header-Content-Length": String(json.length), "Content-Type": "application/octet-stream" },
  };
}

interface ResponseOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: { binary_data_size?: number };
  data?: unknown[];
}

/** Splits a binary response into its JSON and each binary output's bytes, by name. */
async function readBinaryResponse(
  res: Response,
): Promise<{ json: { outputs: ResponseOutput[]; [key: string]: unknown }; binary: Map<string, Buffer> }> {
  const body = Buffer.from(await res.arrayBuffer());
  const headerLength = Number(res.headers.get("inference-header-content-length"));
  const json = JSON.parse(body.subarray(0, headerLength).toString());
  const binary = new Map<string, Buffer>();
  let offset = headerLength;
  for (const output of json.outputs as ResponseOutput[]) {
    const size = output.parameters?.binary_data_size;
    if (size === undefined) continue;
    binary.set(output.name, body.subarray(offset, offset + size));
    offset += size;
  }
  expect(offset).toBe(body.length);
  return { json, binary };
}

/** An error body: `error` (KServe v2), plus `kind` when the failure has an OperonError kind; `kind` checked when given. */
async function expectError(res: Response, status: number, message: string | RegExp, kind?: ErrorKind): Promise<void> {
  const text = await res.text();
  expect({ status: res.status, contentType: res.headers.get("content-type") }).toEqual({
    status,
    contentType: "application/json",
  });
  const { error, kind: bodyKind, ...rest } = JSON.parse(text) as { error: string; kind?: string };
  expect(rest).toEqual({});
  if (typeof message === "string") expect(error).toBe(message);
  else expect(error).toMatch(message);
  if (kind !== undefined) expect(bodyKind).toBe(kind);
}

const ADD_REQUEST = {
  id: "req-1",
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [4], data: [1, 2, 3, 4] },
    { name: "INPUT1", datatype: "FP32", shape: [4], data: [10, 20, 30, 40] },
  ],
};

/** Resolves with the response (or the error) of a raw node:http request. */
function rawRequest(
  options: http.RequestOptions,
  write: (req: http.ClientRequest) => void,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; sawContinue: boolean }> {
  return new Promise((resolve, reject) => {
    let sawContinue = false;
    const req = http.request({ host: "127.0.0.1", port: frontend.port, ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
          sawContinue,
        }),
      );
    });
    req.on("continue", () => {
      sawContinue = true;
    });
    req.on("error", reject);
    write(req);
  });
}

// ---------------------------------------------------------------------------

describe("health and metadata", () => {
  it("answers live and ready with an empty body: 200 when true, 400 when false", async () => {
    for (const path of ["/v2/health/live", "/v2/health/ready"]) {
      const ok = await fetch(`${base}${path}`);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe("");
    }
    engine.live = false;
    engine.ready = false;
    try {
      for (const path of ["/v2/health/live", "/v2/health/ready"]) {
        const no = await fetch(`${base}${path}`);
        expect(no.status).toBe(400);
        expect(await no.text()).toBe("");
      }
    } finally {
      engine.live = true;
      engine.ready = true;
    }
  });

  it("serves server metadata", async () => {
    const res = await fetch(`${base}/v2`);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual(engine.serverMetadata());
  });

  it("serves model metadata with and without a version, URL-decoding the model name", async () => {
    const plain = await fetch(`${base}/v2/models/add`);
    expect(((await plain.json()) as ModelMetadata).inputs).toHaveLength(2);
    const versioned = await fetch(`${base}/v2/models/add/versions/1`);
    expect(((await versioned.json()) as ModelMetadata).name).toBe("add");
    const encoded = await fetch(`${base}/v2/models/dir%2Fmodel%20name`);
    expect(((await encoded.json()) as ModelMetadata).name).toBe("dir/model name");
    await expectError(await fetch(`${base}/v2/models/nope`), 404, "Request for unknown model: 'nope' is not found");
    await expectError(
      await fetch(`${base}/v2/models/add/versions/7`),
      404,
      "Request for unknown model: 'add' version 7 is not found",
    );
  });

  it("answers model readiness with an empty body", async () => {
    for (const [path, status] of [
      ["/v2/models/add/ready", 200],
      ["/v2/models/add/versions/1/ready", 200],
      ["/v2/models/add/versions/3/ready", 400],
      ["/v2/models/nope/ready", 400],
    ] as const) {
      const res = await fetch(`${base}${path}`);
      expect([path, res.status, await res.text()]).toEqual([path, status, ""]);
    }
  });

  it("serves the model config", async () => {
    expect(await (await fetch(`${base}/v2/models/image/config`)).json()).toEqual({
      name: "image",
      max_batch_size: 4,
      backend: "fake",
    });
    expect(await (await fetch(`${base}/v2/models/image/versions/1/config`)).json()).toMatchObject({ name: "image" });
    await expectError(await fetch(`${base}/v2/models/nope/config`), 404, /unknown model/);
  });

  it("serves statistics for all models, one model and one version", async () => {
    const all = (await (await fetch(`${base}/v2/models/stats`)).json()) as { model_stats: ModelStatistics[] };
    expect(all.model_stats.map((s) => s.name)).toEqual([...engine.models.keys()]);
    expect(await (await fetch(`${base}/v2/models/add/stats`)).json()).toEqual({ model_stats: [stats("add")] });
    expect(await (await fetch(`${base}/v2/models/add/versions/1/stats`)).json()).toEqual({
      model_stats: [stats("add")],
    });
    await expectError(await fetch(`${base}/v2/models/nope/stats`), 404, /unknown model/);
  });
});

describe("routing", () => {
  it("answers unknown paths with 404 and an error body", async () => {
    await expectError(await fetch(`${base}/v2/nothing/here`), 404, "no endpoint at '/v2/nothing/here'");
    await expectError(await fetch(`${base}/v2/models/add/infer/extra`), 404, /no endpoint/);
  });

  it("answers a wrong method with 405, an Allow header and an error body", async () => {
    const res = await fetch(`${base}/v2/health/live`, { method: "POST" });
    expect(res.headers.get("allow")).toBe("GET");
    await expectError(res, 405, "method POST is not allowed for '/v2/health/live'; use GET");
    await expectError(await fetch(`${base}/v2/models/add/infer`), 405, /use POST/);
  });

  it("rejects malformed percent-encoding in a model name", async () => {
    await expectError(
      await fetch(`${base}/v2/models/bad%E0%A4%A/ready`),
      400,
      /malformed percent-encoding in the model path segment/,
    );
  });

  it("ignores the query string", async () => {
    expect((await fetch(`${base}/v2/health/live?verbose=1`)).status).toBe(200);
  });

  it("keeps connections alive", async () => {
    const res = await rawRequest({ path: "/v2/health/live" }, (req) => req.end());
    expect(res.headers.connection).toBe("keep-alive");
  });
});

describe("model repository", () => {
  it("lists the index, all or ready only", async () => {
    const all = (await (await post("/v2/repository/index", "")).json()) as RepositoryIndexEntry[];
    expect(all.map((entry) => entry.name)).toEqual(["add", "broken"]);
    const ready = (await (await post("/v2/repository/index", { ready: true })).json()) as RepositoryIndexEntry[];
    expect(ready).toEqual([{ name: "add", version: "1", state: "READY", reason: "" }]);
    await expectError(
      await post("/v2/repository/index", { ready: "yes" }),
      400,
      "'ready' must be a boolean, got a string",
    );
  });

  it("loads a model with a config and base64 files keyed '<version>/<path>'", async () => {
    engine.loads = [];
    const res = await post("/v2/repository/models/new%20model/load", {
      parameters: {
        config: '{"backend":"onnxruntime"}',
        "file:1/model.onnx": Buffer.from("onnx bytes").toString("base64"),
        "file:1/sub/vocab.txt": Buffer.from("a\nb").toString("base64"),
      },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(engine.loads).toEqual([
      {
        name: "new model",
        options: {
          config: '{"backend":"onnxruntime"}',
          files: new Map([
            ["1/model.onnx", Buffer.from("onnx bytes")],
            ["1/sub/vocab.txt", Buffer.from("a\nb")],
          ]),
        },
      },
    ]);
  });

  it("loads with an empty body or a config alone", async () => {
    engine.loads = [];
    expect((await post("/v2/repository/models/add/load", "")).status).toBe(200);
    expect((await post("/v2/repository/models/add/load", { parameters: { config: "{}" } })).status).toBe(200);
    expect(engine.loads.map((load) => load.options)).toEqual([{}, { config: "{}" }]);
  });

  it("rejects bad load requests", async () => {
    await expectError(
      await post("/v2/repository/models/m/load", { parameters: { config: "{}", "file:1/model.onnx": "not base64!" } }),
      400,
      "'parameters.file:1/model.onnx' is not valid base64",
    );
    await expectError(
      await post("/v2/repository/models/m/load", { parameters: { "file:1/model.onnx": "AAAA" } }),
      400,
      "load request with 'file:' parameters must also provide the 'config' parameter",
    );
    await expectError(
      await post("/v2/repository/models/m/load", { parameters: { config: "{}", "file:../../etc/passwd": "AAAA" } }),
      400,
      /must name a relative file path inside the model directory/,
    );
    await expectError(
      await post("/v2/repository/models/m/load", { parameters: { config: 5 } }),
      400,
      "'parameters.config' must be a string, got a number",
    );
    await expectError(await post("/v2/repository/models/m/load", "{oops"), 400, /^malformed JSON in request body: /);
    await expectError(await post("/v2/repository/models/locked/load", ""), 501, /not allowed if polling is enabled/);
  });

  it("unloads, with or without dependents", async () => {
    engine.unloads = [];
    expect((await post("/v2/repository/models/add/unload", { parameters: { unload_dependents: true } })).status).toBe(
      200,
    );
    expect((await post("/v2/repository/models/add/unload", "")).status).toBe(200);
    expect(engine.unloads).toEqual([
      { name: "add", options: { unloadDependents: true } },
      { name: "add", options: {} },
    ]);
    await expectError(
      await post("/v2/repository/models/add/unload", { parameters: { unload_dependents: 1 } }),
      400,
      "'parameters.unload_dependents' must be a boolean, got a number",
    );
  });
});

describe("infer with JSON", () => {
  it("adds two FP32 tensors, echoing the request id", async () => {
    const res = await post("/v2/models/add/infer", ADD_REQUEST);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("inference-header-content-length")).toBeNull();
    expect(await res.json()).toEqual({
      model_name: "add",
      model_version: "1",
      id: "req-1",
      outputs: [
        { name: "OUTPUT0", datatype: "FP32", shape: [4], data: [11, 22, 33, 44] },
        { name: "OUTPUT1", datatype: "FP32", shape: [4], data: [-9, -18, -27, -36] },
      ],
    });
    expect(engine.lastRequest?.signal?.aborted).toBe(false); // a cancel signal travels with the request (test at "aborts the engine's signal")
    expect(engine.lastRequest?.modelVersion).toBeUndefined();
  });

  it("accepts nested data and a version in the path", async () => {
    const res = await post("/v2/models/add/versions/1/infer", {
      inputs: [
        {
          name: "INPUT0",
          datatype: "FP32",
          shape: [4],
          data: [
            [1, 2],
            [3, 4],
          ],
        },
        { name: "INPUT1", datatype: "FP32", shape: [4], data: [1, 1, 1, 1] },
      ],
    });
    const json = (await res.json()) as { outputs: ResponseOutput[]; id?: string };
    expect(json.outputs[0]!.data).toEqual([2, 3, 4, 5]);
    expect(json).not.toHaveProperty("id");
    expect(engine.lastRequest?.modelVersion).toBe("1");
  });

  it("returns only the requested outputs and passes the request on without HTTP-only parameters", async () => {
    const res = await post("/v2/models/add/infer", {
      ...ADD_REQUEST,
      parameters: { priority: 2, binary_data_output: false, tag: "x" },
      outputs: [{ name: "OUTPUT1" }],
    });
    const json = (await res.json()) as { outputs: ResponseOutput[] };
    expect(json.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
    expect(engine.lastRequest?.parameters).toEqual({ priority: 2, tag: "x" });
    expect(engine.lastRequest?.outputs).toEqual([{ name: "OUTPUT1" }]);
  });

  it.each<[DataType, unknown[]]>([
    ["BOOL", [true, false]],
    ["UINT8", [0, 255]],
    ["UINT16", [1, 65535]],
    ["UINT32", [1, 4294967295]],
    ["UINT64", [1, "18446744073709551615"]],
    ["INT8", [-128, 127]],
    ["INT16", [-32768, 32767]],
    ["INT32", [-2147483648, 2147483647]],
    ["INT64", ["-9223372036854775808", 5]],
    ["FP32", [0.5, -2]],
    ["FP64", [Math.PI, -1e300]],
    ["BYTES", ["hello", "wörld"]],
  ])("echoes %s through JSON", async (datatype, data) => {
    const res = await post("/v2/models/echo/infer", { inputs: [{ name: "x", datatype, shape: [1, 2], data: [data] }] });
    const text = await res.text();
    expect(res.status).toBe(200);
    // 64-bit values beyond 2^53 must come back with every digit, so compare the text.
    const expected = data
      .map((value) => (typeof value === "string" && datatype !== "BYTES" ? value : JSON.stringify(value)))
      .join(",");
    expect(text).toContain(`"shape":[1,2],"data":[${expected}]`);
  });
});

describe("infer with binary data", () => {
  it("takes binary inputs and returns binary outputs with binary_data_output", async () => {
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [4], parameters: { binary_data_size: 16 } },
          { name: "INPUT1", datatype: "FP32", shape: [4], parameters: { binary_data_size: 16 } },
        ],
        parameters: { binary_data_output: true },
      },
      fp32(1, 2, 3, 4),
      fp32(0.5, 0.5, 0.5, 0.5),
    );
    const res = await post("/v2/models/add/infer", body, headers);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const { json, binary } = await readBinaryResponse(res);
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [4], parameters: { binary_data_size: 16 } },
      { name: "OUTPUT1", datatype: "FP32", shape: [4], parameters: { binary_data_size: 16 } },
    ]);
    expect(readFp32(binary.get("OUTPUT0")!)).toEqual([1.5, 2.5, 3.5, 4.5]);
    expect(readFp32(binary.get("OUTPUT1")!)).toEqual([0.5, 1.5, 2.5, 3.5]);
    expect(engine.lastRequest?.inputs[0]!.parameters).toBeUndefined();
  });

  it("mixes JSON and binary inputs, and per-output binary_data picks each output's form", async () => {
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [4], data: [1, 1, 1, 1] },
          { name: "INPUT1", datatype: "FP32", shape: [4], parameters: { binary_data_size: 16 } },
        ],
        outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }, { name: "OUTPUT1" }],
      },
      fp32(1, 2, 3, 4),
    );
    const res = await post("/v2/models/add/infer", body, headers);
    const { json, binary } = await readBinaryResponse(res);
    expect(json.outputs[0]).toEqual({
      name: "OUTPUT0",
      datatype: "FP32",
      shape: [4],
      parameters: { binary_data_size: 16 },
    });
    expect(json.outputs[1]).toEqual({ name: "OUTPUT1", datatype: "FP32", shape: [4], data: [0, -1, -2, -3] });
    expect(readFp32(binary.get("OUTPUT0")!)).toEqual([2, 3, 4, 5]);
  });

  it("lets binary_data: false override binary_data_output", async () => {
    const { body, headers } = binaryBody({
      inputs: ADD_REQUEST.inputs,
      parameters: { binary_data_output: true },
      outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1", parameters: { binary_data: false } }],
    });
    const { json, binary } = await readBinaryResponse(await post("/v2/models/add/infer", body, headers));
    expect([...binary.keys()]).toEqual(["OUTPUT0"]);
    expect(json.outputs[1]!.data).toEqual([-9, -18, -27, -36]);
  });

  it("carries FP16 and BYTES as binary, and decodes FP16 to numbers when JSON is asked for", async () => {
    const half = Buffer.from(new Uint16Array([0x3c00, 0xc000]).buffer);
    const strings = encodeBytesElements(["a", "bcd"]);
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: "h", datatype: "FP16", shape: [2], parameters: { binary_data_size: half.length } },
          { name: "s", datatype: "BYTES", shape: [2], parameters: { binary_data_size: strings.length } },
        ],
        outputs: [{ name: "h" }, { name: "s", parameters: { binary_data: true } }],
      },
      half,
      strings,
    );
    const { json, binary } = await readBinaryResponse(await post("/v2/models/echo/infer", body, headers));
    expect(json.outputs[0]).toEqual({ name: "h", datatype: "FP16", shape: [2], data: [1, -2] });
    expect(binary.get("s")).toEqual(strings);
  });

  it("treats Inference-Header-Content-Length: 0 as a raw batch-1 request with binary outputs", async () => {
    const res = await post("/v2/models/image/infer", fp32(1, 2, 3, 4), { "Inference-Header-Content-Length": "0" });
    expect(res.status).toBe(200);
    const { json, binary } = await readBinaryResponse(res);
    expect(json.outputs).toEqual([
      { name: "OUT", datatype: "FP32", shape: [1, 2, 2], parameters: { binary_data_size: 16 } },
    ]);
    expect(readFp32(binary.get("OUT")!)).toEqual([1, 2, 3, 4]);
    expect(engine.lastRequest?.inputs.map((input) => [input.name, input.shape])).toEqual([["IMAGE", [1, 2, 2]]]);
  });

  it("rejects raw requests for models without exactly one input, or with the wrong size", async () => {
    await expectError(
      await post("/v2/models/add/infer", fp32(1, 2), { "Inference-Header-Content-Length": "0" }),
      400,
      "raw binary request (Inference-Header-Content-Length: 0) needs a model with exactly one input; model 'add' has 2",
    );
    await expectError(
      await post("/v2/models/image/infer", fp32(1, 2), { "Inference-Header-Content-Length": "0" }),
      400,
      "input 'IMAGE': expected 16 bytes for shape [1,2,2] of FP32, got 8",
    );
    await expectError(
      await post("/v2/models/nope/infer", fp32(1), { "Inference-Header-Content-Length": "0" }),
      404,
      /unknown model/,
    );
  });

  it("accepts a gzip-compressed body", async () => {
    const res = await post("/v2/models/add/infer", gzipSync(JSON.stringify(ADD_REQUEST)), {
      "Content-Encoding": "gzip",
    });
    expect(((await res.json()) as { outputs: ResponseOutput[] }).outputs[0]!.data).toEqual([11, 22, 33, 44]);
    await expectError(
      await post("/v2/models/add/infer", "x", { "Content-Encoding": "br" }),
      501,
      "unsupported Content-Encoding 'br'; use gzip, deflate or identity",
    );
  });
});

describe("infer request validation", () => {
  const input = (fields: Record<string, unknown>): object => ({
    inputs: [{ name: "INPUT0", datatype: "FP32", shape: [4], data: [1, 2, 3, 4], ...fields }],
  });

  it.each<[string, unknown, string | RegExp]>([
    ["malformed JSON", '{"inputs": [', /^malformed JSON in request body: .+/],
    ["an empty body", "", "the inference request body is empty; expected a JSON object"],
    ["a body that is not an object", "[1]", "'request body' must be a JSON object, got an array"],
    ["missing inputs", {}, "'inputs' must be an array, got nothing"],
    ["inputs not an array", { inputs: { name: "x" } }, "'inputs' must be an array, got an object"],
    ["an input that is not an object", { inputs: [3] }, "'inputs[0]' must be a JSON object, got a number"],
    ["an input without a name", input({ name: undefined }), "'inputs[0].name' must be a string, got nothing"],
    [
      "an input without a datatype",
      input({ datatype: undefined }),
      "'inputs[0].datatype' must be a string, got nothing",
    ],
    [
      "an unknown datatype",
      input({ datatype: "FLOAT" }),
      "'inputs[0].datatype' must be one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BYTES, BF16; got 'FLOAT'",
    ],
    [
      "a missing shape",
      input({ shape: undefined }),
      "'inputs[0].shape' must be an array of non-negative integers, got nothing",
    ],
    [
      "a negative dimension",
      input({ shape: [-1, 4] }),
      "'inputs[0].shape' must be an array of non-negative integers, got [-1,4]",
    ],
    [
      "a fractional dimension",
      input({ shape: [1.5] }),
      "'inputs[0].shape' must be an array of non-negative integers, got [1.5]",
    ],
    [
      "missing data",
      input({ data: undefined }),
      "'inputs[0].data' is missing for input 'INPUT0', which has no binary_data_size parameter",
    ],
    ["too few elements", input({ data: [1, 2, 3] }), "input 'INPUT0': expected 4 elements for shape [4], got 3"],
    [
      "a wrong element type",
      input({ data: [1, 2, "3", 4] }),
      "input 'INPUT0': element 2 must be a number for FP32, got \"3\"",
    ],
    [
      "FP16 in JSON",
      input({ datatype: "FP16" }),
      "input 'INPUT0': FP16 data cannot be sent as JSON; send it as binary data (binary_data_size parameter)",
    ],
    [
      "data and binary_data_size together",
      input({ parameters: { binary_data_size: 16 } }),
      "input 'INPUT0' has both 'data' and a binary_data_size parameter; send one or the other",
    ],
    [
      "binary_data_size without binary data",
      input({ data: undefined, parameters: { binary_data_size: 16 } }),
      "input 'INPUT0' has binary_data_size 16 but the request has no binary data; send the JSON length in the Inference-Header-Content-Length header",
    ],
    [
      "a negative binary_data_size",
      input({ data: undefined, parameters: { binary_data_size: -4 } }),
      "'inputs[0].parameters.binary_data_size' must be a non-negative integer, got -4",
    ],
    [
      "a parameter that is an object",
      input({ parameters: { x: {} } }),
      "'inputs[0].parameters.x' must be a string, number or boolean, got an object",
    ],
    [
      "a duplicate input",
      { inputs: [(input({}) as { inputs: object[] }).inputs[0], (input({}) as { inputs: object[] }).inputs[0]] },
      "input 'INPUT0' appears more than once in 'inputs'",
    ],
    ["an id that is not a string", { ...input({}), id: 7 }, "'id' must be a string, got a number"],
    [
      "parameters that are not an object",
      { ...input({}), parameters: [] },
      "'parameters' must be a JSON object, got an array",
    ],
    [
      "a binary_data_output that is not a boolean",
      { ...input({}), parameters: { binary_data_output: "yes" } },
      "'parameters.binary_data_output' must be a boolean, got a string",
    ],
    ["outputs not an array", { ...input({}), outputs: "OUTPUT0" }, "'outputs' must be an array, got a string"],
    ["an output without a name", { ...input({}), outputs: [{}] }, "'outputs[0].name' must be a string, got nothing"],
    [
      "a binary_data that is not a boolean",
      { ...input({}), outputs: [{ name: "OUTPUT0", parameters: { binary_data: 1 } }] },
      "'outputs[0].parameters.binary_data' must be a boolean, got a number",
    ],
  ])("rejects %s with 400", async (_label, body, message) => {
    await expectError(await post("/v2/models/add/infer", body), 400, message);
  });

  it.each<[string, Buffer, string, string]>([
    [
      "a header length past the body",
      Buffer.from("{}"),
      "3",
      "Inference-Header-Content-Length 3 exceeds the request body length 2",
    ],
    [
      "a header length that is not a number",
      Buffer.from("{}"),
      "two",
      "Inference-Header-Content-Length must be a non-negative integer, got 'two'",
    ],
  ])("rejects %s", async (_label, body, headerLength, message) => {
    await expectError(
      await post("/v2/models/add/infer", body, { "Inference-Header-Content-Length": headerLength }),
      400,
      message,
    );
  });

  const binaryInput = (size: number): object => ({
    inputs: [{ name: "INPUT0", datatype: "FP32", shape: [4], parameters: { binary_data_size: size } }],
  });

  it.each<[string, object, Buffer, string]>([
    [
      "truncated binary data",
      binaryInput(16),
      fp32(1, 2),
      "input 'INPUT0': binary_data_size is 16 but only 8 bytes of binary data are left",
    ],
    [
      "extra binary bytes",
      binaryInput(16),
      Buffer.concat([fp32(1, 2, 3, 4), Buffer.alloc(3)]),
      "3 unexpected bytes of binary data after input 'INPUT0', the last input with binary_data_size",
    ],
    [
      "a binary size that disagrees with the shape",
      binaryInput(8),
      fp32(1, 2),
      "input 'INPUT0': expected 16 bytes for shape [4] of FP32, got 8",
    ],
  ])("rejects %s naming the input", async (_label, header, data, message) => {
    const { body, headers } = binaryBody(header, data);
    await expectError(await post("/v2/models/add/infer", body, headers), 400, message);
  });
});

describe("errors", () => {
  it("names the OperonError kind in the body beside the message; failures of HTTP itself have none", async () => {
    const res = await post("/v2/models/fail/infer", { parameters: { kind: "NOT_FOUND" }, inputs: [] });
    expect(await res.json()).toEqual({ error: "failed with NOT_FOUND", kind: "NOT_FOUND" });
    expect(await (await fetch(`${base}/v2/no/such/endpoint`)).json()).toEqual({
      error: "no endpoint at '/v2/no/such/endpoint'",
    });
  });

  it.each(ERROR_KINDS.filter((kind) => kind !== "INTERNAL"))(
    "maps %s to its HTTP status and logs it at its kind's level",
    async (kind) => {
      const res = await post("/v2/models/fail/infer", { parameters: { kind }, inputs: [] });
      await expectError(res, httpStatusOf(kind), `failed with ${kind}`, kind);
      expect(logs.filter((line) => line.msg === `failed with ${kind}`).map((line) => line.level)).toEqual([
        logLevelOf(kind),
      ]);
    },
  );

  it("maps INTERNAL to 500 and logs it at error", async () => {
    await expectError(
      await post("/v2/models/fail/infer", { parameters: { kind: "INTERNAL" }, inputs: [] }),
      500,
      "failed with INTERNAL",
      "INTERNAL",
    );
    expect(logs.find((line) => line.msg === "failed with INTERNAL")?.level).toBe("error");
  });

  it("answers an unexpected exception with 500 and a fixed message, logging the details at error", async () => {
    await expectError(
      await post("/v2/models/fail/infer", { parameters: { kind: "bug" }, inputs: [] }),
      500,
      "internal server error",
      "INTERNAL",
    );
    const line = logs.find((entry) => entry.level === "error");
    expect((line?.obj as { err?: Error }).err?.message).toContain("secret internals");
  });
});

describe("body limit", () => {
  it("refuses a declared Content-Length over the limit before reading the body", async () => {
    const res = await rawRequest(
      { method: "POST", path: "/v2/models/add/infer", headers: { "Content-Length": String(MAX_BODY + 1) } },
      // Headers only: the answer must come without a byte of body.
      (req) => req.flushHeaders(),
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({
      error: `request body of ${MAX_BODY + 1} bytes exceeds the limit of ${MAX_BODY} bytes`,
    });
    expect(res.headers.connection).toBe("close");
  });

  it("refuses an oversized upload before 100-continue, and sends 100-continue for one that fits", async () => {
    const big = await rawRequest(
      {
        method: "POST",
        path: "/v2/models/add/infer",
        headers: { "Content-Length": String(MAX_BODY * 2), Expect: "100-continue" },
      },
      (req) => req.flushHeaders(),
    );
    expect([big.status, big.sawContinue]).toEqual([413, false]);

    const body = JSON.stringify(ADD_REQUEST);
    const small = await rawRequest(
      {
        method: "POST",
        path: "/v2/models/add/infer",
        headers: { "Content-Length": String(body.length), Expect: "100-continue" },
      },
      (req) => req.on("continue", () => req.end(body)),
    );
    expect([small.status, small.sawContinue]).toEqual([200, true]);
  });

  it("stops reading a chunked body as soon as it crosses the limit", async () => {
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let written = 0;
    const res = await rawRequest(
      { method: "POST", path: "/v2/models/add/infer", headers: { "Transfer-Encoding": "chunked" } },
      (req) => {
        // The body never ends: the answer must come from the chunk that crosses the limit, not from the end of
        // the body. Nothing is sent after that chunk, so the server's close leaves no unread bytes behind (unread
        // bytes would make the kernel reset the connection, and a reset can destroy the 413 before it is read).
        const timer = setInterval(() => {
          if (written > MAX_BODY) {
            clearInterval(timer);
            return;
          }
          written += chunk.length;
          req.write(chunk);
        }, 1);
        req.on("close", () => clearInterval(timer));
        req.on("error", () => clearInterval(timer));
      },
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toMatch(
      new RegExp(`^request body of at least \\d+ bytes exceeds the limit of ${MAX_BODY} bytes$`),
    );
    expect(res.headers.connection).toBe("close");
  });

  it("gives each infer body back to the in-flight budget when its response closes, answered or failed", async () => {
    // A budget that holds one body at a time: a body not given back would refuse every later request with 503.
    const body = JSON.stringify(ADD_REQUEST);
    const own = await startHttpFrontend(engine, {
      host: "127.0.0.1",
      port: 0,
      logger,
      maxInflightBodyBytes: Buffer.byteLength(body) + 8,
    });
    try {
      const post = (model: string): Promise<Response> =>
        fetch(`http://127.0.0.1:${own.port}/v2/models/${model}/infer`, { method: "POST", body });
      for (let i = 0; i < 5; i++) expect((await post("add")).status).toBe(200);
      // Failures too: an unknown model (the engine throws) and a failing one.
      expect((await post("nope")).status).toBe(404);
      expect((await post("fail")).status).not.toBe(503);
      expect((await post("add")).status).toBe(200);
    } finally {
      await own.stop(100);
    }
  });
});

describe("client abort", () => {
  it("aborts the engine's signal when the client closes before the response", async () => {
    engine.armSlow();
    const req = http.request({
      host: "127.0.0.1",
      port: frontend.port,
      method: "POST",
      path: "/v2/models/slow/infer",
      headers: { "Content-Type": "application/json" },
    });
    req.on("error", () => {});
    req.end(JSON.stringify({ inputs: [] }));
    await engine.slowStarted;
    req.destroy();
    const reason = await engine.slowAborted;
    expect(reason).toBeInstanceOf(Error);
    await expect
      .poll(() => logs.some((line) => line.level === "info" && /client closed the connection/.test(line.msg ?? "")))
      .toBe(true);
    expect(logs.filter((line) => line.level === "error")).toEqual([]);
  });
});

/** The `data:` events of a text/event-stream body, parsed. */
function sseEvents(text: string): Array<Record<string, unknown>> {
  expect(text.endsWith("\n\n") || text === "").toBe(true);
  return text
    .split("\n\n")
    .filter((chunk) => chunk !== "")
    .map((chunk) => {
      expect(chunk.startsWith("data: ")).toBe(true);
      return JSON.parse(chunk.slice("data: ".length)) as Record<string, unknown>;
    });
}

describe("generate and streaming (decoupled models)", () => {
  it("generate maps the JSON fields onto the model's inputs and answers the one response's outputs as fields", async () => {
    const res = await post("/v2/models/add/generate", {
      id: "g1",
      INPUT0: [1, 2, 3, 4],
      INPUT1: [1, 1, 1, 1],
      temperature: 0.5,
      parameters: { seed: 7 },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({
      model_name: "add",
      model_version: "1",
      id: "g1",
      OUTPUT0: [2, 3, 4, 5],
      OUTPUT1: [0, 1, 2, 3],
    });
    expect(engine.lastRequest?.parameters).toEqual({ seed: 7, temperature: 0.5 }); // keys that are no input are parameters
    expect(engine.lastRequest?.inputs.map((input) => [input.name, input.datatype, input.shape])).toEqual([
      ["INPUT0", "FP32", [4]],
      ["INPUT1", "FP32", [4]],
    ]);

    const one = await post("/v2/models/story/generate", { text_input: "hello world", max_tokens: 1 });
    expect(await one.json()).toEqual({ model_name: "story", model_version: "1", text_output: "hello" });
    expect(engine.lastRequest?.inputs.map((input) => [input.name, input.datatype, input.shape])).toEqual([
      ["text_input", "BYTES", [1]],
      ["max_tokens", "INT32", [1]],
    ]);
  });

  it("generate fails UNSUPPORTED (501) when a decoupled model sends more than one response, as Triton requires exactly one", async () => {
    await expectError(
      await post("/v2/models/story/generate", { text_input: "hello big world" }),
      501,
      "model 'story' sent more than one response; generate answers with exactly one: use generate_stream for a decoupled model's responses",
    );
    await expectError(
      await post("/v2/models/story/generate", { text_input: 5 }),
      400,
      /element 0 must be a string for BYTES/,
    );
    await expectError(await post("/v2/models/nope/generate", { text_input: "x" }), 404, /unknown model/);
  });

  it("generate_stream sends one SSE event per response, in order, errors as events, and ends the body", async () => {
    const res = await post("/v2/models/story/generate_stream", { id: "s1", text_input: "a b c" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("connection")).toBe("keep-alive");
    expect(sseEvents(await res.text())).toEqual(
      ["a", "b", "c"].map((word) => ({ model_name: "story", model_version: "1", id: "s1", text_output: word })),
    );

    const broken = await post("/v2/models/story/generate_stream", {
      text_input: "a b c",
      parameters: { fail_after: 1 },
    });
    expect(broken.status).toBe(200); // fixed by the first event
    expect(sseEvents(await broken.text()).map((event) => event["text_output"] ?? event)).toEqual([
      "a",
      { error: "story broke after 1 words" },
      "b",
      "c",
    ]);

    // A non-decoupled model: one event.
    const add = await post("/v2/models/add/generate_stream", { INPUT0: [1, 2, 3, 4], INPUT1: [0, 0, 0, 0] });
    expect(sseEvents(await add.text())).toEqual([
      { model_name: "add", model_version: "1", OUTPUT0: [1, 2, 3, 4], OUTPUT1: [1, 2, 3, 4] },
    ]);
  });

  it("a streaming request that fails before any response gets a plain JSON error with its status", async () => {
    await expectError(await post("/v2/models/nope/generate_stream", { text_input: "x" }), 404, /unknown model/);
    await expectError(await post("/v2/models/story/generate_stream", {}), 400, /missing: 'text_input'/);
    await expectError(await post("/v2/models/story/infer_stream", "{"), 400, /malformed JSON/);
    await expectError(
      await post("/v2/models/fail/infer_stream", { inputs: [], parameters: { kind: "UNAVAILABLE" } }),
      503,
      "failed with UNAVAILABLE",
    );
  });

  it("infer_stream sends KServe v2 JSON responses as events, the last marked triton_final_response: true", async () => {
    const res = await post("/v2/models/story/infer_stream", {
      id: "i1",
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [1], data: ["x y"] }],
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = sseEvents(await res.text());
    expect(events).toEqual([
      {
        model_name: "story",
        model_version: "1",
        id: "i1",
        parameters: { triton_final_response: false },
        outputs: [{ name: "text_output", datatype: "BYTES", shape: [1], data: ["x"] }],
      },
      {
        model_name: "story",
        model_version: "1",
        id: "i1",
        parameters: { triton_final_response: false },
        outputs: [{ name: "text_output", datatype: "BYTES", shape: [1], data: ["y"] }],
      },
      { model_name: "story", model_version: "1", id: "i1", parameters: { triton_final_response: true }, outputs: [] },
    ]);
    // A non-decoupled model: one final event; outputs are JSON even when asked as binary.
    const add = await post("/v2/models/add/infer_stream", {
      ...ADD_REQUEST,
      outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
    });
    expect(sseEvents(await add.text())).toEqual([
      {
        model_name: "add",
        model_version: "1",
        id: "req-1",
        parameters: { triton_final_response: true },
        outputs: [{ name: "OUTPUT0", datatype: "FP32", shape: [4], data: [11, 22, 33, 44] }],
      },
    ]);
  });

  it("a client that disconnects mid-stream cancels its request", async () => {
    const controller = new AbortController();
    const res = await fetch(`${base}/v2/models/story/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ text_input: "first second", parameters: { wait: true } }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toContain('"text_output":"first"');
    controller.abort();
    expect(await engine.storyCancelled).toBeInstanceOf(Error);
  });
});

describe("where bodies are decoded", () => {
  /** A decode pool that counts the bodies it is handed. */
  class CountingPool extends DecodePool {
    infers = 0;
    override decodeInfer(...args: Parameters<DecodePool["decodeInfer"]>): ReturnType<DecodePool["decodeInfer"]> {
      this.infers += 1;
      return super.decodeInfer(...args);
    }
  }

  it("decodes a large binary body with a small JSON header on the loop (its data is sliced, never parsed); a large JSON part goes to the pool", async () => {
    const pool = new CountingPool({ threads: 1 });
    const own = await startHttpFrontend(engine, { host: "127.0.0.1", port: 0, logger, decodePool: pool });
    try {
      const url = `http://127.0.0.1:${own.port}/v2/models/echo/infer`;
      const elements = DECODE_OFF_LOOP_BYTES; // 4 bytes each: a body four times the threshold
      const data = Buffer.from(new Float32Array(elements).fill(1.5).buffer);
      const { body, headers } = binaryBody(
        {
          inputs: [{ name: "x", datatype: "FP32", shape: [elements], parameters: { binary_data_size: data.length } }],
          parameters: { binary_data_output: true },
        },
        data,
      );
      const binary = await fetch(url, { method: "POST", body, headers });
      expect(binary.status).toBe(200);
      const { binary: outputs } = await readBinaryResponse(binary);
      expect(outputs.get("x")!.equals(data)).toBe(true);
      expect(pool.infers).toBe(0);

      // The same tensor as JSON data: the JSON part is large, so the pool decodes it.
      const json = await fetch(url, {
        method: "POST",
        body: JSON.stringify({
          inputs: [{ name: "x", datatype: "FP32", shape: [elements], data: Array(elements).fill(1.5) }],
        }),
      });
      expect(json.status).toBe(200);
      expect(pool.infers).toBe(1);
    } finally {
      await own.stop(100);
      await pool.close();
    }
  });
});

describe("lifecycle", () => {
  it("binds a free port, takes a raw input shape callback, drains in-flight requests on stop, and stops idempotently", async () => {
    const own = await startHttpFrontend(engine, {
      host: "127.0.0.1",
      port: 0,
      logger,
      rawInputShape: (model, version) => ({ name: `${model}:${version ?? "latest"}`, datatype: "INT32", shape: [-1] }),
    });
    expect(own.port).toBeGreaterThan(0);
    expect(own.port).not.toBe(frontend.port);
    const url = `http://127.0.0.1:${own.port}/v2/models/delay/infer`;

    const raw = await fetch(url, {
      method: "POST",
      body: Buffer.from(new Int32Array([7, 8, 9]).buffer),
      headers: { "Inference-Header-Content-Length": "0" },
    });
    const { json } = await readBinaryResponse(raw);
    expect(json.outputs).toEqual([
      { name: "delay:latest", datatype: "INT32", shape: [3], parameters: { binary_data_size: 12 } },
    ]);

    const inFlight = fetch(url, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "INT8", shape: [1], data: [1] }] }),
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const stopStarted = Date.now();
    const first = own.stop(5000);
    const second = own.stop();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: ResponseOutput[] }).outputs[0]!.data).toEqual([1]);
    await first;
    await second;
    expect(Date.now() - stopStarted).toBeLessThan(2000);
    expect(own.server.listening).toBe(false);
    await expect(fetch(`http://127.0.0.1:${own.port}/v2/health/live`)).rejects.toThrow();
  });
});

// ---------------------------------------------------------------------------
// API keys: a second frontend on the same engine, with an access policy.

describe("API keys", () => {
  const makeKey = (id: string, scopes: ApiKeyScope[], extra: Partial<ApiKeyGrant> = {}) => {
    const { key, prefix, hash } = generateApiKey();
    return {
      key,
      prefix,
      grant: { id, hash, scopes, priorityLevel: 0, qpsQuota: null, expiresAt: null, ...extra } satisfies ApiKeyGrant,
    };
  };
  const inferKey = makeKey("infer-key", ["infer"], { priorityLevel: 2 });
  const lowKey = makeKey("low-key", ["infer"], { priorityLevel: 9 });
  const adminKey = makeKey("admin-key", ["admin"]);
  const limitedKey = makeKey("limited-key", ["infer"], { qpsQuota: 1 });
  const ring = new ApiKeyRing();
  const policy = (requireApiKey: boolean) => new GatewayAccessPolicy({ ring, requireApiKey, loopbackOnly: true });
  let secured: HttpFrontend;
  let open: HttpFrontend;
  const url = (server: HttpFrontend, path: string) => `http://127.0.0.1:${server.port}${path}`;
  const auth = (key: { key: string }) => ({ Authorization: `Bearer ${key.key}` });
  const inferBody = (parameters: Record<string, unknown> = {}) =>
    JSON.stringify({ parameters, inputs: [{ name: "x", datatype: "INT8", shape: [1], data: [1] }] });

  beforeAll(async () => {
    ring.replaceAll([inferKey.grant, lowKey.grant, adminKey.grant, limitedKey.grant]);
    secured = await startHttpFrontend(engine, { host: "127.0.0.1", port: 0, logger, access: policy(true) });
    open = await startHttpFrontend(engine, { host: "127.0.0.1", port: 0, logger, access: policy(false) });
  });
  afterAll(async () => {
    await secured.stop(100);
    await open.stop(100);
  });

  it("answers a request without a key with 401 and WWW-Authenticate: Bearer", async () => {
    const res = await fetch(url(secured, "/v2/models/echo/infer"), { method: "POST", body: inferBody() });
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    await expectError(res, 401, "inference on this server needs an API key (Authorization: Bearer <key>)");
  });

  it("answers 401 for a malformed header and for an unknown key", async () => {
    const malformed = await fetch(url(secured, "/v2/models/echo"), {
      headers: { Authorization: `Basic ${inferKey.key}` },
    });
    await expectError(malformed, 401, "Authorization must be 'Bearer <api key>'");
    const unknown = await fetch(url(secured, "/v2/models/echo"), { headers: auth(makeKey("gone", ["infer"])) });
    expect(unknown.headers.get("www-authenticate")).toBe("Bearer");
    await expectError(unknown, 401, "the API key is not valid (unknown, revoked or expired)");
  });

  it.each([
    ["GET", "/v2/models/echo"],
    ["GET", "/v2/models/echo/versions/1/config"],
    ["GET", "/v2/models/echo/ready"],
    ["GET", "/v2/models/stats"],
    ["GET", "/v2/models/echo/stats"],
    ["POST", "/v2/repository/index"],
    ["GET", "/v2/operators"],
    ["POST", "/v2/models/echo/generate_stream"],
  ])("guards %s %s as inference", async (method, path) => {
    const res = await fetch(url(secured, path), { method, ...(method === "POST" ? { body: "{}" } : {}) });
    expect(res.status).toBe(401);
    const withKey = await fetch(url(secured, path), {
      method,
      headers: auth(inferKey),
      ...(method === "POST" ? { body: "{}" } : {}),
    });
    expect(withKey.status).not.toBe(401);
    expect(withKey.status).not.toBe(403);
  });

  it("keeps health and server metadata open", async () => {
    for (const path of ["/v2/health/live", "/v2/health/ready", "/v2"]) {
      expect((await fetch(url(secured, path))).status).toBe(200);
      // A bad key is not even looked at there: probes never carry one.
      expect((await fetch(url(secured, path), { headers: { Authorization: "Bearer nonsense" } })).status).toBe(200);
    }
  });

  it("answers 403 when an infer key asks for model control, and lets an admin key load", async () => {
    const before = engine.loads.length;
    const res = await fetch(url(secured, "/v2/repository/models/add/load"), {
      method: "POST",
      headers: auth(inferKey),
    });
    await expectError(res, 403, "this API key lacks the 'admin' scope that model control needs");
    for (const [method, path] of [
      ["POST", "/v2/repository/models/add/unload"],
      ["POST", "/v2/operators/pipeline"],
      ["DELETE", "/v2/operators/pipeline"],
      ["POST", "/v2/operators/pipeline/validate"],
      ["GET", "/v2/operon/workers"],
      ["GET", "/v2/operon/scaling"],
      ["GET", "/v2/operon/parked"],
    ] as const) {
      expect(
        (
          await fetch(url(secured, path), {
            method,
            headers: auth(inferKey),
            ...(method === "POST" ? { body: "{}" } : {}),
          })
        ).status,
      ).toBe(403);
    }
    const ok = await fetch(url(secured, "/v2/repository/models/add/load"), { method: "POST", headers: auth(adminKey) });
    expect(ok.status).toBe(200);
    expect(engine.loads.length).toBe(before + 1);
  });

  it("answers 429 when a key is over its quota, naming it by prefix only", async () => {
    const first = await fetch(url(secured, "/v2/models/echo/infer"), {
      method: "POST",
      headers: auth(limitedKey),
      body: inferBody(),
    });
    expect(first.status).toBe(200);
    const second = await fetch(url(secured, "/v2/models/echo/infer"), {
      method: "POST",
      headers: auth(limitedKey),
      body: inferBody(),
    });
    await expectError(second, 429, `API key opk_${limitedKey.prefix}… exceeded its quota of 1 requests/s`);
  });

  it("gives an inference without a priority its key's priority level, capped at the model's levels", async () => {
    await fetch(url(secured, "/v2/models/echo/infer"), { method: "POST", headers: auth(inferKey), body: inferBody() });
    expect(engine.lastRequest?.parameters["priority"]).toBe(2);
    await fetch(url(secured, "/v2/models/echo/infer"), {
      method: "POST",
      headers: auth(inferKey),
      body: inferBody({ priority: 1 }),
    });
    expect(engine.lastRequest?.parameters["priority"]).toBe(1);
    await fetch(url(secured, "/v2/models/ranked/infer"), { method: "POST", headers: auth(lowKey), body: inferBody() });
    expect(engine.lastRequest?.parameters["priority"]).toBe(3);
    await fetch(url(secured, "/v2/models/echo/infer"), { method: "POST", headers: auth(adminKey), body: inferBody() });
    expect(engine.lastRequest?.parameters["priority"]).toBeUndefined();
  });

  it("where keys are not required: anonymous requests pass, a revoked key is refused", async () => {
    const anonymous = await fetch(url(open, "/v2/models/echo/infer"), { method: "POST", body: inferBody() });
    expect(anonymous.status).toBe(200);
    const revoked = makeKey("revoked", ["infer"]);
    ring.replaceAll([...[inferKey, lowKey, adminKey, limitedKey].map((key) => key.grant), revoked.grant]);
    expect(
      (await fetch(url(open, "/v2/models/echo/infer"), { method: "POST", headers: auth(revoked), body: inferBody() }))
        .status,
    ).toBe(200);
    ring.replaceAll([inferKey, lowKey, adminKey, limitedKey].map((key) => key.grant));
    const refused = await fetch(url(open, "/v2/models/echo/infer"), {
      method: "POST",
      headers: auth(revoked),
      body: inferBody(),
    });
    await expectError(refused, 401, "the API key is not valid (unknown, revoked or expired)");
  });

  it("locks model control on a loopback server once the user has an admin key", async () => {
    // The ring holds adminKey: model control needs it even though keys are not required for inference.
    const res = await fetch(url(open, "/v2/repository/models/add/unload"), { method: "POST" });
    await expectError(res, 401, "model control on this server needs an API key (Authorization: Bearer <key>)");
  });

  it("notes the keys' uses for the control plane", async () => {
    ring.drainUsage();
    await fetch(url(secured, "/v2/models/echo"), { headers: auth(inferKey) });
    expect([...ring.drainUsage().keys()]).toEqual(["infer-key"]);
  });
});

describe("Operon admin endpoints", () => {
  it("GET /v2/operon/workers answers the engine's workers", async () => {
    const res = await fetch(`${base}/v2/operon/workers`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      workers: [],
      hostCpuCores: 2,
      gateway: { pid: process.pid, cpuSeconds: 1, rssBytes: 2 },
      gpus: [],
    });
  });

  it("POST /v2/operators/:operator/validate answers { valid, problems } with the path's name", async () => {
    const valid = await post("/v2/operators/pipe/validate", { steps: [{ model: "echo" }] });
    expect(valid.status).toBe(200);
    expect(await valid.json()).toEqual({ valid: true, problems: [] });
    const invalid = await post("/v2/operators/pipe/validate", { steps: [{ model: "missing" }] });
    expect(await invalid.json()).toEqual({
      valid: false,
      problems: [{ code: "unknown-model", message: "unknown model 'missing'" }],
    });
  });

  it("refuses a validate body that is not a spec object, or names another operator", async () => {
    await expectError(
      await post("/v2/operators/pipe/validate", [1]),
      400,
      "the request body must be an operator spec (a JSON object)",
    );
    await expectError(
      await post("/v2/operators/pipe/validate", { name: "other" }),
      400,
      `the spec's name "other" differs from the operator name 'pipe' in the path`,
    );
  });
});
