import { request as httpRequest } from "node:http";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { grpcClient } from "./support/grpc-client.js";
import { type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * No single request stalls or sinks the server (README "Limits"): bodies
 * that would cost seconds of parsing or gigabytes of heap are refused with
 * a clear 4xx / RESOURCE_EXHAUSTED, and the server stays ready and serving.
 * (How long others wait meanwhile is measured in `npm run bench`.)
 */

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
  ],
});

async function post(
  server: RunningOperon,
  path: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
): Promise<{ status: number; error: string | undefined }> {
  const response = await fetch(`${server.httpUrl}${path}`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
  });
  const text = await response.text();
  let error: string | undefined;
  try {
    error = (JSON.parse(text) as { error?: string }).error;
  } catch {
    error = text;
  }
  return { status: response.status, error };
}

async function expectStillServing(server: RunningOperon): Promise<void> {
  expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
  expect((await post(server, "/v2/models/add_sub/infer", ADD_SUB_BODY)).status).toBe(200);
}

/** `count` empty `inputs` entries (field 5, length 0) after model_name: a few bytes each, one object each when decoded. */
function manyEmptyInputsMessage(count: number): Buffer {
  const name = Buffer.from("add_sub");
  return Buffer.concat([Buffer.from([0x0a, name.length]), name, Buffer.alloc(count * 2, Buffer.from([0x2a, 0x00]))]);
}

function modelInferRaw(address: string, message: Buffer): Promise<{ code: number; details: string }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": -1 });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/inference.GRPCInferenceService/ModelInfer",
      (value: Buffer) => value,
      (value: Buffer) => value,
      message,
      (error) => {
        client.close();
        resolve(error ? { code: error.code, details: error.details } : { code: grpc.status.OK, details: "" });
      },
    );
  });
}

describe("request limits", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
    server = await startOperon([
      "--model-repository",
      repository,
      "--http-max-body-bytes",
      String(32 * 1024 * 1024),
      "--grpc-infer-max-message-bytes",
      String(8 * 1024 * 1024),
    ]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses a JSON body of millions of empty objects before parsing it, and keeps serving", async () => {
    const body = `{"inputs":[${new Array(4_000_000).fill("{}").join(",")}]}`; // 12 MB
    const reply = await post(server, "/v2/models/add_sub/infer", body);
    expect(reply.status).toBe(400);
    expect(reply.error).toMatch(/more than 1000000 objects and arrays/);
    await expectStillServing(server);
  });

  it("refuses JSON nested deeper than the budget", async () => {
    const reply = await post(
      server,
      "/v2/models/add_sub/infer",
      `{"inputs":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
    );
    expect(reply.status).toBe(400);
    expect(reply.error).toMatch(/nested deeper than 64 levels/);
    await expectStillServing(server);
  });

  it("refuses a huge binary-data JSON header the same way", async () => {
    const header = Buffer.from(`{"inputs":[${new Array(2_000_000).fill("{}").join(",")}]}`);
    const reply = await post(server, "/v2/models/add_sub/infer", Buffer.concat([header, Buffer.alloc(64)]), {
      "content-type": "application/octet-stream",
      "inference-header-content-length": String(header.length),
    });
    expect(reply.status).toBe(400);
    expect(reply.error).toMatch(/more than 1000000 objects and arrays/);
    await expectStillServing(server);
  });

  it("refuses a body over --http-max-body-bytes with 413 before reading it", async () => {
    // Expect: 100-continue, as curl sends for large bodies: the 413 comes before a byte of the body is sent.
    const body = Buffer.alloc(33 * 1024 * 1024, 0x20);
    const reply = await new Promise<{ status: number; text: string; bodySent: boolean }>((resolve, reject) => {
      let bodySent = false;
      const request = httpRequest(`${server.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": body.length, expect: "100-continue" },
      });
      request.on("continue", () => {
        bodySent = true;
        request.end(body);
      });
      request.on("response", (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => (text += chunk.toString()));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text, bodySent }));
      });
      request.on("error", reject);
    });
    expect(reply).toMatchObject({ status: 413, bodySent: false });
    expect(JSON.parse(reply.text).error).toMatch(/exceeds the limit of 33554432 bytes/);
    await expectStillServing(server);
  });

  it("decodes a large valid JSON body off the event loop and answers it", async () => {
    // 64 KiB and more go to the decode pool: padding in the id makes this ~200 KB.
    const body = JSON.stringify({ id: "x".repeat(200_000), ...JSON.parse(ADD_SUB_BODY) });
    const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, { method: "POST", body });
    expect(response.status).toBe(200);
    const json = (await response.json()) as { id: string; outputs: Array<{ name: string; data: number[] }> };
    expect(json.id).toHaveLength(200_000);
    expect(json.outputs.map((output) => [output.name, output.data[0]])).toEqual([
      ["OUTPUT0", 3],
      ["OUTPUT1", -1],
    ]);
  });

  it("decodes a large valid gRPC ModelInfer off the event loop and answers it", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      // 300 KB (a long request id), so the message goes to the decode pool.
      const reply = await client.call("ModelInfer", {
        model_name: "add_sub",
        id: "y".repeat(300_000),
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
        ],
        raw_input_contents: [
          Buffer.from(new Float32Array(16).fill(1).buffer),
          Buffer.from(new Float32Array(16).fill(2).buffer),
        ],
      });
      expect(reply.id).toHaveLength(300_000);
      expect(new Float32Array(new Uint8Array(reply.raw_output_contents[0]).buffer)[0]).toBe(3);
      expect(new Float32Array(new Uint8Array(reply.raw_output_contents[1]).buffer)[0]).toBe(-1);
    } finally {
      client.close();
    }
  });

  it("answers a gRPC ModelInfer with millions of empty inputs RESOURCE_EXHAUSTED without decoding it", async () => {
    const reply = await modelInferRaw(server.grpcAddress, manyEmptyInputsMessage(3_000_000)); // 6 MB
    expect(reply.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(reply.details).toMatch(/more than 1024 inputs/);
    await expectStillServing(server);
  });

  it("answers a gRPC ModelInfer over --grpc-infer-max-message-bytes RESOURCE_EXHAUSTED", async () => {
    const reply = await modelInferRaw(server.grpcAddress, manyEmptyInputsMessage(5_000_000)); // 10 MB
    expect(reply.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(reply.details).toMatch(/exceeds the limit of 8388608 bytes/);
    await expectStillServing(server);
  });
});
