import http from "node:http";
import { totalmem } from "node:os";
import { gzipSync } from "node:zlib";
import { writeOnnxModel } from "@operon/testing/onnx-model-writer";
import type { DataType } from "@operon/protocol/datatypes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, identityModel, writeModel } from "./support/model-fixtures.js";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * System tests of the KServe v2 HTTP/REST API (plus Triton's binary tensor
 * data, model configuration, statistics, schedule policy and parameters
 * extensions) against the real `operon serve`, driven with fetch and, where
 * fetch cannot (chunked bodies), node:http.
 */

// ---------------------------------------------------------------------------
// The repository
// ---------------------------------------------------------------------------

const ALL_DATATYPES = [
  "BOOL",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "FP16",
  "FP32",
  "FP64",
  "BYTES",
] as const satisfies readonly DataType[];

/** Identity models that get a written config.pbtxt; the rest are auto-completed from the ONNX file. */
const CONFIGURED = new Set<DataType>(["BOOL", "INT64", "UINT64", "FP16", "FP32", "BYTES"]);
const CONFIGURED_MAX_BATCH = 8;
/** What auto-complete gives a model that can batch (--default-max-batch-size default). */
const AUTO_MAX_BATCH = 4;

const identityName = (datatype: DataType): string => `identity_${datatype.toLowerCase()}`;
const configType = (datatype: DataType): string => (datatype === "BYTES" ? "TYPE_STRING" : `TYPE_${datatype}`);

/** BYTES has a variable dim ([-1]); every other identity model is [4]. */
const identityDims = (datatype: DataType): number[] => (datatype === "BYTES" ? [-1] : [4]);

function identityConfig(datatype: DataType): string {
  const dims = identityDims(datatype).join(", ");
  return `
name: "${identityName(datatype)}"
backend: "onnxruntime"
max_batch_size: ${CONFIGURED_MAX_BATCH}
input [ { name: "INPUT0", data_type: ${configType(datatype)}, dims: [ ${dims} ] } ]
output [ { name: "OUTPUT0", data_type: ${configType(datatype)}, dims: [ ${dims} ] } ]
`;
}

const VERSIONED_CONFIG = `
name: "versioned"
backend: "onnxruntime"
max_batch_size: 8
version_policy: { all { } }
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
`;

/** Version 2 of "versioned" negates, so a response tells which version ran. */
function negateModel(): Buffer {
  const value = { name: "", datatype: "FP32" as const, shape: [-1, 4] };
  return writeOnnxModel({
    name: "negate",
    inputs: [{ ...value, name: "INPUT0" }],
    outputs: [{ ...value, name: "OUTPUT0" }],
    nodes: [{ opType: "Neg", inputs: ["INPUT0"], outputs: ["OUTPUT0"], name: "neg" }],
  });
}

/** Used only by the statistics tests, so their counts move by exactly what they send. */
const STATS_CONFIG = `
name: "stats_probe"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_INT32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_INT32, dims: [ 4 ] } ]
`;

function buildMainRepository(): string {
  const repository = tempRepository("operon-e2e-http-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  for (const datatype of ALL_DATATYPES) {
    writeModel(repository, identityName(datatype), identityModel(datatype, identityDims(datatype)), {
      ...(CONFIGURED.has(datatype) ? { config: identityConfig(datatype) } : {}),
    });
  }
  writeModel(repository, "versioned", identityModel("FP32", [4]), { version: 1, config: VERSIONED_CONFIG });
  writeModel(repository, "versioned", negateModel(), { version: 2 });
  writeModel(repository, "stats_probe", identityModel("INT32", [4]), { config: STATS_CONFIG });
  return repository;
}

const SMALL_BODY_LIMIT = 4096;

function buildSmallRepository(): string {
  const repository = tempRepository("operon-e2e-http-small-");
  writeModel(repository, "identity_fp32", identityModel("FP32", [4]), { config: identityConfig("FP32") });
  return repository;
}

// ---------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------

interface OutputJson {
  name: string;
  datatype: string;
  shape: number[];
  data?: unknown[];
  parameters?: Record<string, unknown>;
}

interface InferResponseJson {
  model_name: string;
  model_version: string;
  id?: string;
  parameters?: Record<string, unknown>;
  outputs: OutputJson[];
}

interface DurationStat {
  count: number;
  ns: number;
}

interface ModelStatsJson {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: Record<
    "success" | "fail" | "queue" | "compute_input" | "compute_infer" | "compute_output" | "cache_hit" | "cache_miss",
    DurationStat
  >;
  batch_stats: Array<{
    batch_size: number;
    compute_input: DurationStat;
    compute_infer: DurationStat;
    compute_output: DurationStat;
  }>;
  memory_usage: unknown[];
}

let server: RunningOperon;
let smallServer: RunningOperon;

const url = (path: string): string => `${server.httpUrl}${path}`;
const inferPath = (model: string, version?: string): string =>
  version === undefined ? `/v2/models/${model}/infer` : `/v2/models/${model}/versions/${version}/infer`;

function postJson(path: string, body: unknown, base = server.httpUrl): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function infer(model: string, body: unknown, version?: string): Promise<InferResponseJson> {
  const response = await postJson(inferPath(model, version), body);
  const text = await response.text();
  expect(response.status, text).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  return JSON.parse(text) as InferResponseJson;
}

/** Asserts the status and a `{"error": msg}` body (plus Operon's `"kind"` when the failure has one) whose message contains every fragment. */
async function expectError(
  responseOrPromise: Response | Promise<Response>,
  status: number,
  ...fragments: string[]
): Promise<string> {
  const response = await responseOrPromise;
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/json");
  const body = JSON.parse(text) as { error?: unknown; kind?: unknown };
  expect(Object.keys(body).filter((key) => key !== "kind")).toEqual(["error"]);
  expect(typeof body.error).toBe("string");
  for (const fragment of fragments) expect(body.error).toContain(fragment);
  return body.error as string;
}

/** A binary_tensor_data body: the JSON header, then each buffer in order. */
function binaryBody(header: unknown, ...tensors: Buffer[]): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header), "utf8");
  return {
    body: Buffer.concat([json, ...tensors]),
    headers: { "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": String(json.length) },
  };
}

function postBinary(path: string, header: unknown, ...tensors: Buffer[]): Promise<Response> {
  const { body, headers } = binaryBody(header, ...tensors);
  return fetch(url(path), { method: "POST", headers, body });
}

interface ParsedBinaryResponse {
  json: InferResponseJson;
  /** The binary section of each output sent as binary, by output name. */
  binary: Map<string, Buffer>;
  headerLength: number | undefined;
}

/** Splits a response body by Inference-Header-Content-Length and hands out each output's bytes in JSON order. */
async function parseInferResponse(response: Response): Promise<ParsedBinaryResponse> {
  const body = Buffer.from(await response.arrayBuffer());
  expect(response.status, body.toString("utf8")).toBe(200);
  const header = response.headers.get("inference-header-content-length");
  if (header === null) {
    expect(response.headers.get("content-type")).toBe("application/json");
    return { json: JSON.parse(body.toString("utf8")) as InferResponseJson, binary: new Map(), headerLength: undefined };
  }
  expect(response.headers.get("content-type")).toBe("application/octet-stream");
  expect(Number(response.headers.get("content-length"))).toBe(body.length);
  const headerLength = Number(header);
  const json = JSON.parse(body.subarray(0, headerLength).toString("utf8")) as InferResponseJson;
  const binary = new Map<string, Buffer>();
  let offset = headerLength;
  for (const output of json.outputs) {
    const size = output.parameters?.["binary_data_size"];
    if (size === undefined) continue;
    expect(output.data).toBeUndefined();
    expect(typeof size).toBe("number");
    binary.set(output.name, body.subarray(offset, offset + (size as number)));
    offset += size as number;
  }
  expect(offset).toBe(body.length);
  return { json, binary, headerLength };
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A request through node:http, for what fetch cannot send: a chunked body
 * (no Content-Length; each chunk written separately) or hand-made headers.
 * Resolves on the response even if the server closes while we still write.
 */
function rawRequest(
  base: string,
  options: { method: string; path: string; headers?: http.OutgoingHttpHeaders; chunks?: Buffer[] },
): Promise<RawResponse> {
  const target = new URL(options.path, base);
  return new Promise((resolve, reject) => {
    let answered = false;
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method,
        headers: options.headers ?? {},
        agent: false,
      },
      (response) => {
        answered = true;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", (error) => {
      if (!answered) reject(error);
    });
    for (const chunk of options.chunks ?? []) request.write(chunk);
    request.end();
  });
}

