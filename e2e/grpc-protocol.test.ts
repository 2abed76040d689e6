import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { DataType } from "@operon/protocol/datatypes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR } from "./support/grpc-client.js";
import { ADD_SUB_CONFIG, addSubModel, identityModel, writeModel } from "./support/model-fixtures.js";
import { REPO_ROOT, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * System tests of the gRPC API (inference.GRPCInferenceService and
 * grpc.health.v1.Health) through the real `operon serve`, driven by a real
 * @grpc/grpc-js client built from the .proto files the way a Triton user
 * builds one from Triton's protos, plus a cross-check with Python's grpcio.
 *
 * Tests in this file run in order against one server; the repository tests
 * put every model they touch back the way they found it.
 */

// ---- The model repository ----

const IDENTITY_MODELS: Array<{ name: string; datatype: DataType; dims: number[] }> = [
  { name: "identity_fp32", datatype: "FP32", dims: [4] },
  { name: "identity_int64", datatype: "INT64", dims: [4] },
  { name: "identity_bool", datatype: "BOOL", dims: [4] },
  { name: "identity_bytes", datatype: "BYTES", dims: [-1] },
  { name: "identity_uint8", datatype: "UINT8", dims: [4] },
  { name: "identity_fp16", datatype: "FP16", dims: [4] },
];

const identityConfig = (name: string, datatype: DataType, dims: number[], extra = ""): string => {
  const type = datatype === "BYTES" ? "TYPE_STRING" : `TYPE_${datatype}`;
  return `
name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0", data_type: ${type}, dims: [ ${dims.join(", ")} ] } ]
output [ { name: "OUTPUT0", data_type: ${type}, dims: [ ${dims.join(", ")} ] } ]
${extra}
`;
};

/** The add_sub config as the JSON `config` parameter of a load request. */
const addSubConfigJson = (name: string, maxBatchSize: number): string =>
  JSON.stringify({
    name,
    backend: "onnxruntime",
    max_batch_size: maxBatchSize,
    input: [
      { name: "INPUT0", data_type: "TYPE_FP32", dims: [16] },
      { name: "INPUT1", data_type: "TYPE_FP32", dims: [16] },
    ],
    output: [
      { name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] },
      { name: "OUTPUT1", data_type: "TYPE_FP32", dims: [16] },
    ],
  });

function buildRepository(): string {
  const repository = tempRepository("operon-e2e-grpc-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  // Reloaded with a config override by the repository tests; nothing else uses it.
  writeModel(repository, "add_sub_override", addSubModel(), { config: ADD_SUB_CONFIG("add_sub_override") });
  for (const { name, datatype, dims } of IDENTITY_MODELS) {
    writeModel(repository, name, identityModel(datatype, dims), { config: identityConfig(name, datatype, dims) });
  }
  const versionPolicy = "version_policy: { all: {} }";
  writeModel(repository, "identity_versions", identityModel("FP32", [2]), {
    version: 1,
    config: identityConfig("identity_versions", "FP32", [2], versionPolicy),
  });
  writeModel(repository, "identity_versions", identityModel("FP32", [2]), { version: 2 });
  return repository;
}

const ALL_MODEL_VERSIONS = [
  ["add_sub", "1"],
  ["add_sub_override", "1"],
  ["identity_bool", "1"],
  ["identity_bytes", "1"],
  ["identity_fp16", "1"],
  ["identity_fp32", "1"],
  ["identity_int64", "1"],
  ["identity_uint8", "1"],
  ["identity_versions", "1"],
  ["identity_versions", "2"],
];

// ---- A client as a Triton user writes one: proto-loader over the .proto files ----

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

type ClientConstructor = new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client;

function serviceClient(protoFile: string, servicePath: string[]): ClientConstructor {
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(protoFile, LOADER_OPTIONS)) as Record<string, unknown>;
  let node: unknown = loaded;
  for (const part of servicePath) node = (node as Record<string, unknown>)[part];
  if (typeof node !== "function") throw new Error(`${protoFile} does not define ${servicePath.join(".")}`);
  return node as ClientConstructor;
}

type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response: unknown) => void,
) => grpc.ClientUnaryCall;

/** Message shapes as proto-loader decodes them (64-bit integers as decimal strings). */
/* eslint-disable @typescript-eslint/no-explicit-any */
type Message = any;

interface TensorIn {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: Record<string, object>;
  contents?: Record<string, unknown[]>;
}

const DEADLINE_MS = 15_000;

let server: RunningOperon;
let inference: grpc.Client;
let health: grpc.Client;

function method(client: grpc.Client, name: string): UnaryMethod {
  const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[name];
  if (fn === undefined) throw new Error(`the client has no method ${name}`);
  return fn.bind(client);
}

