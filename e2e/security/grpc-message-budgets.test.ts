import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR } from "../support/grpc-client.js";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "../support/model-fixtures.js";
import { type RunningOperon, startOperon, tempRepository } from "../support/operon-process.js";

// Issue 28, critical items 1 and 2. One ModelStreamInfer message of 24 M
// nested entries (46 MB) took the gateway to 5.3 GB and killed it: stream
// messages were decoded on the event loop with only their top-level
// entries counted. A 136 MB RepositoryModelLoad of 16 M map entries was
// decoded before its key was checked. Now every message is held to its
// size limit and an entry budget that counts nested entries before a byte
// is decoded, stream messages are decoded as unary ones are (on the
// decode pool when large), and non-inference RPCs are decoded after the
// key check.

const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});
const service = definition["inference.GRPCInferenceService"] as unknown as Record<
  string,
  grpc.MethodDefinition<any, any>
>;
const encode = (method: string, message: object): Buffer => service[method]!.requestSerialize(message);

const varint = (value: number): Buffer => {
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return Buffer.from(bytes);
};
const field = (number: number, payload: Buffer): Buffer =>
  Buffer.concat([varint(number * 8 + 2), varint(payload.length), payload]);
const text = (value: string): Buffer => Buffer.from(value, "utf8");

/** An add_sub request whose one input holds `body` (raw InferInputTensor fields) after its name and datatype. */
function requestWithInput(id: string, inputBody: Buffer): Buffer {
  const input = Buffer.concat([field(1, text("INPUT0")), field(2, text("BYTES")), inputBody]);
  return Buffer.concat([field(1, text("add_sub")), field(3, text(id)), field(5, input)]);
}

type StreamReply = { error_message: string; infer_response: { id: string; raw_output_contents: Buffer[] } };

/** Sends raw ModelStreamInfer messages on one stream, half-closes, and collects the replies. */
function streamRaw(
  address: string,
  messages: Buffer[],
  metadata = new grpc.Metadata(),
): Promise<{ replies: StreamReply[]; status: grpc.StatusObject }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": -1 });
  const call = client.makeBidiStreamRequest(
    "/inference.GRPCInferenceService/ModelStreamInfer",
    (value: Buffer) => value,
    service["ModelStreamInfer"]!.responseDeserialize as (bytes: Buffer) => StreamReply,
    metadata,
  );
  const replies: StreamReply[] = [];
  call.on("data", (reply: StreamReply) => replies.push(reply));
  return new Promise((resolve) => {
    call.on("status", (status) => {
      client.close();
      resolve({ replies, status });
    });
    call.on("error", () => undefined);
    for (const message of messages) call.write(message);
    call.end();
  });
}

function unaryRaw(
  address: string,
  method: string,
  message: Buffer,
  metadata = new grpc.Metadata(),
): Promise<{ code: number; details: string }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": -1 });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      `/inference.GRPCInferenceService/${method}`,
      (value: Buffer) => value,
      (value: Buffer) => value,
      message,
      metadata,
      (error) => {
        client.close();
        resolve(error ? { code: error.code, details: error.details } : { code: grpc.status.OK, details: "" });
      },
    );
  });
}

const f32 = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);

async function expectStillServing(server: RunningOperon): Promise<void> {
  expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
  const reply = await unaryRaw(
    server.grpcAddress,
    "ModelInfer",
    encode("ModelInfer", {
      model_name: "add_sub",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
      ],
      raw_input_contents: [f32(new Array(16).fill(1)), f32(new Array(16).fill(2))],
    }),
  );
  expect(reply.code).toBe(grpc.status.OK);
}

