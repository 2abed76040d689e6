import { cpSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR } from "./support/grpc-client.js";
import { EXAMPLE_REPOSITORY, type RunningOperon, startOperon, tempRepository } from "./support/operon-process.js";

/**
 * Every request takes the engine's one path (engine.ts prepare → dispatch),
 * whichever entry it came by. Before, `inferStream` prepared requests its
 * own way and drifted from `infer`: a decoupled model the resource
 * scheduler had parked answered "not loaded" to a stream instead of loading
 * again, and streamed requests bypassed tenant shares (that half is in
 * tenant-shares.test.ts).
 */

const post = (server: RunningOperon, path: string, body: unknown): Promise<Response> =>
  fetch(`${server.httpUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

function sseWords(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map(
      (line) => (JSON.parse(line.slice(6)) as { text_output?: string; error?: string }).text_output ?? `error: ${line}`,
    );
}

/** One ModelStreamInfer request on its own stream; the words streamed back (or the error messages). */
function grpcStreamWords(address: string, model: string, text: string): Promise<string[]> {
  const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  const client = new loaded.inference.GRPCInferenceService(address, grpc.credentials.createInsecure());
  const words: string[] = [];
  return new Promise((resolve, reject) => {
    const call = client.ModelStreamInfer();
    call.on("data", (reply: { error_message: string; infer_response: { raw_output_contents: Buffer[] } }) => {
      if (reply.error_message !== "") words.push(`error: ${reply.error_message}`);
      // One BYTES element: a 4-byte length, then the word.
      for (const raw of reply.infer_response.raw_output_contents)
        words.push(Buffer.from(raw).subarray(4).toString("utf8"));
    });
    call.on("end", () => {
      client.close();
      resolve(words);
    });
    call.on("error", reject);
    const element = Buffer.from(text, "utf8");
    const length = Buffer.alloc(4);
    length.writeUInt32LE(element.length);
    call.write({
      model_name: model,
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [1] }],
      raw_input_contents: [Buffer.concat([length, element])],
    });
    call.end();
  });
}

describe("one request path for unary and streaming requests", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    const repository = tempRepository();
    for (const name of ["text_generator", "add_sub"])
      cpSync(join(EXAMPLE_REPOSITORY, name), join(repository, name), { recursive: true });
    server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "text_generator",
      "--load-model",
      "add_sub",
    ]);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("loads a parked decoupled model again for a stream, as for a unary request", async () => {
    expect((await post(server, "/v2/operon/models/text_generator/park", {})).status).toBe(200);
    const parked = (await (await fetch(`${server.httpUrl}/v2/operon/parked`)).json()) as { models: string[] };
    expect(parked.models).toEqual(["text_generator"]);
    const response = await post(server, "/v2/models/text_generator/generate_stream", { text_input: "parked no more" });
    expect(response.status).toBe(200);
    expect(sseWords(await response.text())).toEqual(["more", "no", "parked", "done"]);
    expect(((await (await fetch(`${server.httpUrl}/v2/operon/parked`)).json()) as { models: string[] }).models).toEqual(
      [],
    );
  }, 60_000);

  it("loads a parked decoupled model again for a gRPC stream", async () => {
    expect((await post(server, "/v2/operon/models/text_generator/park", {})).status).toBe(200);
    expect(await grpcStreamWords(server.grpcAddress, "text_generator", "back again")).toEqual([
      "again",
      "back",
      "done",
    ]);
  }, 60_000);

  it("answers a unary request to a decoupled model UNSUPPORTED without counting it as a failure, and a stream to a plain model with one final response", async () => {
    const refused = await post(server, "/v2/models/text_generator/infer", {
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [1], data: ["x"] }],
    });
    expect(refused.status).toBe(501);
    const stats = (await (await fetch(`${server.httpUrl}/v2/models/text_generator/stats`)).json()) as {
      model_stats: Array<{ inference_stats: { fail: { count: number } } }>;
    };
    expect(stats.model_stats[0]!.inference_stats.fail.count).toBe(0);
    const streamed = await post(server, "/v2/models/add_sub/infer_stream", {
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
      ],
    });
    expect(streamed.status).toBe(200);
    const events = (await streamed.text()).split("\n").filter((line) => line.startsWith("data: "));
    expect(events).toHaveLength(1);
    expect((JSON.parse(events[0]!.slice(6)) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data[0]).toBe(3);
  });
});