function rpc(name: string, request: object = {}, client: grpc.Client = inference): Promise<Message> {
  return new Promise((resolve, reject) => {
    method(client, name)(request, new grpc.Metadata(), { deadline: Date.now() + DEADLINE_MS }, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

/** The error an RPC fails with; fails the test if the RPC succeeds. */
async function rpcError(name: string, request: object = {}): Promise<grpc.ServiceError> {
  try {
    const response: unknown = await rpc(name, request);
    throw new Error(`${name} succeeded but an error was expected: ${JSON.stringify(response)}`);
  } catch (error) {
    if ((error as grpc.ServiceError).code === undefined) throw error;
    return error as grpc.ServiceError;
  }
}

// ---- Tensor helpers (little-endian, row-major, as the protocol requires) ----

const fp32 = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
const int64 = (values: bigint[]): Buffer => Buffer.from(new BigInt64Array(values).buffer);
/** BYTES elements: a 4-byte little-endian length before each element. */
const bytesTensor = (elements: Buffer[]): Buffer =>
  Buffer.concat(elements.flatMap((element) => [Buffer.from(new Uint32Array([element.length]).buffer), element]));
const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

function addSubRequest(input0: number[], input1: number[], extra: Record<string, unknown> = {}): Message {
  const batch = input0.length / 16;
  return {
    model_name: "add_sub",
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [batch, 16] },
      { name: "INPUT1", datatype: "FP32", shape: [batch, 16] },
    ],
    raw_input_contents: [fp32(input0), fp32(input1)],
    ...extra,
  };
}

function expectAddSubResponse(response: Message, input0: number[], input1: number[]): void {
  const batch = input0.length / 16;
  expect(response.model_name).toBe("add_sub");
  expect(response.model_version).toBe("1");
  expect(response.outputs.map((o: Message) => [o.name, o.datatype, o.shape.map(Number)])).toEqual([
    ["OUTPUT0", "FP32", [batch, 16]],
    ["OUTPUT1", "FP32", [batch, 16]],
  ]);
  expect(response.raw_output_contents).toHaveLength(2);
  expect(Buffer.compare(response.raw_output_contents[0], fp32(input0.map((v, i) => v + input1[i]!)))).toBe(0);
  expect(Buffer.compare(response.raw_output_contents[1], fp32(input0.map((v, i) => v - input1[i]!)))).toBe(0);
}

function identityRequest(model: string, input: TensorIn, raw?: Buffer, extra: Record<string, unknown> = {}): Message {
  return { model_name: model, inputs: [input], ...(raw !== undefined ? { raw_input_contents: [raw] } : {}), ...extra };
}

const statsOf = async (name: string, version = ""): Promise<Message[]> =>
  (await rpc("ModelStatistics", { name, version })).model_stats;

// ---- Server life cycle ----

beforeAll(async () => {
  const repository = buildRepository();
  server = await startOperon([
    "--model-repository",
    repository,
    "--model-control-mode",
    "explicit",
    "--load-model",
    "*",
  ]);
  const Inference = serviceClient(join(PROTO_DIR, "grpc_service.proto"), ["inference", "GRPCInferenceService"]);
  const Health = serviceClient(join(PROTO_DIR, "health.proto"), ["grpc", "health", "v1", "Health"]);
  inference = new Inference(server.grpcAddress, grpc.credentials.createInsecure());
  health = new Health(server.grpcAddress, grpc.credentials.createInsecure());
});

afterAll(async () => {
  inference?.close();
  health?.close();
  await server?.stop();
});

// ---- Health and metadata ----

describe("health", () => {
  it("ServerLive and ServerReady are true", async () => {
    expect(await rpc("ServerLive")).toEqual({ live: true });
    expect(await rpc("ServerReady")).toEqual({ ready: true });
  });

  it("ModelReady is true for served models and versions, false for unknown ones", async () => {
    expect((await rpc("ModelReady", { name: "add_sub" })).ready).toBe(true);
    expect((await rpc("ModelReady", { name: "add_sub", version: "1" })).ready).toBe(true);
    expect((await rpc("ModelReady", { name: "identity_versions", version: "1" })).ready).toBe(true);
    expect((await rpc("ModelReady", { name: "identity_versions", version: "2" })).ready).toBe(true);
    expect((await rpc("ModelReady", { name: "identity_versions", version: "3" })).ready).toBe(false);
    expect((await rpc("ModelReady", { name: "no_such_model" })).ready).toBe(false);
  });

  it("grpc.health.v1.Health/Check answers SERVING for the server and for a ready model, NOT_FOUND for an unknown one", async () => {
    expect(await rpc("Check", { service: "" }, health)).toEqual({ status: "SERVING" });
    expect(await rpc("Check", { service: "inference.GRPCInferenceService" }, health)).toEqual({ status: "SERVING" });
    expect(await rpc("Check", { service: "add_sub" }, health)).toEqual({ status: "SERVING" });
    const error = await new Promise<grpc.ServiceError>((resolve, reject) =>
      rpc("Check", { service: "no_such_model" }, health).then(
        () => reject(new Error("Check of an unknown service succeeded")),
        resolve,
      ),
    );
    expect(error.code).toBe(grpc.status.NOT_FOUND);
    expect(error.details).toContain("no_such_model");
  });
});

describe("metadata and configuration", () => {
  it("ServerMetadata names the server and lists exactly the implemented extensions", async () => {
    const metadata = await rpc("ServerMetadata");
    expect(metadata.name).toBe("operon");
    expect(metadata.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(metadata.extensions).toEqual([
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

  it("ModelMetadata gives datatypes and shapes with -1 for the batch dimension", async () => {
    const metadata = await rpc("ModelMetadata", { name: "add_sub" });
    expect(metadata.name).toBe("add_sub");
    expect(metadata.versions).toEqual(["1"]);
    expect(metadata.platform).toBe("onnxruntime_onnx");
    const tensors = (list: Message[]) => list.map((t) => [t.name, t.datatype, t.shape.map(Number)]);
    expect(tensors(metadata.inputs)).toEqual([
      ["INPUT0", "FP32", [-1, 16]],
      ["INPUT1", "FP32", [-1, 16]],
    ]);
    expect(tensors(metadata.outputs)).toEqual([
      ["OUTPUT0", "FP32", [-1, 16]],
      ["OUTPUT1", "FP32", [-1, 16]],
    ]);
  });

  it("ModelMetadata reports every datatype by its wire name, BYTES for TYPE_STRING", async () => {
    for (const { name, datatype, dims } of IDENTITY_MODELS) {
      const metadata = await rpc("ModelMetadata", { name });
      expect([name, metadata.inputs[0].datatype, metadata.inputs[0].shape.map(Number)]).toEqual([
        name,
        datatype,
        [-1, ...dims],
      ]);
      expect(metadata.outputs[0].datatype).toBe(datatype);
    }
  });

  it("ModelMetadata lists every served version of a multi-version model", async () => {
    expect((await rpc("ModelMetadata", { name: "identity_versions" })).versions).toEqual(["1", "2"]);
    expect((await rpc("ModelMetadata", { name: "identity_versions", version: "1" })).name).toBe("identity_versions");
  });

  it("ModelConfig returns the config as model_config.proto", async () => {
    const { config } = await rpc("ModelConfig", { name: "add_sub" });
    expect(config.name).toBe("add_sub");
    expect(config.backend).toBe("onnxruntime");
    expect(config.max_batch_size).toBe(8);
    expect(config.input.map((i: Message) => [i.name, i.data_type, i.dims.map(Number)])).toEqual([
      ["INPUT0", "TYPE_FP32", [16]],
      ["INPUT1", "TYPE_FP32", [16]],
    ]);
    expect(config.output.map((o: Message) => [o.name, o.data_type])).toEqual([
      ["OUTPUT0", "TYPE_FP32"],
      ["OUTPUT1", "TYPE_FP32"],
    ]);
    expect((await rpc("ModelConfig", { name: "identity_bytes" })).config.input[0].data_type).toBe("TYPE_STRING");
  });

  it("ModelMetadata and ModelConfig of an unknown model are NOT_FOUND", async () => {
    for (const name of ["ModelMetadata", "ModelConfig"]) {
      const error = await rpcError(name, { name: "no_such_model" });
      expect(error.code).toBe(grpc.status.NOT_FOUND);
      expect(error.details).toContain("no_such_model");
    }
  });
});

// ---- Inference ----

describe("ModelInfer with raw_input_contents", () => {
  it("add_sub adds and subtracts, byte for byte, for batch 1 and batch 3", async () => {
    const a1 = range(16);
    const b1 = range(16).map((i) => 0.25 * i - 3);
    expectAddSubResponse(await rpc("ModelInfer", addSubRequest(a1, b1)), a1, b1);
    const a3 = range(48, -20).map((v) => v / 8);
    const b3 = range(48).map((v) => 1000 - v * 3.5);
    expectAddSubResponse(await rpc("ModelInfer", addSubRequest(a3, b3)), a3, b3);
  });

  const cases: Array<{ model: string; datatype: string; shape: number[]; raw: Buffer }> = [
    {
      model: "identity_fp32",
      datatype: "FP32",
      shape: [2, 4],
      raw: fp32([0, -1.5, 3.25, 1e30, -0, 7, 8, Number.MIN_VALUE]),
    },
    {
      model: "identity_int64",
      datatype: "INT64",
      shape: [1, 4],
      raw: int64([-(2n ** 63n), 2n ** 63n - 1n, 9007199254740993n, -1n]),
    },
    { model: "identity_bool", datatype: "BOOL", shape: [2, 4], raw: Buffer.from([1, 0, 0, 1, 1, 1, 0, 0]) },
    {
      model: "identity_bytes",
      datatype: "BYTES",
      shape: [1, 3],
      // ONNX Runtime string tensors hold text: UTF-8 (a leading BOM kept as is), empty elements included.
      raw: bytesTensor([Buffer.from("hello"), Buffer.alloc(0), Buffer.from("\ufeff日本語 ✓", "utf8")]),
    },
    { model: "identity_uint8", datatype: "UINT8", shape: [1, 4], raw: Buffer.from([0, 1, 128, 255]) },
    // FP16 1.0, -2.0, 65504 (max), smallest subnormal.
    {
      model: "identity_fp16",
      datatype: "FP16",
      shape: [1, 4],
      raw: Buffer.from([0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00]),
    },
  ];

  it.each(cases)(
    "$datatype identity returns raw_output_contents equal to the input bytes",
    async ({ model, datatype, shape, raw }) => {
      const response = await rpc("ModelInfer", identityRequest(model, { name: "INPUT0", datatype, shape }, raw));
      expect(response.model_name).toBe(model);
      expect(response.outputs.map((o: Message) => [o.name, o.datatype, o.shape.map(Number)])).toEqual([
        ["OUTPUT0", datatype, shape],
      ]);
      expect(response.raw_output_contents).toHaveLength(1);
      expect(Buffer.compare(response.raw_output_contents[0], raw)).toBe(0);
    },
  );

  it("a multi-version model serves the requested version, and the highest one by default", async () => {
    const raw = fp32([1, 2]);
    const request = (version: string) =>
      identityRequest("identity_versions", { name: "INPUT0", datatype: "FP32", shape: [1, 2] }, raw, {
        model_version: version,
      });
    const v1 = await rpc("ModelInfer", request("1"));
    const v2 = await rpc("ModelInfer", request("2"));
    const latest = await rpc("ModelInfer", request(""));
    expect([v1.model_version, v2.model_version, latest.model_version]).toEqual(["1", "2", "2"]);
    for (const response of [v1, v2, latest]) expect(Buffer.compare(response.raw_output_contents[0], raw)).toBe(0);
  });

  it("returns only the requested outputs, in the requested order", async () => {
    const a = range(16);
    const b = range(16).map(() => 2);
    const only1 = await rpc("ModelInfer", addSubRequest(a, b, { outputs: [{ name: "OUTPUT1" }] }));
    expect(only1.outputs.map((o: Message) => o.name)).toEqual(["OUTPUT1"]);
    expect(only1.raw_output_contents).toHaveLength(1);
    expect(Buffer.compare(only1.raw_output_contents[0], fp32(a.map((v) => v - 2)))).toBe(0);
    const reversed = await rpc(
      "ModelInfer",
      addSubRequest(a, b, { outputs: [{ name: "OUTPUT1" }, { name: "OUTPUT0" }] }),
    );
    expect(reversed.outputs.map((o: Message) => o.name)).toEqual(["OUTPUT1", "OUTPUT0"]);
    expect(Buffer.compare(reversed.raw_output_contents[1], fp32(a.map((v) => v + 2)))).toBe(0);
  });

  it("echoes the request id, and answers an empty id with an empty id", async () => {
    const a = range(16);
    expect((await rpc("ModelInfer", addSubRequest(a, a, { id: "request-42 ✓" }))).id).toBe("request-42 ✓");
    expect((await rpc("ModelInfer", addSubRequest(a, a))).id).toBe("");
  });

  it("accepts custom int64, string and bool parameters on the request, inputs and outputs", async () => {
    const a = range(16);
    const b = range(16).map((v) => -v);
    const request = addSubRequest(a, b, {
      parameters: {
        custom_int: { int64_param: "9007199254740993" },
        custom_string: { string_param: "hello" },
        custom_bool: { bool_param: true },
      },
      outputs: [{ name: "OUTPUT0", parameters: { custom_output_flag: { bool_param: false } } }],
    });
    request.inputs[0].parameters = { custom_input_tag: { string_param: "x" } };
    const response = await rpc("ModelInfer", request);
    expect(response.outputs.map((o: Message) => o.name)).toEqual(["OUTPUT0"]);
    expect(Buffer.compare(response.raw_output_contents[0], fp32(range(16).map(() => 0)))).toBe(0);
  });
});

describe("ModelInfer with typed contents", () => {
  it("fp32_contents: add_sub answers in raw_output_contents", async () => {
    const a = range(16).map((v) => v * 1.5);
    const b = range(16).map(() => 0.5);
    const response = await rpc("ModelInfer", {
      model_name: "add_sub",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], contents: { fp32_contents: a } },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], contents: { fp32_contents: b } },
      ],
    });
    expectAddSubResponse(response, a, b);
  });

  it("int64_contents keep values beyond 2^53 exact", async () => {
    const values = ["-9223372036854775808", "9223372036854775807", "9007199254740993", "-3"];
    const response = await rpc(
      "ModelInfer",
      identityRequest("identity_int64", {
        name: "INPUT0",
        datatype: "INT64",
        shape: [1, 4],
        contents: { int64_contents: values },
      }),
    );
    expect(Buffer.compare(response.raw_output_contents[0], int64(values.map(BigInt)))).toBe(0);
  });

  it("uint_contents carry UINT8 values", async () => {
    const response = await rpc(
      "ModelInfer",
      identityRequest("identity_uint8", {
        name: "INPUT0",
        datatype: "UINT8",
        shape: [1, 4],
        contents: { uint_contents: [0, 7, 128, 255] },
      }),
    );
    expect([...response.raw_output_contents[0]]).toEqual([0, 7, 128, 255]);
  });

  it("bool_contents", async () => {
    const response = await rpc(
      "ModelInfer",
      identityRequest("identity_bool", {
        name: "INPUT0",
        datatype: "BOOL",
        shape: [1, 4],
        contents: { bool_contents: [true, false, false, true] },
      }),
    );
    expect([...response.raw_output_contents[0]]).toEqual([1, 0, 0, 1]);
  });

  it("bytes_contents, including empty and multi-byte UTF-8 elements", async () => {
    const elements = [Buffer.from("héllo"), Buffer.alloc(0), Buffer.from("𝄞 clef")];
    const response = await rpc(
      "ModelInfer",
      identityRequest("identity_bytes", {
        name: "INPUT0",
        datatype: "BYTES",
        shape: [1, 3],
        contents: { bytes_contents: elements },
      }),
    );
    expect(response.outputs[0].shape.map(Number)).toEqual([1, 3]);
    expect(Buffer.compare(response.raw_output_contents[0], bytesTensor(elements))).toBe(0);
  });
});

describe("ModelInfer errors carry the right status and name the problem", () => {
  const a = range(16);
  const addSub = (patch: (request: Message) => void): Message => {
    const request = addSubRequest(a, a);
    patch(request);
    return request;
  };
  const cases: Array<{ what: string; request: Message; code: grpc.status; message: RegExp }> = [
    {
      what: "raw_input_contents count differs from the inputs",
      request: addSub((r) => r.raw_input_contents.pop()),
      code: grpc.status.INVALID_ARGUMENT,
      message: /expected 2 raw_input_contents.*got 1/,
    },
    {
      what: "raw bytes do not match the shape",
      request: addSub((r) => (r.raw_input_contents[1] = r.raw_input_contents[1].subarray(0, 60))),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT1.*expected 64 bytes.*got 60/,
    },
    {
      what: "datatype differs from the config",
      request: addSub((r) => {
        r.inputs[0].datatype = "INT32";
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*data-type is 'INT32'.*expects 'FP32'/,
    },
    {
      what: "unknown datatype",
      request: addSub((r) => {
        r.inputs[0].datatype = "FLOAT";
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*unknown datatype 'FLOAT'/,
    },
    {
      what: "shape differs from the config",
      request: addSub((r) => {
        r.inputs[0].shape = [2, 8];
        r.inputs[1].shape = [2, 8];
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /unexpected shape for input 'INPUT0'.*Expected \[-1,16\], got \[2,8\]/,
    },
    {
      what: "negative shape dimension",
      request: addSub((r) => {
        r.inputs[0].shape = [-1, 16];
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*invalid shape dimension -1/,
    },
    {
      what: "a required input is missing",
      request: addSub((r) => {
        r.inputs.pop();
        r.raw_input_contents.pop();
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /missing: 'INPUT1'/,
    },
    {
      what: "an input the model does not have",
      request: addSub((r) => {
        r.inputs[1].name = "INPUT9";
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /unexpected inference input 'INPUT9'/,
    },
    {
      what: "an output the model does not have",
      request: addSub((r) => (r.outputs = [{ name: "OUTPUT7" }])),
      code: grpc.status.INVALID_ARGUMENT,
      message: /unexpected inference output 'OUTPUT7'/,
    },
    {
      what: "batch larger than max_batch_size",
      request: addSubRequest(range(16 * 9), range(16 * 9)),
      code: grpc.status.INVALID_ARGUMENT,
      message: /batch-size must be <= 8.*batch size 9/,
    },
    {
      what: "unknown model",
      request: addSub((r) => (r.model_name = "no_such_model")),
      code: grpc.status.NOT_FOUND,
      message: /unknown model.*'no_such_model'/,
    },
    {
      what: "unknown version",
      request: addSub((r) => (r.model_version = "7")),
      code: grpc.status.NOT_FOUND,
      message: /'add_sub' version 7/,
    },
    {
      what: "FP16 in typed contents",
      request: identityRequest("identity_fp16", {
        name: "INPUT0",
        datatype: "FP16",
        shape: [1, 4],
        contents: { fp32_contents: [1, 2, 3, 4] },
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*FP16.*raw_input_contents/,
    },
    {
      what: "typed contents in the wrong field for the datatype",
      request: identityRequest("identity_int64", {
        name: "INPUT0",
        datatype: "INT64",
        shape: [1, 4],
        contents: { int_contents: [1, 2, 3, 4] },
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INT64 must use int64_contents/,
    },
    {
      what: "typed contents with too few elements",
      request: identityRequest("identity_fp32", {
        name: "INPUT0",
        datatype: "FP32",
        shape: [1, 4],
        contents: { fp32_contents: [1, 2, 3] },
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /expected 4 elements in fp32_contents.*got 3/,
    },
    {
      // The onnxruntime backend can only pass text: refused rather than silently altered.
      what: "BYTES element that is not UTF-8 text",
      request: identityRequest(
        "identity_bytes",
        { name: "INPUT0", datatype: "BYTES", shape: [1, 2] },
        bytesTensor([Buffer.from("fine"), Buffer.from([0xff, 0xfe, 0x80])]),
      ),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*BYTES element 1 is not valid UTF-8/,
    },
    {
      what: "BYTES element with a NUL byte",
      request: identityRequest("identity_bytes", {
        name: "INPUT0",
        datatype: "BYTES",
        shape: [1, 1],
        contents: { bytes_contents: [Buffer.from("a\0b")] },
      }),
      code: grpc.status.INVALID_ARGUMENT,
      message: /INPUT0.*BYTES element 0 contains a NUL byte/,
    },
    {
      what: "both raw_input_contents and typed contents",
      request: identityRequest(
        "identity_fp32",
        { name: "INPUT0", datatype: "FP32", shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } },
        fp32([1, 2, 3, 4]),
      ),
      code: grpc.status.INVALID_ARGUMENT,
      message: /contents must not be set when raw_input_contents is used/,
    },
  ];

  it.each(cases)("$what", async ({ request, code, message }) => {
    const error = await rpcError("ModelInfer", request);
    expect({ code: error.code, details: error.details }).toEqual({ code, details: expect.stringMatching(message) });
  });

  it("CudaSharedMemoryStatus is UNIMPLEMENTED and names the missing extension", async () => {
    const error = await rpcError("CudaSharedMemoryStatus", { name: "" });
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(error.details).toMatch(/CUDA shared memory.*cuda_shared_memory/);
  });

  it("the server still answers correctly after all of these", async () => {
    expectAddSubResponse(await rpc("ModelInfer", addSubRequest(a, a)), a, a);
  });
});

// ---- Statistics ----

describe("ModelStatistics", () => {
  it("counts go up by exactly what was sent: inferences by batch size, executions, successes and failures", async () => {
    const [before] = await statsOf("add_sub", "1");
    expect(before.name).toBe("add_sub");
    expect(before.version).toBe("1");
    const a = range(16);
    await rpc("ModelInfer", addSubRequest(a, a));
    await rpc("ModelInfer", addSubRequest(range(32), range(32)));
    await rpc("ModelInfer", addSubRequest(range(48), range(48)));
    // Fails validation after the model is resolved: one failure, no execution.
    await rpcError("ModelInfer", addSubRequest(range(16 * 9), range(16 * 9)));
    const [after] = await statsOf("add_sub", "1");
    const delta = (pick: (s: Message) => string | number) => Number(pick(after)) - Number(pick(before));
    expect({
      inference_count: delta((s) => s.inference_count),
      execution_count: delta((s) => s.execution_count),
      success: delta((s) => s.inference_stats.success.count),
      fail: delta((s) => s.inference_stats.fail.count),
      queue: delta((s) => s.inference_stats.queue.count),
      compute_infer: delta((s) => s.inference_stats.compute_infer.count),
    }).toEqual({ inference_count: 6, execution_count: 3, success: 3, fail: 1, queue: 3, compute_infer: 3 });
    expect(Number(after.last_inference)).toBeGreaterThan(0);
    const batchCount = (stats: Message, size: number) =>
      Number(stats.batch_stats.find((b: Message) => Number(b.batch_size) === size)?.compute_infer.count ?? 0);
    expect([1, 2, 3].map((size) => batchCount(after, size) - batchCount(before, size))).toEqual([1, 1, 1]);
  });

  it("covers every served version when no model is named, and each version separately", async () => {
    const all = await statsOf("");
    expect(all.map((s: Message) => [s.name, s.version]).sort()).toEqual(ALL_MODEL_VERSIONS);
    const versions = await statsOf("identity_versions");
    expect(versions.map((s: Message) => s.version).sort()).toEqual(["1", "2"]);
  });

  it("an unknown model or version is NOT_FOUND", async () => {
    expect((await rpcError("ModelStatistics", { name: "no_such_model" })).code).toBe(grpc.status.NOT_FOUND);
    const error = await rpcError("ModelStatistics", { name: "add_sub", version: "9" });
    expect(error.code).toBe(grpc.status.NOT_FOUND);
    expect(error.details).toContain("version 9");
  });
});

// ---- Model repository ----

describe("model repository", () => {
  it("RepositoryIndex lists every model version READY, with and without the ready filter", async () => {
    const rows = (response: Message) => response.models.map((m: Message) => [m.name, m.version, m.state]);
    const expected = ALL_MODEL_VERSIONS.map(([name, version]) => [name, version, "READY"]);
    expect(rows(await rpc("RepositoryIndex", {}))).toEqual(expected);
    expect(rows(await rpc("RepositoryIndex", { ready: true }))).toEqual(expected);
  });

  it("RepositoryIndex with a repository_name is UNIMPLEMENTED", async () => {
    const error = await rpcError("RepositoryIndex", { repository_name: "elsewhere" });
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(error.details).toContain("repository_name");
  });

  it("RepositoryModelUnload takes a model out of service; RepositoryModelLoad brings it back", async () => {
    const input = { name: "INPUT0", datatype: "UINT8", shape: [1, 4] };
    const raw = Buffer.from([9, 8, 7, 6]);
    await rpc("RepositoryModelUnload", { model_name: "identity_uint8" });
    expect((await rpc("ModelReady", { name: "identity_uint8" })).ready).toBe(false);
    const error = await rpcError("ModelInfer", identityRequest("identity_uint8", input, raw));
    expect([grpc.status.NOT_FOUND, grpc.status.UNAVAILABLE]).toContain(error.code);
    expect(error.details).toContain("identity_uint8");
    expect(await rpc("Check", { service: "identity_uint8" }, health)).toEqual({ status: "NOT_SERVING" });
    const unloaded = (await rpc("RepositoryIndex", {})).models.find((m: Message) => m.name === "identity_uint8");
    expect([unloaded.state, unloaded.reason]).toEqual(["UNAVAILABLE", "unloaded"]);
    const readyOnly = (await rpc("RepositoryIndex", { ready: true })).models.map((m: Message) => m.name);
    expect(readyOnly).not.toContain("identity_uint8");

    await rpc("RepositoryModelLoad", { model_name: "identity_uint8" });
    expect((await rpc("ModelReady", { name: "identity_uint8" })).ready).toBe(true);
    expect(await rpc("Check", { service: "identity_uint8" }, health)).toEqual({ status: "SERVING" });
    const response = await rpc("ModelInfer", identityRequest("identity_uint8", input, raw));
    expect(Buffer.compare(response.raw_output_contents[0], raw)).toBe(0);
  });

  it("RepositoryModelLoad with a config override serves the new config until reloaded from the repository", async () => {
    const request = (batch: number) => ({
      ...addSubRequest(range(16 * batch), range(16 * batch)),
      model_name: "add_sub_override",
    });
    await rpc("RepositoryModelLoad", {
      model_name: "add_sub_override",
      parameters: { config: { string_param: addSubConfigJson("add_sub_override", 2) } },
    });
    expect((await rpc("ModelConfig", { name: "add_sub_override" })).config.max_batch_size).toBe(2);
    const error = await rpcError("ModelInfer", request(3));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/batch-size must be <= 2/);
    const response = await rpc("ModelInfer", request(2));
    expect(response.outputs[0].shape.map(Number)).toEqual([2, 16]);

    // A load without parameters goes back to config.pbtxt.
    await rpc("RepositoryModelLoad", { model_name: "add_sub_override" });
    expect((await rpc("ModelConfig", { name: "add_sub_override" })).config.max_batch_size).toBe(8);
    expect((await rpc("ModelInfer", request(3))).outputs[0].shape.map(Number)).toEqual([3, 16]);
  });

  it("RepositoryModelLoad with file: parameters serves a model the repository does not have", async () => {
    await rpc("RepositoryModelLoad", {
      model_name: "uploaded_add_sub",
      parameters: {
        config: { string_param: addSubConfigJson("uploaded_add_sub", 4) },
        "file:1/model.onnx": { bytes_param: addSubModel() },
      },
    });
    try {
      expect((await rpc("ModelReady", { name: "uploaded_add_sub" })).ready).toBe(true);
      expect((await rpc("ModelConfig", { name: "uploaded_add_sub" })).config.max_batch_size).toBe(4);
      const a = range(16, 100);
      const b = range(16).map((v) => v * v);
      const response = await rpc("ModelInfer", { ...addSubRequest(a, b), model_name: "uploaded_add_sub" });
      expect(response.model_name).toBe("uploaded_add_sub");
      expect(Buffer.compare(response.raw_output_contents[0], fp32(a.map((v, i) => v + b[i]!)))).toBe(0);
      expect(Buffer.compare(response.raw_output_contents[1], fp32(a.map((v, i) => v - b[i]!)))).toBe(0);
    } finally {
      await rpc("RepositoryModelUnload", { model_name: "uploaded_add_sub" });
    }
    expect((await rpc("ModelReady", { name: "uploaded_add_sub" })).ready).toBe(false);
    const row = (await rpc("RepositoryIndex", {})).models.find((m: Message) => m.name === "uploaded_add_sub");
    expect([row.state, row.reason]).toEqual(["UNAVAILABLE", "unloaded"]);
  });

  it("load and unload errors: unknown model NOT_FOUND, files without config and bad parameters INVALID_ARGUMENT", async () => {
    const unknownLoad = await rpcError("RepositoryModelLoad", { model_name: "no_such_model" });
    expect([unknownLoad.code, unknownLoad.details]).toEqual([
      grpc.status.NOT_FOUND,
      expect.stringContaining("no_such_model"),
    ]);
    const unknownUnload = await rpcError("RepositoryModelUnload", { model_name: "no_such_model" });
    expect([unknownUnload.code, unknownUnload.details]).toEqual([
      grpc.status.NOT_FOUND,
      expect.stringContaining("no_such_model"),
    ]);
    const noConfig = await rpcError("RepositoryModelLoad", {
      model_name: "uploaded_without_config",
      parameters: { "file:1/model.onnx": { bytes_param: addSubModel() } },
    });
    expect([noConfig.code, noConfig.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      expect.stringContaining("'config' is required"),
    ]);
    const badConfig = await rpcError("RepositoryModelLoad", {
      model_name: "add_sub_override",
      parameters: { config: { string_param: "{not json" } },
    });
    expect([badConfig.code, badConfig.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      expect.stringContaining("invalid JSON"),
    ]);
    // A failed reload leaves the served version in place.
    expect((await rpc("ModelReady", { name: "add_sub_override" })).ready).toBe(true);
  });

  it("after all of that the index is back to every model READY", async () => {
    const rows = (await rpc("RepositoryIndex", { ready: true })).models.map((m: Message) => [m.name, m.version]);
    expect(rows).toEqual(ALL_MODEL_VERSIONS);
  });
});

// ---- Streaming ----

describe("ModelStreamInfer", () => {
  it("answers 20 requests on one stream, matched by id; bad requests in the middle yield error_message and the stream continues", async () => {
    const stream = (
      inference as unknown as { ModelStreamInfer(): grpc.ClientDuplexStream<object, Message> }
    ).ModelStreamInfer();
    const replies: Message[] = [];
    const finished = new Promise<grpc.StatusObject>((resolve, reject) => {
      stream.on("data", (reply: Message) => replies.push(reply));
      stream.on("status", resolve);
      stream.on("error", reject);
    });
    const inputsOf = (i: number) => ({ a: range(16, i), b: range(16).map(() => i * 0.5) });
    for (let i = 0; i < 20; i++) {
      const { a, b } = inputsOf(i);
      const request = addSubRequest(a, b, { id: `req-${i}` });
      if (i === 10) {
        // bad: 15 elements where the config wants 16
        request.inputs[1].shape = [1, 15];
        request.raw_input_contents[1] = fp32(b.slice(0, 15));
      }
      if (i === 15) request.model_name = "no_such_model"; // bad: unknown model
      stream.write(request);
    }
    stream.end();
    const status = await finished;
    expect(status.code).toBe(grpc.status.OK);
    expect(replies).toHaveLength(20);
    const byId = new Map(replies.map((reply) => [reply.infer_response.id, reply]));
    expect([...byId.keys()].sort()).toEqual(
      range(20)
        .map((i) => `req-${i}`)
        .sort(),
    );
    for (let i = 0; i < 20; i++) {
      const reply = byId.get(`req-${i}`);
      if (i === 10 || i === 15) {
        expect(reply.error_message).toMatch(
          i === 10 ? /unexpected shape for input 'INPUT1'/ : /unknown model.*'no_such_model'/,
        );
        expect(reply.infer_response.raw_output_contents).toEqual([]);
      } else {
        expect(reply.error_message).toBe("");
        const { a, b } = inputsOf(i);
        expectAddSubResponse(reply.infer_response, a, b);
      }
    }
  });

  it("a client that cancels its stream does not break the server", async () => {
    const stream = (
      inference as unknown as { ModelStreamInfer(): grpc.ClientDuplexStream<object, Message> }
    ).ModelStreamInfer();
    const ended = new Promise<grpc.StatusObject>((resolve) => {
      stream.on("status", resolve);
      stream.on("error", () => undefined); // the CANCELLED status below says it all
      stream.on("data", () => undefined);
    });
    for (let i = 0; i < 5; i++) stream.write(addSubRequest(range(16), range(16), { id: `c-${i}` }));
    stream.cancel();
    expect((await ended).code).toBe(grpc.status.CANCELLED);
    expectAddSubResponse(await rpc("ModelInfer", addSubRequest(range(16), range(16))), range(16), range(16));
  });
});

// ---- Cancellation and concurrency ----

describe("cancellation and concurrency", () => {
  it("cancelling unary ModelInfer calls does not break the server", async () => {
    const cancelled = await Promise.all(
      range(10).map(
        (i) =>
          new Promise<grpc.ServiceError | null>((resolve) => {
            const raw = fp32([i, i, i, i]);
            const call = method(inference, "ModelInfer")(
              identityRequest("identity_fp32", { name: "INPUT0", datatype: "FP32", shape: [1, 4] }, raw),
              new grpc.Metadata(),
              {},
              (error) => resolve(error),
            );
            call.cancel();
          }),
      ),
    );
    expect(cancelled.map((error) => error?.code)).toEqual(range(10).map(() => grpc.status.CANCELLED));
    const raw = fp32([1, 2, 3, 4]);
    const response = await rpc(
      "ModelInfer",
      identityRequest("identity_fp32", { name: "INPUT0", datatype: "FP32", shape: [1, 4] }, raw),
    );
    expect(Buffer.compare(response.raw_output_contents[0], raw)).toBe(0);
    expect((await rpc("ServerReady")).ready).toBe(true);
  });

  it("calls cancelled while the server may be working on them end either CANCELLED or correct, never otherwise", async () => {
    // Whether each cancel lands before, during or after the server's work varies; every outcome allowed is asserted.
    const a = range(16 * 8).map((v) => v / 4);
    const outcomes = await Promise.all(
      range(20).map(
        (i) =>
          new Promise<{ error: grpc.ServiceError | null; response: Message }>((resolve) => {
            const call = method(inference, "ModelInfer")(
              addSubRequest(a, a, { id: `cancel-${i}` }),
              new grpc.Metadata(),
              {},
              (error, response) => resolve({ error, response }),
            );
            setTimeout(() => call.cancel(), 2 * i);
          }),
      ),
    );
    for (const { error, response } of outcomes) {
      if (error !== null) expect(error.code).toBe(grpc.status.CANCELLED);
      else expectAddSubResponse(response, a, a);
    }
    expectAddSubResponse(await rpc("ModelInfer", addSubRequest(a, a)), a, a);
  });

  it("100 concurrent ModelInfer calls all get their own correct answers", async () => {
    const requests = range(100).map((i) => ({
      a: range(16, i * 16),
      b: range(16).map((v) => v * i),
      id: `concurrent-${i}`,
    }));
    const responses = await Promise.all(requests.map(({ a, b, id }) => rpc("ModelInfer", addSubRequest(a, b, { id }))));
    responses.forEach((response, i) => {
      const { a, b, id } = requests[i]!;
      expect(response.id).toBe(id);
      expectAddSubResponse(response, a, b);
    });
  });
});

// ---- An independent client stack: Python grpcio with stubs generated from the same protos ----

describe("Python grpcio client (independent stack)", () => {
  const PYTHON_MODULES = "import grpc, grpc_tools.protoc, numpy";

  /** Debian's python3-grpcio et al. install for /usr/bin/python3; a python3 on PATH may be another interpreter. */
  function pythonWithGrpc(): string {
    const candidates = [process.env.OPERON_TEST_PYTHON, "/usr/bin/python3", "python3"].filter(
      (candidate): candidate is string =>
        candidate !== undefined && candidate !== "" && (!candidate.startsWith("/") || existsSync(candidate)),
    );
    for (const candidate of candidates) {
      if (spawnSync(candidate, ["-c", PYTHON_MODULES], { stdio: "ignore" }).status === 0) return candidate;
    }
    throw new Error(
      `no python3 with grpc, grpc_tools and numpy (tried ${candidates.join(", ")}); install them with ` +
        "`apt-get install -y python3-grpcio python3-grpc-tools python3-numpy` (.ci/run does) or set OPERON_TEST_PYTHON",
    );
  }

  it("ServerMetadata, ModelMetadata and ModelInfer (raw contents via numpy) agree with the server", () => {
    const python = pythonWithGrpc();
    const script = join(REPO_ROOT, "e2e/python/triton_grpc_client_check.py");
    const run = spawnSync(python, [script, server.grpcAddress, "add_sub"], { encoding: "utf8", timeout: 20_000 });
    expect(run.status, `python client failed:\n${run.stdout}\n${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout.trim().split("\n").at(-1)!) as Message;
    expect(result.health).toBe("SERVING");
    expect(result.server.name).toBe("operon");
    expect(result.server.extensions).toContain("model_repository");
    expect(result.metadata).toEqual({
      name: "add_sub",
      versions: ["1"],
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
      ],
    });
    expect(result.infer.model_name).toBe("add_sub");
    expect(result.infer.model_version).toBe("1");
    expect(result.infer.id).toBe("python-1");
    expect(result.infer.matches_numpy).toBe(true);
    expect(result.infer.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [1, 16], data: range(16).map((v) => v + 0.5) },
      { name: "OUTPUT1", datatype: "FP32", shape: [1, 16], data: range(16).map((v) => v - 0.5) },
    ]);
  });
});

// ---- Last: nothing above left the server worse off ----

describe("after everything", () => {
  it("the server is still live and ready, every model is served, and no call failed unexpectedly", async () => {
    expect(await rpc("ServerLive")).toEqual({ live: true });
    expect(await rpc("ServerReady")).toEqual({ ready: true });
    expect(await rpc("Check", { service: "" }, health)).toEqual({ status: "SERVING" });
    const rows = (await rpc("RepositoryIndex", { ready: true })).models.map((m: Message) => [
      m.name,
      m.version,
      m.state,
    ]);
    expect(rows).toEqual(ALL_MODEL_VERSIONS.map(([name, version]) => [name, version, "READY"]));
    expect(server.output()).not.toMatch(/failed unexpectedly/);
  });
});
