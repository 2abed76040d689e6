import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterEach, describe, expect, it } from "vitest";
import { GrpcInferenceClient, defaultProtoDir } from "./grpc-inference-client.js";
import type { PreparedInputSet } from "./input-data.js";

const SET: PreparedInputSet = [
  { name: "A", datatype: "FP32", shape: [1, 2], data: Buffer.from(new Float32Array([1.5, 2.5]).buffer) },
  { name: "B", datatype: "INT64", shape: [1], data: Buffer.from(new BigInt64Array([7n]).buffer) },
];

interface Received {
  id?: string;
  parameters?: Record<string, { parameter_choice?: string; [key: string]: unknown }>;
  /** The call's `authorization` metadata, added by the fake server. */
  authorization?: unknown;
  model_name: string;
  model_version: string;
  inputs: Array<{ name: string; datatype: string; shape: string[]; contents: unknown }>;
  raw_input_contents: Buffer[];
}

/** A grpc-js server built from the same protos, answering like Operon with uint64s as strings. */
async function startFakeGrpcServer(received: Received[]): Promise<{ target: string; server: grpc.Server }> {
  const definition = await protoLoader.load("grpc_service.proto", {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [defaultProtoDir()],
  });
  const server = new grpc.Server();
  const d = (count: number, ns: number) => ({ count: String(count), ns: String(ns) });
  const notFound = (name: string) => ({
    code: grpc.status.NOT_FOUND,
    details: `Request for unknown model: '${name}' is not found`,
  });
  server.addService(definition["inference.GRPCInferenceService"] as unknown as grpc.ServiceDefinition, {
    // A decoupled model's way: two responses per request, then an empty final one; model "bad" answers an error.
    ModelStreamInfer: (call: grpc.ServerDuplexStream<Received, object>) => {
      call.on("data", (request: Received) => {
        received.push(request);
        const answer = (final: boolean, error = "") =>
          call.write({
            error_message: error,
            infer_response: { id: request.id, parameters: { triton_final_response: { bool_param: final } } },
          });
        if (request.model_name === "bad") {
          answer(true, "the model failed");
          return;
        }
        answer(false);
        setTimeout(() => {
          answer(false);
          answer(true);
        }, 20);
      });
      call.on("end", () => call.end());
    },
    ModelInfer: (call: grpc.ServerUnaryCall<Received, object>, callback: grpc.sendUnaryData<object>) => {
      received.push({ ...call.request, authorization: call.metadata.get("authorization")[0] });
      callback(null, { model_name: call.request.model_name, raw_output_contents: [Buffer.alloc(4)] });
    },
    ModelMetadata: (call: grpc.ServerUnaryCall<{ name: string }, object>, callback: grpc.sendUnaryData<object>) => {
      if (call.request.name !== "toy") return callback(notFound(call.request.name));
      callback(null, {
        name: "toy",
        versions: ["3"],
        platform: "fake",
        inputs: [{ name: "A", datatype: "FP32", shape: ["-1", "2"] }],
      });
    },
    ModelConfig: (_call: unknown, callback: grpc.sendUnaryData<object>) =>
      callback(null, { config: { name: "toy", max_batch_size: 4 } }),
    ModelStatistics: (_call: unknown, callback: grpc.sendUnaryData<object>) =>
      callback(null, {
        model_stats: [
          {
            name: "toy",
            version: "3",
            inference_count: "12",
            execution_count: "6",
            inference_stats: { success: d(6, 6000), queue: d(6, 600), compute_infer: d(6, 3_000_000) },
            batch_stats: [{ batch_size: "2", compute_infer: d(6, 3_000_000) }],
          },
        ],
      }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { target: `127.0.0.1:${port}`, server };
}

describe("GrpcInferenceClient", () => {
  let server: grpc.Server | undefined;
  let client: GrpcInferenceClient | undefined;
  afterEach(() => {
    client?.close();
    server?.forceShutdown();
  });

  it("sends the prepared request with raw_input_contents, one entry per input", async () => {
    const received: Received[] = [];
    const fake = await startFakeGrpcServer(received);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy", version: "3", inputSets: [SET] });
    await client.infer();
    await client.infer();
    expect(received).toHaveLength(2);
    const request = received[0]!;
    expect(request.model_name).toBe("toy");
    expect(request.model_version).toBe("3");
    expect(request.inputs.map((input) => [input.name, input.datatype, input.shape, input.contents])).toEqual([
      ["A", "FP32", ["1", "2"], null],
      ["B", "INT64", ["1"], null],
    ]);
    expect(request.raw_input_contents).toEqual([SET[0]!.data, SET[1]!.data]);
  });

  it("sends the extra headers as call metadata", async () => {
    const received: Received[] = [];
    const fake = await startFakeGrpcServer(received);
    server = fake.server;
    client = await GrpcInferenceClient.create({
      url: fake.target,
      model: "toy",
      inputSets: [SET],
      headers: { Authorization: "Bearer opk_test" },
    });
    await client.infer();
    expect(received[0]!.authorization).toBe("Bearer opk_test");
  });

  it("normalises metadata, config and statistics (64-bit strings become numbers)", async () => {
    const fake = await startFakeGrpcServer([]);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy" });
    expect(await client.modelMetadata()).toMatchObject({
      name: "toy",
      versions: ["3"],
      inputs: [{ name: "A", datatype: "FP32", shape: [-1, 2] }],
    });
    expect(await client.modelConfig()).toEqual({
      maxBatchSize: 4,
      sequenceBatching: false,
      decoupled: false,
      responseCache: false,
    });
    const [stats] = await client.modelStatistics();
    expect(stats).toMatchObject({
      inference_count: 12,
      execution_count: 6,
      inference_stats: {
        success: { count: 6, ns: 6000 },
        queue: { count: 6, ns: 600 },
        compute_output: { count: 0, ns: 0 },
      },
      batch_stats: [{ batch_size: 2, compute_infer: { count: 6, ns: 3_000_000 } }],
    });
  });

  it("maps NOT_FOUND to MODEL_NOT_FOUND and a closed port to UNREACHABLE", async () => {
    const fake = await startFakeGrpcServer([]);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "nope" });
    await expect(client.modelMetadata()).rejects.toMatchObject({
      code: "MODEL_NOT_FOUND",
      message: expect.stringContaining("model 'nope'"),
    });
    client.close();
    server.forceShutdown();
    server = undefined;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy" });
    await expect(client.modelMetadata()).rejects.toMatchObject({
      code: "UNREACHABLE",
      message: expect.stringContaining(`cannot connect to the gRPC server at ${fake.target}`),
    });
  });

  it("sends a priority with every inference as a uint64 parameter, beside the perf-traffic tag", async () => {
    const received: Received[] = [];
    const fake = await startFakeGrpcServer(received);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy", inputSets: [SET], priority: 3 });
    await client.infer();
    expect(received[0]!.parameters!["priority"]).toMatchObject({ uint64_param: "3" });
    expect(received[0]!.parameters!["operon_traffic"]).toMatchObject({ string_param: "perf" });
  });

  it("adds a sequence request's controls to the prepared message as uint64 and bool parameters", async () => {
    const received: Received[] = [];
    const fake = await startFakeGrpcServer(received);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy", inputSets: [SET] });
    await client.infer({ id: 18446744073709551615n, start: true, end: false });
    await client.infer();
    const [withSequence, plain] = received;
    expect(withSequence!.parameters!["sequence_id"]).toMatchObject({ uint64_param: "18446744073709551615" });
    expect(withSequence!.parameters!["sequence_start"]).toMatchObject({ bool_param: true });
    expect(withSequence!.parameters!["sequence_end"]).toMatchObject({ bool_param: false });
    // The tensors and the perf-traffic tag are still there, and the prepared request itself is unchanged.
    expect(withSequence!.raw_input_contents).toEqual([SET[0]!.data, SET[1]!.data]);
    expect(Object.keys(withSequence!.parameters!).sort()).toEqual([
      "operon_traffic",
      "sequence_end",
      "sequence_id",
      "sequence_start",
    ]);
    expect(Object.keys(plain!.parameters!)).toEqual(["operon_traffic"]);
  });

  it("--streaming: each request completes at its final response on one shared stream; an error response rejects it", async () => {
    const received: Received[] = [];
    const fake = await startFakeGrpcServer(received);
    server = fake.server;
    client = await GrpcInferenceClient.create({ url: fake.target, model: "toy", inputSets: [SET], streaming: true });
    const started = performance.now();
    await Promise.all([client.infer(), client.infer({ id: 3n, start: true, end: true })]);
    // Not at the first response: the final one comes 20 ms later.
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    expect(received.map((request) => request.id)).toEqual(["perf-0", "perf-1"]);
    expect(received[0]!.parameters!["triton_enable_empty_final_response"]).toMatchObject({ bool_param: true });
    expect(received[1]!.parameters!["sequence_id"]).toMatchObject({ uint64_param: "3" });
    client.close();

    client = await GrpcInferenceClient.create({ url: fake.target, model: "bad", inputSets: [SET], streaming: true });
    await expect(client.infer()).rejects.toThrow("the model failed");
    client.close();
    await expect(client.infer()).rejects.toThrow(/closed/);
  });
});