async function getStats(model: string, version?: string): Promise<ModelStatsJson> {
  const path = version === undefined ? `/v2/models/${model}/stats` : `/v2/models/${model}/versions/${version}/stats`;
  const response = await fetch(url(path));
  expect(response.status).toBe(200);
  const body = (await response.json()) as { model_stats: ModelStatsJson[] };
  expect(body.model_stats).toHaveLength(1);
  return body.model_stats[0]!;
}

interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format into samples per metric name. */
async function scrapeMetrics(): Promise<Map<string, Sample[]>> {
  const response = await fetch(server.metricsUrl);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  const samples = new Map<string, Sample[]>();
  for (const line of (await response.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(match, `unparseable metrics line: ${line}`).not.toBeNull();
    const [, name, labelText, value] = match!;
    const labels: Record<string, string> = {};
    for (const label of (labelText ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[label[1]!] = label[2]!;
    const list = samples.get(name!) ?? [];
    list.push({ labels, value: Number(value) });
    samples.set(name!, list);
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels` (undefined if none). */
function metric(samples: Map<string, Sample[]>, name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = (samples.get(name) ?? []).filter((sample) =>
    Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  expect(matching.length, `${name}${JSON.stringify(labels)} matches ${matching.length} samples`).toBeLessThanOrEqual(1);
  return matching[0]?.value;
}

// ---------------------------------------------------------------------------
// Tensor helpers
// ---------------------------------------------------------------------------

const f32 = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
const readF32 = (bytes: Buffer): number[] =>
  Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
const i32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

/** Triton's BYTES layout: per element a little-endian uint32 length, then the bytes. */
function bytesTensor(elements: Buffer[]): Buffer {
  return Buffer.concat(
    elements.flatMap((element) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(element.length);
      return [length, element];
    }),
  );
}

function addSubRequest(a: number[], b: number[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...extra,
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: a },
      { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: b },
    ],
  };
}

const ZEROS_16 = new Array<number>(16).fill(0);
const A16 = range(16, 1);
const B16 = new Array<number>(16).fill(2);

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

beforeAll(async () => {
  // Each assigned as soon as it is up, so afterAll stops it even if the other fails to start.
  const started = await Promise.allSettled([
    startOperon([
      "--model-repository",
      buildMainRepository(),
      "--model-control-mode",
      "explicit",
      "--load-model",
      "*",
    ]).then((running) => (server = running)),
    startOperon(["--model-repository", buildSmallRepository(), "--http-max-body-bytes", String(SMALL_BODY_LIMIT)]).then(
      (running) => (smallServer = running),
    ),
  ]);
  for (const result of started) if (result.status === "rejected") throw result.reason;
});

afterAll(async () => {
  await Promise.all([server?.stop(), smallServer?.stop()]);
});

// ---------------------------------------------------------------------------
// Health and metadata
// ---------------------------------------------------------------------------

describe("health", () => {
  it("answers live and ready with 200 and an empty body", async () => {
    for (const path of ["/v2/health/live", "/v2/health/ready"]) {
      const response = await fetch(url(path));
      expect(response.status, path).toBe(200);
      expect(await response.text()).toBe("");
    }
  });

  it("reports a loaded model ready, with and without a version", async () => {
    for (const path of [
      "/v2/models/add_sub/ready",
      "/v2/models/add_sub/versions/1/ready",
      "/v2/models/versioned/versions/1/ready",
      "/v2/models/versioned/versions/2/ready",
    ]) {
      const response = await fetch(url(path));
      expect(response.status, path).toBe(200);
      expect(await response.text()).toBe("");
    }
  });

  it("reports an unknown model or version not ready (400, as Triton)", async () => {
    for (const path of ["/v2/models/no_such_model/ready", "/v2/models/versioned/versions/3/ready"]) {
      const response = await fetch(url(path));
      expect(response.status, path).toBe(400);
      await response.arrayBuffer();
    }
  });
});

describe("server and model metadata", () => {
  it("lists exactly the implemented extensions", async () => {
    const response = await fetch(url("/v2"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const body = (await response.json()) as { name: string; version: string; extensions: string[] };
    expect(body.name).toBe("operon");
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.extensions).toEqual([
      "binary_tensor_data",
      "model_repository",
      "model_configuration",
      "statistics",
      "schedule_policy",
      "parameters",
      "sequence",
      "sequence(string_id)",
      "system_shared_memory",
      "logging",
      "trace",
    ]);
  });

  it("describes add_sub with its batch dimension as -1", async () => {
    const response = await fetch(url("/v2/models/add_sub"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      name: "add_sub",
      versions: ["1"],
      platform: "onnxruntime_onnx",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
      ],
      outputs: [
        { name: "OUTPUT0", datatype: "FP32", shape: [-1, 16] },
        { name: "OUTPUT1", datatype: "FP32", shape: [-1, 16] },
      ],
    });
  });

  it("describes every identity model with its wire datatype (TYPE_STRING is BYTES)", async () => {
    for (const datatype of ALL_DATATYPES) {
      const response = await fetch(url(`/v2/models/${identityName(datatype)}`));
      expect(response.status, datatype).toBe(200);
      const body = (await response.json()) as { inputs: OutputJson[]; outputs: OutputJson[] };
      const shape = [-1, ...identityDims(datatype)];
      expect(body.inputs, datatype).toEqual([{ name: "INPUT0", datatype, shape }]);
      expect(body.outputs, datatype).toEqual([{ name: "OUTPUT0", datatype, shape }]);
    }
  });

  it("serves metadata per version and lists all served versions", async () => {
    const latest = (await (await fetch(url("/v2/models/versioned"))).json()) as { versions: string[] };
    expect(latest.versions).toEqual(["1", "2"]);
    for (const version of ["1", "2"]) {
      const response = await fetch(url(`/v2/models/versioned/versions/${version}`));
      expect(response.status).toBe(200);
      const body = (await response.json()) as { name: string; versions: string[]; inputs: OutputJson[] };
      expect(body.name).toBe("versioned");
      expect(body.versions).toEqual(["1", "2"]);
      expect(body.inputs).toEqual([{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }]);
    }
  });

  it("answers 404 naming an unknown model or version", async () => {
    await expectError(fetch(url("/v2/models/no_such_model")), 404, "'no_such_model'", "not found");
    await expectError(fetch(url("/v2/models/versioned/versions/3")), 404, "'versioned'", "version 3", "not found");
    await expectError(fetch(url("/v2/models/no_such_model/config")), 404, "'no_such_model'");
    await expectError(fetch(url("/v2/models/versioned/versions/3/config")), 404, "version 3");
  });
});

describe("model configuration extension", () => {
  it("returns add_sub's config in Triton's JSON shape", async () => {
    const response = await fetch(url("/v2/models/add_sub/config"));
    expect(response.status).toBe(200);
    const config = (await response.json()) as Record<string, unknown>;
    expect(config).toMatchObject({
      name: "add_sub",
      backend: "onnxruntime",
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      input: [
        { name: "INPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "INPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      output: [
        { name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "OUTPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
      version_policy: { latest: { num_versions: 1 } },
    });
    expect((config["instance_group"] as Array<{ name: string }>)[0]!.name).toBe("add_sub");
  });

  it("auto-completes a model without config.pbtxt from its ONNX file", async () => {
    for (const datatype of ALL_DATATYPES.filter((type) => !CONFIGURED.has(type))) {
      const config = (await (await fetch(url(`/v2/models/${identityName(datatype)}/config`))).json()) as Record<
        string,
        unknown
      >;
      expect(config, datatype).toMatchObject({
        name: identityName(datatype),
        backend: "onnxruntime",
        max_batch_size: AUTO_MAX_BATCH,
        input: [{ name: "INPUT0", data_type: configType(datatype), dims: [4] }],
        output: [{ name: "OUTPUT0", data_type: configType(datatype), dims: [4] }],
        instance_group: [{ kind: "KIND_CPU", count: 1 }],
      });
    }
  });

  it("names BYTES tensors TYPE_STRING and serves the config per version", async () => {
    const bytes = (await (await fetch(url("/v2/models/identity_bytes/config"))).json()) as {
      input: Array<{ data_type: string; dims: number[] }>;
    };
    expect(bytes.input[0]).toMatchObject({ data_type: "TYPE_STRING", dims: [-1] });
    const response = await fetch(url("/v2/models/versioned/versions/1/config"));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: "versioned", max_batch_size: 8, version_policy: { all: {} } });
  });
});

// ---------------------------------------------------------------------------
// Inference, JSON
// ---------------------------------------------------------------------------

/** Per datatype: JSON values that must come back exactly, including each type's extremes. */
const JSON_VALUES: Record<Exclude<(typeof ALL_DATATYPES)[number], "FP16">, unknown[]> = {
  BOOL: [true, false, false, true],
  INT8: [-128, -1, 0, 127],
  INT16: [-32768, -1, 1, 32767],
  INT32: [-2147483648, -7, 7, 2147483647],
  INT64: [-(2 ** 53) + 1, -1, 0, 2 ** 53 - 1],
  UINT8: [0, 1, 128, 255],
  UINT16: [0, 1, 32768, 65535],
  UINT32: [0, 1, 2147483648, 4294967295],
  UINT64: [0, 1, 2 ** 32, 2 ** 53 - 1],
  // Exactly representable in float32, so they survive the round trip bit for bit.
  FP32: [0.5, -1.25, 3.4028234663852886e38, 1.401298464324817e-45],
  FP64: [0.1, -2.5, 1.7976931348623157e308, 5e-324],
  BYTES: ["", "hello", "ünïcødé ✓", "tab\tand\nnewline"],
};

describe("infer with JSON tensors", () => {
  for (const [datatype, values] of Object.entries(JSON_VALUES) as Array<[DataType, unknown[]]>) {
    it(`round-trips ${datatype} values exactly`, async () => {
      const body = await infer(identityName(datatype), {
        inputs: [{ name: "INPUT0", datatype, shape: [1, values.length], data: values }],
      });
      expect(body).toEqual({
        model_name: identityName(datatype),
        model_version: "1",
        outputs: [{ name: "OUTPUT0", datatype, shape: [1, values.length], data: values }],
      });
    });
  }

  it("takes INT64/UINT64 beyond 2^53 as decimal strings and answers with every digit", async () => {
    for (const [datatype, values, expected] of [
      [
        "INT64",
        ["9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993"],
        "[9223372036854775807,-9223372036854775808,9007199254740993,-9007199254740993]",
      ],
      [
        "UINT64",
        ["18446744073709551615", "9007199254740993", "0", "12345678901234567890"],
        "[18446744073709551615,9007199254740993,0,12345678901234567890]",
      ],
    ] as const) {
      const response = await postJson(inferPath(identityName(datatype)), {
        inputs: [{ name: "INPUT0", datatype, shape: [1, 4], data: values }],
      });
      const text = await response.text();
      expect(response.status, text).toBe(200);
      // JSON.parse would round these; the digits on the wire are what matters.
      expect(text).toContain(`"data":${expected}`);
    }
  });

  it("refuses an INT64 number past 2^53, which JSON may already have rounded", async () => {
    await expectError(
      postJson(
        inferPath("identity_int64"),
        '{"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[1,4],"data":[9007199254740993,0,0,0]}]}',
      ),
      400,
      "INPUT0",
      "decimal string",
    );
  });

  it("refuses FP16 as JSON, naming binary data as the way", async () => {
    await expectError(
      postJson(inferPath("identity_fp16"), {
        inputs: [{ name: "INPUT0", datatype: "FP16", shape: [1, 4], data: [1, 2, 3, 4] }],
      }),
      400,
      "INPUT0",
      "FP16",
      "binary",
    );
  });

  it("accepts nested and flat data alike and answers flat", async () => {
    const flat = await infer("identity_int32", {
      inputs: [{ name: "INPUT0", datatype: "INT32", shape: [2, 4], data: range(8) }],
    });
    const nested = await infer("identity_int32", {
      inputs: [
        {
          name: "INPUT0",
          datatype: "INT32",
          shape: [2, 4],
          data: [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
          ],
        },
      ],
    });
    expect(flat.outputs).toEqual([{ name: "OUTPUT0", datatype: "INT32", shape: [2, 4], data: range(8) }]);
    expect(nested.outputs).toEqual(flat.outputs);
  });

  it("computes add_sub: OUTPUT0 = a + b, OUTPUT1 = a - b", async () => {
    const body = await infer("add_sub", addSubRequest(A16, B16));
    expect(body.model_name).toBe("add_sub");
    expect(body.model_version).toBe("1");
    expect(body.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 16], data: A16.map((a) => a + 2) },
      { name: "OUTPUT1", datatype: "FP32", shape: [1, 16], data: A16.map((a) => a - 2) },
    ]);
  });

  it("runs a batch of several rows", async () => {
    const a = range(48);
    const body = await infer("add_sub", {
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [3, 16], data: a },
        { name: "INPUT1", datatype: "FP32", shape: [3, 16], data: a },
      ],
    });
    expect(body.outputs.map((output) => [output.name, output.shape])).toEqual([
      ["OUTPUT0", [3, 16]],
      ["OUTPUT1", [3, 16]],
    ]);
    expect(body.outputs[0]!.data).toEqual(a.map((x) => 2 * x));
    expect(body.outputs[1]!.data).toEqual(new Array(48).fill(0));
  });

  it("echoes the request id, and leaves it out when none was sent", async () => {
    const withId = await infer("add_sub", addSubRequest(A16, B16, { id: "request-42 ✓" }));
    expect(withId.id).toBe("request-42 ✓");
    const withoutId = await infer("add_sub", addSubRequest(A16, B16));
    expect(withoutId).not.toHaveProperty("id");
  });

  it("returns only the requested outputs", async () => {
    const one = await infer("add_sub", addSubRequest(A16, B16, { outputs: [{ name: "OUTPUT1" }] }));
    expect(one.outputs).toEqual([{ name: "OUTPUT1", datatype: "FP32", shape: [1, 16], data: A16.map((a) => a - 2) }]);
    const both = await infer(
      "add_sub",
      addSubRequest(A16, B16, { outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1" }] }),
    );
    expect(both.outputs.map((output) => output.name).sort()).toEqual(["OUTPUT0", "OUTPUT1"]);
    const empty = await infer("add_sub", addSubRequest(A16, B16, { outputs: [] }));
    expect(empty.outputs.map((output) => output.name).sort()).toEqual(["OUTPUT0", "OUTPUT1"]);
  });

  it("accepts custom parameters and the schedule_policy keys (priority, timeout)", async () => {
    const body = await infer(
      "add_sub",
      addSubRequest(A16, B16, {
        id: "with-parameters",
        parameters: { my_string: "value", my_number: 3, my_flag: true, priority: 1, timeout: 5_000_000 },
      }),
    );
    expect(body.id).toBe("with-parameters");
    expect(body.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
    // Input and output parameters are accepted too.
    const perTensor = await infer("identity_int32", {
      parameters: { priority: 0 },
      inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 4], data: [1, 2, 3, 4], parameters: { note: "x" } }],
      outputs: [{ name: "OUTPUT0", parameters: { note: "y" } }],
    });
    expect(perTensor.outputs[0]!.data).toEqual([1, 2, 3, 4]);
  });

  it("refuses schedule_policy values that are not unsigned integers, as Triton does", async () => {
    for (const [key, value] of [
      ["priority", "high"],
      ["priority", -1],
      ["priority", 1.5],
      ["timeout", -5],
      ["timeout", true],
    ] as const) {
      await expectError(
        postJson(inferPath("add_sub"), addSubRequest(A16, B16, { parameters: { [key]: value } })),
        400,
        `parameters.${key}`,
        "non-negative integer",
      );
    }
  });

  it("refuses parameter keys starting with 'triton_' (reserved)", async () => {
    await expectError(
      postJson(
        inferPath("add_sub"),
        addSubRequest(A16, B16, { parameters: { triton_enable_empty_final_response: true } }),
      ),
      400,
      "'triton_'",
      "reserved",
    );
  });

  it("refuses a parameter value that is not a string, number or boolean", async () => {
    await expectError(
      postJson(inferPath("add_sub"), addSubRequest(A16, B16, { parameters: { nested: { a: 1 } } })),
      400,
      "parameters.nested",
    );
  });

  it("serves versioned routes: each version by number, the highest without one", async () => {
    const input = { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, -2, 3, -4] }] };
    const v1 = await infer("versioned", input, "1");
    expect(v1.model_version).toBe("1");
    expect(v1.outputs[0]!.data).toEqual([1, -2, 3, -4]);
    const v2 = await infer("versioned", input, "2");
    expect(v2.model_version).toBe("2");
    expect(v2.outputs[0]!.data).toEqual([-1, 2, -3, 4]);
    const latest = await infer("versioned", input);
    expect(latest.model_version).toBe("2");
    expect(latest.outputs[0]!.data).toEqual([-1, 2, -3, 4]);
  });

  it("reads a chunked request body (no Content-Length)", async () => {
    const json = Buffer.from(JSON.stringify(addSubRequest(A16, B16, { id: "chunked" })));
    const response = await rawRequest(server.httpUrl, {
      method: "POST",
      path: inferPath("add_sub"),
      headers: { "Content-Type": "application/json" },
      chunks: [json.subarray(0, 10), json.subarray(10, 50), json.subarray(50)],
    });
    expect(response.status, response.body.toString()).toBe(200);
    const body = JSON.parse(response.body.toString()) as InferResponseJson;
    expect(body.id).toBe("chunked");
    expect(body.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
  });

  it("reads a gzip-compressed request body", async () => {
    const response = await fetch(url(inferPath("add_sub")), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" },
      body: gzipSync(JSON.stringify(addSubRequest(A16, B16))),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as InferResponseJson).outputs[1]!.data).toEqual(A16.map((a) => a - 2));
  });
});

// ---------------------------------------------------------------------------
// Inference, binary tensor data extension
// ---------------------------------------------------------------------------

describe("binary_tensor_data extension", () => {
  it("takes binary inputs after the JSON header and answers JSON by default", async () => {
    const response = await postBinary(
      inferPath("add_sub"),
      {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
        ],
      },
      f32(A16),
      f32(B16),
    );
    const { json, binary, headerLength } = await parseInferResponse(response);
    expect(headerLength).toBeUndefined();
    expect(binary.size).toBe(0);
    expect(json.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
    expect(json.outputs[1]!.data).toEqual(A16.map((a) => a - 2));
  });

  it("mixes a JSON-data input with a binary one", async () => {
    const response = await postBinary(
      inferPath("add_sub"),
      {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: A16 },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
        ],
      },
      f32(B16),
    );
    const { json } = await parseInferResponse(response);
    expect(json.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
  });

  it("answers every output as binary with binary_data_output, bytes checked", async () => {
    const response = await postBinary(
      inferPath("add_sub"),
      {
        id: "all-binary",
        parameters: { binary_data_output: true },
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
        ],
      },
      f32(A16),
      f32(B16),
    );
    const { json, binary, headerLength } = await parseInferResponse(response);
    expect(headerLength).toBeGreaterThan(0);
    expect(json.id).toBe("all-binary");
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
      { name: "OUTPUT1", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
    ]);
    expect(binary.get("OUTPUT0")!.equals(f32(A16.map((a) => a + 2)))).toBe(true);
    expect(binary.get("OUTPUT1")!.equals(f32(A16.map((a) => a - 2)))).toBe(true);
  });

  it("lets a per-output binary_data override the request-level default, both ways", async () => {
    // Request says binary; OUTPUT1 asks for JSON.
    const first = await parseInferResponse(
      await postJson(
        inferPath("add_sub"),
        addSubRequest(A16, B16, {
          parameters: { binary_data_output: true },
          outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1", parameters: { binary_data: false } }],
        }),
      ),
    );
    expect(first.json.outputs.find((o) => o.name === "OUTPUT0")).toEqual({
      name: "OUTPUT0",
      datatype: "FP32",
      shape: [1, 16],
      parameters: { binary_data_size: 64 },
    });
    expect(first.json.outputs.find((o) => o.name === "OUTPUT1")).toEqual({
      name: "OUTPUT1",
      datatype: "FP32",
      shape: [1, 16],
      data: A16.map((a) => a - 2),
    });
    expect(readF32(first.binary.get("OUTPUT0")!)).toEqual(A16.map((a) => a + 2));
    expect([...first.binary.keys()]).toEqual(["OUTPUT0"]);

    // Request says JSON (default); OUTPUT1 asks for binary.
    const second = await parseInferResponse(
      await postJson(
        inferPath("add_sub"),
        addSubRequest(A16, B16, {
          outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1", parameters: { binary_data: true } }],
        }),
      ),
    );
    expect(second.json.outputs.find((o) => o.name === "OUTPUT0")!.data).toEqual(A16.map((a) => a + 2));
    expect([...second.binary.keys()]).toEqual(["OUTPUT1"]);
    expect(readF32(second.binary.get("OUTPUT1")!)).toEqual(A16.map((a) => a - 2));
  });

  it("writes binary outputs in the order the JSON lists them, requested order included", async () => {
    const { json, binary } = await parseInferResponse(
      await postJson(
        inferPath("add_sub"),
        addSubRequest(A16, B16, {
          parameters: { binary_data_output: true },
          outputs: [{ name: "OUTPUT1" }, { name: "OUTPUT0" }],
        }),
      ),
    );
    expect(json.outputs.map((output) => output.name).sort()).toEqual(["OUTPUT0", "OUTPUT1"]);
    // parseInferResponse hands out the bytes in JSON order: each name must get its own values.
    expect(readF32(binary.get("OUTPUT0")!)).toEqual(A16.map((a) => a + 2));
    expect(readF32(binary.get("OUTPUT1")!)).toEqual(A16.map((a) => a - 2));
  });

  it("accepts an Inference-Header-Content-Length covering the whole body (no binary section)", async () => {
    const response = await postBinary(inferPath("add_sub"), addSubRequest(A16, B16, { id: "header-only" }));
    const { json } = await parseInferResponse(response);
    expect(json.id).toBe("header-only");
    expect(json.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
  });

  it("sends only the one requested output as binary", async () => {
    const { json, binary } = await parseInferResponse(
      await postJson(
        inferPath("add_sub"),
        addSubRequest(A16, B16, { outputs: [{ name: "OUTPUT1", parameters: { binary_data: true } }] }),
      ),
    );
    expect(json.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
    expect(readF32(binary.get("OUTPUT1")!)).toEqual(A16.map((a) => a - 2));
  });

  it("carries FP16 through binary data bit for bit", async () => {
    // 1.0, -2.5, 65504 (largest half), 2^-24 (smallest subnormal), 2^-14, -0, +inf, NaN
    const halves = [0x3c00, 0xc100, 0x7bff, 0x0001, 0x0400, 0x8000, 0x7c00, 0x7e00];
    const bytes = Buffer.from(new Uint16Array(halves).buffer);
    const { json, binary } = await parseInferResponse(
      await postBinary(
        inferPath("identity_fp16"),
        {
          parameters: { binary_data_output: true },
          inputs: [{ name: "INPUT0", datatype: "FP16", shape: [2, 4], parameters: { binary_data_size: bytes.length } }],
        },
        bytes,
      ),
    );
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP16", shape: [2, 4], parameters: { binary_data_size: 16 } },
    ]);
    expect(binary.get("OUTPUT0")!.equals(bytes)).toBe(true);
  });

  it("carries every fixed-size datatype through binary data unchanged", async () => {
    for (const datatype of ALL_DATATYPES.filter((type) => type !== "BYTES")) {
      const size = {
        BOOL: 1,
        INT8: 1,
        UINT8: 1,
        INT16: 2,
        UINT16: 2,
        FP16: 2,
        INT32: 4,
        UINT32: 4,
        FP32: 4,
        INT64: 8,
        UINT64: 8,
        FP64: 8,
      }[datatype];
      // Distinct, valid bytes per element (BOOL must be 0 or 1).
      const bytes = Buffer.from(range(4 * size, 1).map((i) => (datatype === "BOOL" ? i % 2 : (i * 37) & 0x7f)));
      const { json, binary } = await parseInferResponse(
        await postBinary(
          inferPath(identityName(datatype)),
          {
            inputs: [{ name: "INPUT0", datatype, shape: [1, 4], parameters: { binary_data_size: bytes.length } }],
            outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
          },
          bytes,
        ),
      );
      expect(json.outputs[0], datatype).toMatchObject({
        datatype,
        shape: [1, 4],
        parameters: { binary_data_size: bytes.length },
      });
      expect(binary.get("OUTPUT0")!.equals(bytes), datatype).toBe(true);
    }
  });

  it("carries BYTES in Triton's length-prefixed layout", async () => {
    const elements = [Buffer.from("hello"), Buffer.alloc(0), Buffer.from("x".repeat(300)), Buffer.from("ünï ✓")];
    const tensor = bytesTensor(elements);
    const { json, binary } = await parseInferResponse(
      await postBinary(
        inferPath("identity_bytes"),
        {
          parameters: { binary_data_output: true },
          inputs: [
            { name: "INPUT0", datatype: "BYTES", shape: [1, 4], parameters: { binary_data_size: tensor.length } },
          ],
        },
        tensor,
      ),
    );
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "BYTES", shape: [1, 4], parameters: { binary_data_size: tensor.length } },
    ]);
    expect(binary.get("OUTPUT0")!.equals(tensor)).toBe(true);

    // The same binary input answered as JSON strings.
    const asJson = await parseInferResponse(
      await postBinary(
        inferPath("identity_bytes"),
        { inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2], parameters: { binary_data_size: 17 } }] },
        bytesTensor([Buffer.from("abc"), Buffer.from("defghi")]),
      ),
    );
    expect(asJson.json.outputs[0]!.data).toEqual(["abc", "defghi"]);
  });

  it("carries a multi-megabyte BYTES tensor", async () => {
    const elements = range(4).map((i) => Buffer.alloc(1024 * 1024 + i, String.fromCharCode(0x61 + i)));
    const tensor = bytesTensor(elements);
    const { json, binary } = await parseInferResponse(
      await postBinary(
        inferPath("identity_bytes"),
        {
          parameters: { binary_data_output: true },
          inputs: [
            { name: "INPUT0", datatype: "BYTES", shape: [2, 2], parameters: { binary_data_size: tensor.length } },
          ],
        },
        tensor,
      ),
    );
    expect(json.outputs[0]).toMatchObject({ shape: [2, 2], parameters: { binary_data_size: tensor.length } });
    expect(binary.get("OUTPUT0")!.equals(tensor)).toBe(true);
  });

  it("refuses BYTES the onnxruntime backend cannot pass on (NUL, invalid UTF-8), naming the element", async () => {
    for (const [bad, problem] of [
      [Buffer.from([0x61, 0x00, 0x62]), "NUL"],
      [Buffer.from([0xff, 0xfe]), "UTF-8"],
    ] as const) {
      const tensor = bytesTensor([Buffer.from("ok"), bad]);
      await expectError(
        postBinary(
          inferPath("identity_bytes"),
          {
            inputs: [
              { name: "INPUT0", datatype: "BYTES", shape: [1, 2], parameters: { binary_data_size: tensor.length } },
            ],
          },
          tensor,
        ),
        400,
        "'INPUT0'",
        "element 1",
        problem,
      );
    }
  });

  it("refuses a BYTES element whose length prefix runs past its data", async () => {
    const tensor = Buffer.concat([Buffer.from([10, 0, 0, 0]), Buffer.from("abc")]);
    await expectError(
      postBinary(
        inferPath("identity_bytes"),
        {
          inputs: [
            { name: "INPUT0", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: tensor.length } },
          ],
        },
        tensor,
      ),
      400,
      "INPUT0",
    );
  });

  it("serves a raw binary request (Inference-Header-Content-Length: 0) on a single-input model as batch 1", async () => {
    const data = f32([1.5, -2.25, 1e30, 7]);
    const response = await fetch(url(inferPath("identity_fp32")), {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "0" },
      body: data,
    });
    const { json, binary } = await parseInferResponse(response);
    expect(json.model_name).toBe("identity_fp32");
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 4], parameters: { binary_data_size: 16 } },
    ]);
    expect(binary.get("OUTPUT0")!.equals(data)).toBe(true);
  });

  it("refuses a raw binary request for a model with two inputs, or of the wrong size", async () => {
    await expectError(
      fetch(url(inferPath("add_sub")), {
        method: "POST",
        headers: { "Inference-Header-Content-Length": "0" },
        body: f32(A16),
      }),
      400,
      "exactly one input",
      "'add_sub'",
    );
    await expectError(
      fetch(url(inferPath("identity_fp32")), {
        method: "POST",
        headers: { "Inference-Header-Content-Length": "0" },
        body: f32([1, 2, 3]),
      }),
      400,
      "INPUT0",
      "16 bytes",
    );
  });
});

// ---------------------------------------------------------------------------
// Bad requests
// ---------------------------------------------------------------------------

describe("bad requests", () => {
  const addSubPath = inferPath("add_sub");
  const input0 = { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: ZEROS_16 };
  const input1 = { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: ZEROS_16 };

  it("malformed JSON → 400", async () => {
    await expectError(postJson(addSubPath, '{"inputs": ['), 400, "malformed JSON");
  });

  it("an empty body → 400", async () => {
    await expectError(postJson(addSubPath, ""), 400, "empty");
  });

  it("a body that is not an object, or inputs that is not an array → 400 naming the field", async () => {
    await expectError(postJson(addSubPath, "[1,2]"), 400, "request body", "JSON object");
    await expectError(postJson(addSubPath, { inputs: { INPUT0: [] } }), 400, "'inputs'", "array");
    await expectError(postJson(addSubPath, {}), 400, "'inputs'", "array");
  });

  it("an input without name, datatype or shape → 400 naming the field", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ datatype: "FP32", shape: [1, 16], data: ZEROS_16 }, input1] }),
      400,
      "inputs[0].name",
    );
    await expectError(
      postJson(addSubPath, { inputs: [input0, { name: "INPUT1", shape: [1, 16], data: ZEROS_16 }] }),
      400,
      "inputs[1].datatype",
    );
    await expectError(
      postJson(addSubPath, { inputs: [{ name: "INPUT0", datatype: "FP32", data: ZEROS_16 }, input1] }),
      400,
      "inputs[0].shape",
    );
    await expectError(
      postJson(addSubPath, { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16] }, input1] }),
      400,
      "inputs[0].data",
    );
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, shape: [1, -16] }, input1] }),
      400,
      "inputs[0].shape",
    );
  });

  it("an unknown datatype → 400 naming it", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, datatype: "FLOAT32" }, input1] }),
      400,
      "inputs[0].datatype",
      "'FLOAT32'",
    );
  });

  it("a datatype the model does not take → 400 naming input, sent and expected types", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, datatype: "INT32" }, input1] }),
      400,
      "'INPUT0'",
      "'INT32'",
      "'FP32'",
    );
  });

  it("a wrong shape → 400 naming the expected and sent shapes", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, shape: [2, 8] }, input1] }),
      400,
      "'INPUT0'",
      "[-1,16]",
      "[2,8]",
    );
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, shape: [1, 16, 1] }, input1] }),
      400,
      "'INPUT0'",
      "[1,16,1]",
    );
  });

  it("a data length that does not match the shape → 400 naming the counts", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, data: [1, 2, 3] }, input1] }),
      400,
      "'INPUT0'",
      "16 elements",
      "got 3",
    );
  });

  it("data of the wrong JSON type or out of range → 400 naming the element", async () => {
    await expectError(
      postJson(inferPath("identity_uint8"), {
        inputs: [{ name: "INPUT0", datatype: "UINT8", shape: [1, 4], data: [1, 2, 256, 3] }],
      }),
      400,
      "element 2",
      "UINT8",
    );
    await expectError(
      postJson(inferPath("identity_bool"), {
        inputs: [{ name: "INPUT0", datatype: "BOOL", shape: [1, 4], data: [true, 1, false, true] }],
      }),
      400,
      "element 1",
      "BOOL",
    );
  });

  it("a missing input → 400 naming it", async () => {
    await expectError(postJson(addSubPath, { inputs: [input0] }), 400, "missing", "'INPUT1'");
  });

  it("an extra, unknown input → 400 naming it", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [input0, input1, { ...input0, name: "INPUT2" }] }),
      400,
      "'INPUT2'",
      "'add_sub'",
    );
  });

  it("the same input twice → 400 naming it", async () => {
    await expectError(postJson(addSubPath, { inputs: [input0, input0] }), 400, "'INPUT0'", "more than once");
  });

  it("a batch above max_batch_size → 400 naming the limit", async () => {
    const nine = new Array<number>(9 * 16).fill(0);
    await expectError(
      postJson(addSubPath, {
        inputs: [
          { ...input0, shape: [9, 16], data: nine },
          { ...input1, shape: [9, 16], data: nine },
        ],
      }),
      400,
      "batch-size must be <= 8",
      "'add_sub'",
    );
    await expectError(
      postJson(inferPath("identity_int32"), {
        inputs: [{ name: "INPUT0", datatype: "INT32", shape: [5, 4], data: range(20) }],
      }),
      400,
      `<= ${AUTO_MAX_BATCH}`,
    );
  });

  it("inputs that disagree on the batch size → 400", async () => {
    await expectError(
      postJson(addSubPath, { inputs: [{ ...input0, shape: [2, 16], data: [...ZEROS_16, ...ZEROS_16] }, input1] }),
      400,
      "batch size",
    );
  });

  it("binary_data_size larger than the binary data sent → 400 naming the input", async () => {
    await expectError(
      postBinary(
        addSubPath,
        {
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          ],
        },
        f32(A16),
        f32(B16).subarray(0, 32),
      ),
      400,
      "'INPUT1'",
      "binary_data_size is 64",
      "only 32 bytes",
    );
  });

  it("binary_data_size that disagrees with the shape → 400", async () => {
    await expectError(
      postBinary(
        addSubPath,
        {
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 60 } },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: B16 },
          ],
        },
        f32(A16).subarray(0, 60),
      ),
      400,
      "'INPUT0'",
      "64 bytes",
    );
  });

  it("binary data left over after every input → 400", async () => {
    await expectError(
      postBinary(
        addSubPath,
        {
          inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } }, input1],
        },
        f32(A16),
        Buffer.alloc(8),
      ),
      400,
      "8 unexpected bytes",
    );
  });

  it("binary_data_size without the Inference-Header-Content-Length header → 400 naming the header", async () => {
    await expectError(
      postJson(addSubPath, {
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } }, input1],
      }),
      400,
      "Inference-Header-Content-Length",
    );
  });

  it("Inference-Header-Content-Length larger than the body → 400", async () => {
    const json = JSON.stringify(addSubRequest(ZEROS_16, ZEROS_16));
    await expectError(
      fetch(url(addSubPath), {
        method: "POST",
        headers: { "Inference-Header-Content-Length": String(json.length + 100) },
        body: json,
      }),
      400,
      "Inference-Header-Content-Length",
      "exceeds",
    );
  });

  it("Inference-Header-Content-Length shorter than the JSON → 400 malformed JSON", async () => {
    const { body } = binaryBody(addSubRequest(ZEROS_16, ZEROS_16));
    await expectError(
      fetch(url(addSubPath), { method: "POST", headers: { "Inference-Header-Content-Length": "20" }, body }),
      400,
      "malformed JSON",
    );
  });

  it("an Inference-Header-Content-Length that is not a number → 400", async () => {
    await expectError(
      fetch(url(addSubPath), { method: "POST", headers: { "Inference-Header-Content-Length": "ten" }, body: "{}" }),
      400,
      "Inference-Header-Content-Length",
      "'ten'",
    );
  });

  it("an unknown requested output → 400 naming it", async () => {
    await expectError(
      postJson(addSubPath, addSubRequest(A16, B16, { outputs: [{ name: "OUTPUT9" }] })),
      400,
      "'OUTPUT9'",
      "'add_sub'",
    );
  });

  it("infer on an unknown model or version → 404 naming it", async () => {
    await expectError(
      postJson(inferPath("no_such_model"), addSubRequest(A16, B16)),
      404,
      "'no_such_model'",
      "not found",
    );
    await expectError(postJson(inferPath("add_sub", "2"), addSubRequest(A16, B16)), 404, "'add_sub'", "version 2");
    await expectError(
      postJson(inferPath("versioned", "9"), {
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
      }),
      404,
      "version 9",
    );
  });

  it("an unsupported Content-Encoding → 501", async () => {
    await expectError(
      fetch(url(addSubPath), { method: "POST", headers: { "Content-Encoding": "br" }, body: "{}" }),
      501,
      "Content-Encoding",
      "'br'",
    );
  });

  it("a wrong method → 405 with Allow", async () => {
    const infer405 = await fetch(url(addSubPath));
    expect(infer405.headers.get("allow")).toBe("POST");
    await expectError(infer405, 405, "GET", "POST");
    const ready405 = await fetch(url("/v2/health/ready"), { method: "DELETE" });
    expect(ready405.headers.get("allow")).toBe("GET");
    await expectError(ready405, 405, "DELETE");
    await expectError(fetch(url("/v2"), { method: "POST", body: "{}" }), 405, "POST");
  });

  it("an unknown path → 404 naming it", async () => {
    await expectError(fetch(url("/v2/nothing/here")), 404, "'/v2/nothing/here'");
    await expectError(fetch(url("/v1/models")), 404, "'/v1/models'");
    await expectError(fetch(url("/v2/models/add_sub/versions/1/bogus")), 404, "bogus");
  });

  it("leaves the server live, ready and serving after all of them", async () => {
    expect((await fetch(url("/v2/health/live"))).status).toBe(200);
    expect((await fetch(url("/v2/health/ready"))).status).toBe(200);
    expect((await fetch(url("/v2/models/add_sub/ready"))).status).toBe(200);
    const body = await infer("add_sub", addSubRequest(A16, B16));
    expect(body.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
    expect(server.process.exitCode).toBeNull();
  });
});

describe("request body limit (--http-max-body-bytes 4096)", () => {
  const smallInfer = (): string => `${smallServer.httpUrl}${inferPath("identity_fp32")}`;

  it("serves a request under the limit", async () => {
    const response = await fetch(smallInfer(), {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as InferResponseJson).outputs[0]!.data).toEqual([1, 2, 3, 4]);
  });

  it("refuses an 8 KB body with a Content-Length → 413 naming the limit", async () => {
    const padding = " ".repeat(8192);
    await expectError(
      fetch(smallInfer(), {
        method: "POST",
        body: `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}${padding}`,
      }),
      413,
      "8",
      "4096 bytes",
    );
  });

  it("refuses an 8 KB chunked body → 413 naming the limit", async () => {
    const response = await rawRequest(smallServer.httpUrl, {
      method: "POST",
      path: inferPath("identity_fp32"),
      headers: { "Content-Type": "application/json" },
      chunks: [Buffer.alloc(8192, 0x20)],
    });
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body.toString()).error).toContain("limit of 4096 bytes");
  });

  it("refuses an oversized upload announced with Expect: 100-continue before the body is sent", async () => {
    const target = new URL(inferPath("identity_fp32"), smallServer.httpUrl);
    const result = await new Promise<{ status: number; continued: boolean; body: string }>((resolve, reject) => {
      let continued = false;
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          agent: false,
          headers: { "Content-Type": "application/json", "Content-Length": 8192, Expect: "100-continue" },
        },
        (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (body += chunk));
          response.on("end", () => {
            resolve({ status: response.statusCode ?? 0, continued, body });
            request.destroy();
          });
        },
      );
      request.on("continue", () => {
        continued = true;
        request.end(Buffer.alloc(8192, 0x20));
      });
      request.on("error", reject);
      request.flushHeaders();
    });
    expect(result.status).toBe(413);
    expect(result.continued).toBe(false);
    expect(JSON.parse(result.body).error).toContain("limit of 4096 bytes");
  });

  it("stays ready afterwards", async () => {
    expect((await fetch(`${smallServer.httpUrl}/v2/health/ready`)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------
// Statistics extension
// ---------------------------------------------------------------------------

describe("statistics extension", () => {
  const probe = (batch: number, first: number): Record<string, unknown> => ({
    inputs: [{ name: "INPUT0", datatype: "INT32", shape: [batch, 4], data: range(batch * 4, first) }],
  });

  it("lists every served model version at /v2/models/stats", async () => {
    const response = await fetch(url("/v2/models/stats"));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { model_stats: ModelStatsJson[] };
    const names = body.model_stats.map((stats) => `${stats.name}:${stats.version}`).sort();
    expect(names).toEqual(
      [
        "add_sub:1",
        "stats_probe:1",
        "versioned:1",
        "versioned:2",
        ...ALL_DATATYPES.map((datatype) => `${identityName(datatype)}:1`),
      ].sort(),
    );
  });

  it("has Triton's shape", async () => {
    const stats = await getStats("stats_probe");
    expect(stats.name).toBe("stats_probe");
    expect(stats.version).toBe("1");
    expect(Object.keys(stats.inference_stats).sort()).toEqual(
      [
        "cache_hit",
        "cache_miss",
        "compute_infer",
        "compute_input",
        "compute_output",
        "fail",
        "queue",
        "success",
      ].sort(),
    );
    for (const stat of Object.values(stats.inference_stats)) expect(Object.keys(stat).sort()).toEqual(["count", "ns"]);
    expect(Array.isArray(stats.batch_stats)).toBe(true);
    expect(Array.isArray(stats.memory_usage)).toBe(true);
  });

  it("counts exactly the requests sent: successes, inferences by batch size, executions", async () => {
    const before = await getStats("stats_probe");
    const batchCount = (stats: ModelStatsJson, size: number): number =>
      stats.batch_stats.find((entry) => entry.batch_size === size)?.compute_infer.count ?? 0;

    // Batch sizes 1, 2, 2 as JSON and 3 as binary: 4 requests, 8 inferences.
    await infer("stats_probe", probe(1, 0));
    await infer("stats_probe", probe(2, 10));
    await infer("stats_probe", probe(2, 20));
    const binary = await parseInferResponse(
      await postBinary(
        inferPath("stats_probe"),
        { inputs: [{ name: "INPUT0", datatype: "INT32", shape: [3, 4], parameters: { binary_data_size: 48 } }] },
        i32(range(12, 100)),
      ),
    );
    expect(binary.json.outputs[0]!.data).toEqual(range(12, 100));

    const after = await getStats("stats_probe");
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(4);
    expect(after.inference_count - before.inference_count).toBe(8);
    expect(after.execution_count - before.execution_count).toBe(4);
    expect(after.inference_stats.fail.count).toBe(before.inference_stats.fail.count);
    for (const key of ["queue", "compute_input", "compute_infer", "compute_output"] as const) {
      expect(after.inference_stats[key].count - before.inference_stats[key].count, key).toBe(4);
      expect(after.inference_stats[key].ns, key).toBeGreaterThan(before.inference_stats[key].ns);
    }
    expect(after.inference_stats.success.ns).toBeGreaterThan(before.inference_stats.success.ns);
    expect(batchCount(after, 1) - batchCount(before, 1)).toBe(1);
    expect(batchCount(after, 2) - batchCount(before, 2)).toBe(2);
    expect(batchCount(after, 3) - batchCount(before, 3)).toBe(1);
    for (const entry of after.batch_stats) {
      for (const key of ["compute_input", "compute_infer", "compute_output"] as const) {
        expect(entry[key].count, `batch ${entry.batch_size} ${key}`).toBeGreaterThan(0);
        expect(entry[key].ns, `batch ${entry.batch_size} ${key}`).toBeGreaterThan(0);
      }
    }
    expect(after.batch_stats.map((entry) => entry.batch_size)).toEqual([1, 2, 3]);
    expect(after.last_inference).toBeGreaterThanOrEqual(before.last_inference);
    expect(after.last_inference).toBeGreaterThan(Date.now() - 60_000);
    expect(after.last_inference).toBeLessThanOrEqual(Date.now());
  });

  it("counts a request the model refuses as a failure, not a success or execution", async () => {
    const before = await getStats("stats_probe");
    await expectError(
      postJson(inferPath("stats_probe"), {
        inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 3], data: [1, 2, 3] }],
      }),
      400,
      "unexpected shape",
    );
    await expectError(
      postJson(inferPath("stats_probe"), {
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
      }),
      400,
      "data-type",
    );
    const after = await getStats("stats_probe");
    expect(after.inference_stats.fail.count - before.inference_stats.fail.count).toBe(2);
    expect(after.inference_stats.fail.ns).toBeGreaterThan(before.inference_stats.fail.ns);
    expect(after.inference_stats.success.count).toBe(before.inference_stats.success.count);
    expect(after.execution_count).toBe(before.execution_count);
    expect(after.inference_count).toBe(before.inference_count);
  });

  it("keeps statistics per version", async () => {
    const before1 = await getStats("versioned", "1");
    const before2 = await getStats("versioned", "2");
    const input = { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] };
    await infer("versioned", input, "1");
    await infer("versioned", input, "2");
    await infer("versioned", input);
    const after1 = await getStats("versioned", "1");
    const after2 = await getStats("versioned", "2");
    expect(after1.version).toBe("1");
    expect(after2.version).toBe("2");
    expect(after1.inference_stats.success.count - before1.inference_stats.success.count).toBe(1);
    expect(after2.inference_stats.success.count - before2.inference_stats.success.count).toBe(2);
    const both = (await (await fetch(url("/v2/models/versioned/stats"))).json()) as { model_stats: ModelStatsJson[] };
    expect(both.model_stats.map((stats) => stats.version).sort()).toEqual(["1", "2"]);
  });

  it("answers 404 for statistics of an unknown model or version", async () => {
    await expectError(fetch(url("/v2/models/no_such_model/stats")), 404, "'no_such_model'");
    await expectError(fetch(url("/v2/models/versioned/versions/5/stats")), 404, "version 5");
  });
});

// ---------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------

describe("concurrency", () => {
  it("answers 200 requests in flight at once across three models, each with its own result", async () => {
    const requests = range(200).map(async (i) => {
      const id = `concurrent-${i}`;
      switch (i % 3) {
        case 0: {
          const a = range(16, i);
          const b = new Array<number>(16).fill(i % 7);
          const body = await infer("add_sub", addSubRequest(a, b, { id }));
          expect(body.id).toBe(id);
          expect(body.outputs[0]!.data).toEqual(a.map((x) => x + (i % 7)));
          expect(body.outputs[1]!.data).toEqual(a.map((x) => x - (i % 7)));
          return;
        }
        case 1: {
          const batch = 1 + (i % AUTO_MAX_BATCH);
          const data = range(batch * 4, i * 1000);
          const body = await infer("identity_int32", {
            id,
            inputs: [{ name: "INPUT0", datatype: "INT32", shape: [batch, 4], data }],
          });
          expect(body.id).toBe(id);
          expect(body.outputs).toEqual([{ name: "OUTPUT0", datatype: "INT32", shape: [batch, 4], data }]);
          return;
        }
        default: {
          const data = [i + 0.25, -i, i * 1e-3, 2 ** -i];
          const { json, binary } = await parseInferResponse(
            await postBinary(
              inferPath("identity_fp64"),
              {
                id,
                parameters: { binary_data_output: true },
                inputs: [{ name: "INPUT0", datatype: "FP64", shape: [1, 4], parameters: { binary_data_size: 32 } }],
              },
              Buffer.from(new Float64Array(data).buffer),
            ),
          );
          expect(json.id).toBe(id);
          expect(Array.from(new Float64Array(new Uint8Array(binary.get("OUTPUT0")!).buffer))).toEqual(data);
        }
      }
    });
    const results = await Promise.allSettled(requests);
    const failures = results.flatMap((result, i) =>
      result.status === "rejected" ? [`#${i}: ${String(result.reason)}`] : [],
    );
    expect(failures).toEqual([]);
    expect((await fetch(url("/v2/health/ready"))).status).toBe(200);
  });

  it("keeps serving when clients give up mid-request", async () => {
    const aborted = range(40).map(async (i) => {
      const controller = new AbortController();
      const pending = fetch(url(inferPath(i % 2 === 0 ? "add_sub" : "identity_int32")), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(
          i % 2 === 0
            ? addSubRequest(range(16, i), B16)
            : { inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 4], data: [i, i, i, i] }] },
        ),
        signal: controller.signal,
      });
      setImmediate(() => controller.abort());
      return pending.then((response) => response.arrayBuffer()).catch(() => undefined);
    });
    await Promise.all(aborted);
    const body = await infer("add_sub", addSubRequest(A16, B16, { id: "after-aborts" }));
    expect(body.id).toBe("after-aborts");
    expect(body.outputs[0]!.data).toEqual(A16.map((a) => a + 2));
    expect((await fetch(url("/v2/health/ready"))).status).toBe(200);
    expect(server.process.exitCode).toBeNull();
  });
});

