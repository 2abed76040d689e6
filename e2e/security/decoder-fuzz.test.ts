import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR } from "../support/grpc-client.js";
import { EXAMPLE_REPOSITORY, processAlive, startOperon, type RunningOperon } from "../support/operon-process.js";
import { mutateBytes, seededRandom } from "@operon/testing/seeded-fuzz";

// A small bounded fuzz against the running server (fixed seed): mutated
// valid HTTP JSON bodies and gRPC ModelInfer messages each get a client
// error (4xx / a non-INTERNAL status) or an answer, and the server stays
// alive and ready. Before the fix a malformed gRPC message was INTERNAL.

const INPUTS = [
  { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
  { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
];

describe("decoder fuzz against the running server", () => {
  let server: RunningOperon;
  let client: grpc.Client;
  let valid: Buffer;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
    ]);
    client = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
    const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
      includeDirs: [PROTO_DIR],
    });
    const method = (
      definition["inference.GRPCInferenceService"] as unknown as Record<string, grpc.MethodDefinition<object, unknown>>
    )["ModelInfer"]!;
    valid = method.requestSerialize({
      model_name: "add_sub",
      inputs: INPUTS.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
      raw_input_contents: [
        Buffer.from(new Float32Array(16).fill(1).buffer),
        Buffer.from(new Float32Array(16).fill(2).buffer),
      ],
    });
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await server?.stop();
  });

  const rawInfer = (message: Buffer): Promise<grpc.status> =>
    new Promise((resolve) =>
      client.makeUnaryRequest(
        "/inference.GRPCInferenceService/ModelInfer",
        (b: Buffer) => b,
        (b: Buffer) => b,
        message,
        (error) => resolve(error ? error.code : grpc.status.OK),
      ),
    );

  it("answers 300 mutated HTTP bodies and 300 mutated gRPC messages with client errors, and stays ready", async () => {
    const next = seededRandom(2026);
    const body = Buffer.from(JSON.stringify({ inputs: INPUTS }));
    const httpStatuses = new Set<number>();
    for (let i = 0; i < 300; i += 1) {
      const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        body: mutateBytes(body, next),
      });
      await response.arrayBuffer();
      httpStatuses.add(response.status);
    }
    expect([...httpStatuses].filter((status) => status !== 200 && (status < 400 || status >= 500))).toEqual([]);

    expect(await rawInfer(valid)).toBe(grpc.status.OK);
    const grpcCodes = new Set<grpc.status>();
    for (let i = 0; i < 300; i += 1) grpcCodes.add(await rawInfer(mutateBytes(valid, next)));
    expect([...grpcCodes].filter((code) => code === grpc.status.INTERNAL || code === grpc.status.UNKNOWN)).toEqual([]);
    expect(grpcCodes.has(grpc.status.INVALID_ARGUMENT)).toBe(true);

    expect(processAlive(server.pid)).toBe(true);
    expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
    expect((await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, { method: "POST", body })).status).toBe(200);
  }, 120_000);
});