describe("gRPC stream messages get the unary budget", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
    server = await startOperon(["--model-repository", repository]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses a stream message whose shape holds millions of entries, naming the request, and keeps the stream and the server", async () => {
    // 3 M unpacked shape entries (2 bytes each): 3 M strings once decoded.
    const shape = Buffer.alloc(3_000_000 * 2);
    for (let i = 0; i < shape.length; i += 2) (shape[i] = 0x18), (shape[i + 1] = 0x01);
    const good = encode("ModelStreamInfer", {
      model_name: "add_sub",
      id: "after",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
      ],
      raw_input_contents: [f32(new Array(16).fill(3)), f32(new Array(16).fill(1))],
    });
    const { replies, status } = await streamRaw(server.grpcAddress, [requestWithInput("deep-shape", shape), good]);
    expect(status.code).toBe(grpc.status.OK);
    const refused = replies.find((reply) => reply.infer_response.id === "deep-shape");
    expect(refused?.error_message).toMatch(/an input whose shape has more than 64 dimensions/);
    const answered = replies.find((reply) => reply.infer_response.id === "after");
    expect(answered?.error_message).toBe("");
    expect(new Float32Array(new Uint8Array(answered!.infer_response.raw_output_contents[0]!).buffer)[0]).toBe(4);
    await expectStillServing(server);
  });

  it("refuses a stream message of millions of bytes_contents entries", async () => {
    const contents = Buffer.alloc(2_000_000 * 2);
    for (let i = 0; i < contents.length; i += 2) (contents[i] = 0x42), (contents[i + 1] = 0x00);
    const { replies } = await streamRaw(server.grpcAddress, [
      requestWithInput("many-strings", Buffer.concat([field(3, varint(1)), field(5, contents)])),
    ]);
    expect(replies).toHaveLength(1);
    expect(replies[0]!.infer_response.id).toBe("many-strings");
    expect(replies[0]!.error_message).toMatch(/more than 1048576 BYTES elements/);
    await expectStillServing(server);
  });

  it("refuses millions of packed typed contents elements", async () => {
    const packed = Buffer.alloc(9_000_000, 0x01); // 9 M one-byte varints in int_contents
    const { replies } = await streamRaw(server.grpcAddress, [
      requestWithInput("packed", Buffer.concat([field(3, varint(1)), field(5, field(2, packed))])),
    ]);
    expect(replies[0]!.error_message).toMatch(/more than 8388608 elements in typed 'contents'/);
  });

  it("decodes a large valid stream message off the event loop, keeping its stream parameters, in order with a small one", async () => {
    const large = encode("ModelStreamInfer", {
      model_name: "add_sub",
      id: "x".repeat(300_000),
      parameters: { triton_enable_empty_final_response: { bool_param: true } },
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
      ],
      raw_input_contents: [f32(new Array(16).fill(1)), f32(new Array(16).fill(2))],
    });
    const small = encode("ModelStreamInfer", {
      model_name: "add_sub",
      id: "small",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
      ],
      raw_input_contents: [f32(new Array(16).fill(5)), f32(new Array(16).fill(2))],
    });
    const { replies } = await streamRaw(server.grpcAddress, [large, small]);
    expect(replies.map((reply) => reply.error_message)).toEqual(["", ""]);
    const ids = replies.map((reply) => reply.infer_response.id.slice(0, 5));
    expect(ids.sort()).toEqual(["small", "xxxxx"]);
  });

  it("refuses a RepositoryModelLoad of thousands of parameters before decoding them", async () => {
    const parameters = new Array(2_000)
      .fill(0)
      .map((_, i) => field(3, Buffer.concat([field(1, text(`file:1/f${i}`)), field(2, field(4, Buffer.alloc(1)))])));
    const reply = await unaryRaw(
      server.grpcAddress,
      "RepositoryModelLoad",
      Buffer.concat([field(2, text("add_sub")), ...parameters]),
    );
    expect(reply.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(reply.details).toMatch(/more than 1024 parameters/);
    await expectStillServing(server);
  });

  it("holds the other RPCs' messages to 1 MiB", async () => {
    const reply = await unaryRaw(server.grpcAddress, "ModelMetadata", field(1, Buffer.alloc(2 * 1024 * 1024, 0x61)));
    expect(reply.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(reply.details).toMatch(/ModelMetadata message of \d+ bytes exceeds the limit of 1048576 bytes/);
    const open = await unaryRaw(server.grpcAddress, "ServerLive", field(15, Buffer.alloc(2 * 1024 * 1024)));
    expect(open.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe("gRPC messages are decoded after the key check", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
    server = await startOperon(["--model-repository", repository, "--require-api-key"]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("answers a keyless RepositoryModelLoad UNAUTHENTICATED without decoding it", async () => {
    // Not a valid message at all: decoding it first would answer a decode error, not the missing key.
    const garbage = Buffer.concat([field(2, text("add_sub")), Buffer.from([0xff, 0xff, 0xff])]);
    const reply = await unaryRaw(server.grpcAddress, "RepositoryModelLoad", garbage);
    expect(reply.code).toBe(grpc.status.UNAUTHENTICATED);
    const wrongKey = new grpc.Metadata();
    wrongKey.set("authorization", "Bearer op_not_a_key");
    const withBadKey = await unaryRaw(server.grpcAddress, "ModelConfig", garbage, wrongKey);
    expect(withBadKey.code).toBe(grpc.status.UNAUTHENTICATED);
  });
});