// ---------------------------------------------------------------------------
// Prometheus metrics
// ---------------------------------------------------------------------------

describe("metrics endpoint", () => {
  const labels = { model: "add_sub", version: "1" };

  it("exports Triton's per-model counters in step with the statistics extension", async () => {
    // Some traffic of its own, so the test stands alone.
    await infer("add_sub", addSubRequest(A16, B16));
    // A scrape between two equal statistics snapshots sees the same requests
    // (retried should a request of an earlier test still be settling).
    let stats = await getStats("add_sub");
    let samples = await scrapeMetrics();
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const again = await getStats("add_sub");
      if (again.inference_stats.success.count === stats.inference_stats.success.count) break;
      stats = again;
      samples = await scrapeMetrics();
    }
    expect(metric(samples, "nv_inference_request_success", labels)).toBe(stats.inference_stats.success.count);
    expect(metric(samples, "nv_inference_count", labels)).toBe(stats.inference_count);
    expect(metric(samples, "nv_inference_exec_count", labels)).toBe(stats.execution_count);
    expect(stats.inference_stats.success.count).toBeGreaterThan(0);
    for (const name of [
      "nv_inference_request_duration_us",
      "nv_inference_queue_duration_us",
      "nv_inference_compute_input_duration_us",
      "nv_inference_compute_infer_duration_us",
      "nv_inference_compute_output_duration_us",
    ]) {
      expect(metric(samples, name, labels), name).toBeGreaterThan(0);
    }
    // The duration counters are the statistics' nanoseconds in microseconds.
    expect(metric(samples, "nv_inference_compute_infer_duration_us", labels)).toBeCloseTo(
      stats.inference_stats.compute_infer.ns / 1000,
      -1,
    );
    expect(metric(samples, "nv_inference_request_duration_us", labels)).toBeGreaterThanOrEqual(
      Math.floor(stats.inference_stats.success.ns / 1000) - 1,
    );
  });

  it("counts a failed request under nv_inference_request_failure with its reason", async () => {
    const failures = (samples: Map<string, Sample[]>): number =>
      metric(samples, "nv_inference_request_failure", { ...labels, reason: "OTHER" }) ?? 0;
    const before = failures(await scrapeMetrics());
    await expectError(
      postJson(inferPath("add_sub"), {
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: ZEROS_16 },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: ZEROS_16 },
        ],
      }),
      400,
      "data-type",
    );
    const samples = await scrapeMetrics();
    expect(failures(samples)).toBe(before + 1);
    for (const sample of samples.get("nv_inference_request_failure") ?? []) {
      expect(["REJECTED", "CANCELED", "BACKEND", "OTHER"]).toContain(sample.labels["reason"]);
    }
  });

  it("reports pending requests and CPU gauges with sane values", async () => {
    const samples = await scrapeMetrics();
    expect(metric(samples, "nv_inference_pending_request_count", labels)).toBe(0);
    const utilization = metric(samples, "nv_cpu_utilization");
    expect(utilization).toBeGreaterThanOrEqual(0);
    expect(utilization).toBeLessThanOrEqual(1);
    expect(metric(samples, "nv_cpu_memory_total_bytes")).toBe(totalmem());
    const used = metric(samples, "nv_cpu_memory_used_bytes");
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(totalmem());
  });

  it("labels every per-model series with model and version", async () => {
    await infer(
      "versioned",
      { inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] },
      "2",
    );
    const samples = await scrapeMetrics();
    for (const name of ["nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count"]) {
      const series = samples.get(name) ?? [];
      expect(series.length, name).toBeGreaterThan(0);
      for (const sample of series) {
        expect(sample.labels["model"], name).toBeTruthy();
        expect(sample.labels["version"], name).toMatch(/^\d+$/);
      }
    }
    expect(metric(samples, "nv_inference_request_success", { model: "versioned", version: "2" })).toBeGreaterThan(0);
  });
});
