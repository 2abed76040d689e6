import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { decodeBytesElements } from "@operon/protocol/tensor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR } from "./support/grpc-client.js";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import {
  EXAMPLE_REPOSITORY,
  startOperon,
  tempRepository,
  workerProcesses,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * Decoupled streaming and BLS through the real `operon serve`: the example
 * text_generator over gRPC ModelStreamInfer, SSE generate_stream and
 * infer_stream; the example bls_scaler calling add_sub; and the faults of
 * TypeScript models (a decoupled model that never sends its final flag, a
 * model that throws, one stuck in while(true){}), with a BLS copy whose
 * add_sub batches, and a model that calls itself, for the BLS depth guard.
 *
 * One server serves the example repository (explicit mode: only the
 * models used here) and a temporary one with the fault models.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */
type Message = any;

const FORGETFUL = `export default class {
  execute(requests, ctx) {
    // Decoupled: one response, and never the final flag.
    for (const request of requests) request.sender.send({ outputs: [ctx.tensor.bytes("OUT", [1], ["only"])] });
  }
}
`;

const THROWER = `export default class {
  execute(requests, ctx) {
    const mode = requests[0].input("MODE").toStrings()[0];
    if (mode === "throw") throw new Error("thrower exploded");
    if (mode === "invalid") throw ctx.error("INVALID_ARG", "thrower says MODE is invalid");
    return requests.map(() => ({ outputs: [ctx.tensor.bytes("OUT", [1], ["ok"])] }));
  }
}
`;

const SPINNER = `export default class {
  execute(requests, ctx) {
    if (requests[0].input("MODE").toStrings()[0] === "spin") while (true) {}
    return requests.map(() => ({ outputs: [ctx.tensor.bytes("OUT", [1], ["ok"])] }));
  }
}
`;

/** Calls itself with N - 1 until N is 0; DEPTH = how many calls deep the answer came from. */
const COUNTDOWN = `export default class {
  execute(requests, ctx) {
    return Promise.all(requests.map(async (request) => {
      const n = request.input("N").toNumbers()[0];
      if (n <= 0) return { outputs: [ctx.tensor.int32("DEPTH", [1], [0])] };
      const result = await ctx.infer("countdown", [ctx.tensor.int32("N", [1], [n - 1])]);
      if (result.error !== undefined) return ctx.error(result.error.kind, result.error.message);
      return { outputs: [ctx.tensor.int32("DEPTH", [1], [result.outputs.get("DEPTH").toNumbers()[0] + 1])] };
    }));
  }
}
`;

const modeConfig = (name: string, extra = ""): string => `
name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "MODE", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_STRING, dims: [ 1 ] } ]
${extra}
`;

function writeTsModel(repository: string, name: string, source: string, config: string, file = "model.js"): void {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  writeFileSync(join(repository, name, "1", file), source);
  writeFileSync(join(repository, name, "config.pbtxt"), config);
}

function buildRepository(): string {
  const repository = tempRepository("operon-e2e-streaming-");
  writeTsModel(
    repository,
    "forgetful",
    FORGETFUL,
    `${modeConfig("forgetful", 'model_transaction_policy { decoupled: true }\nparameters { key: "decoupled_final_timeout_ms" value: { string_value: "500" } }')}`,
  );
  writeTsModel(repository, "thrower", THROWER, modeConfig("thrower"));
  writeTsModel(
    repository,
    "spinner",
    SPINNER,
    modeConfig("spinner", 'parameters { key: "execute_timeout_ms" value: { string_value: "1000" } }'),
  );
  writeTsModel(
    repository,
    "countdown",
    COUNTDOWN,
    `
name: "countdown"
backend: "typescript"
max_batch_size: 0
input [ { name: "N", data_type: TYPE_INT32, dims: [ 1 ] } ]
output [ { name: "DEPTH", data_type: TYPE_INT32, dims: [ 1 ] } ]
# Each level of the recursion holds an instance while it waits for the next.
instance_group [ { count: 3, kind: KIND_CPU } ]
`,
  );
  // add_sub with a dynamic batcher that waits 20 ms, and a bls_scaler that calls it.
  writeModel(repository, "add_sub_batched", addSubModel(), {
    config: ADD_SUB_CONFIG("add_sub_batched", "dynamic_batching { max_queue_delay_microseconds: 20000 }"),
  });
  // text_generator with a pause between words: its streams last long enough to overlap.
  const generator = join(EXAMPLE_REPOSITORY, "text_generator");
  const slowConfig = readFileSync(join(generator, "config.pbtxt"), "utf8")
    .replace('name: "text_generator"', 'name: "text_generator_slow"')
    .replace(
      'key: "token_delay_ms" value { string_value: "0" }',
      'key: "token_delay_ms" value { string_value: "150" }',
    );
  if (!slowConfig.includes('string_value: "150"'))
    throw new Error("text_generator's config changed: set token_delay_ms for text_generator_slow another way");
  writeTsModel(repository, "text_generator_slow", readFileSync(join(generator, "1/model.js"), "utf8"), slowConfig);
  const scaler = join(EXAMPLE_REPOSITORY, "bls_scaler");
  writeTsModel(
    repository,
    "bls_scaler_batched",
    readFileSync(join(scaler, "1/model.ts"), "utf8"),
    readFileSync(join(scaler, "config.pbtxt"), "utf8")
      .replace('name: "bls_scaler"', 'name: "bls_scaler_batched"')
      .replace('string_value: "add_sub"', 'string_value: "add_sub_batched"'),
    "model.ts",
  );
  return repository;
}

const LOADED = [
  "text_generator",
  "text_generator_slow",
  "add_sub",
  "bls_scaler",
  "forgetful",
  "thrower",
  "spinner",
  "countdown",
  "add_sub_batched",
  "bls_scaler_batched",
];

let server: RunningOperon;
let inference: grpc.Client & Record<string, any>;

beforeAll(async () => {
  const repository = buildRepository();
  server = await startOperon([
    "--model-repository",
    EXAMPLE_REPOSITORY,
    "--model-repository",
    repository,
    "--model-control-mode",
    "explicit",
    ...LOADED.flatMap((name) => ["--load-model", name]),
  ]);
  const protoDir = PROTO_DIR;
  const definition = protoLoader.loadSync(join(protoDir, "grpc_service.proto"), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [protoDir],
  });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  inference = new loaded.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure());
});

afterAll(async () => {
  inference?.close();
  await server?.stop();
});

// ---- helpers ----

function post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.httpUrl}${path}`, {
    method: "POST",
    body: JSON.stringify(body),
    ...(signal !== undefined ? { signal } : {}),
  });
}

/** The `data:` events of a text/event-stream body, in order, parsed. */
function sseEvents(text: string): any[] {
  return text
    .split("\n\n")
    .filter((chunk) => chunk !== "")
    .map((chunk) => {
      expect(chunk.startsWith("data: ")).toBe(true);
      return JSON.parse(chunk.slice("data: ".length));
    });
}

const modeRequest = (mode: string) => ({ inputs: [{ name: "MODE", datatype: "BYTES", shape: [1], data: [mode] }] });

async function stats(model: string): Promise<any> {
  const body = (await (await fetch(`${server.httpUrl}/v2/models/${model}/stats`)).json()) as any;
  return body.model_stats[0];
}

function fp32Request(values: number[][], parameters?: Record<string, unknown>): object {
  return {
    ...(parameters !== undefined ? { parameters } : {}),
    inputs: [{ name: "INPUT0", datatype: "FP32", shape: [values.length, 16], data: values.flat() }],
  };
}

const ramp = (offset: number) => Array.from({ length: 16 }, (_, i) => offset + i - 8);

// ---- decoupled streaming ----

describe("text_generator (decoupled) over gRPC ModelStreamInfer", () => {
  it("writes every response in order with its id, marked triton_final_response; the empty final only when asked", async () => {
    const stream = inference["ModelStreamInfer"]() as grpc.ClientDuplexStream<object, Message>;
    const replies: Message[] = [];
    const status = new Promise<grpc.StatusObject>((resolve, reject) => {
      stream.on("data", (reply: Message) => replies.push(reply));
      stream.on("status", resolve);
      stream.on("error", reject);
    });
    const prompt = (id: string, text: string, parameters: object = {}, maxTokens?: number) => ({
      model_name: "text_generator",
      id,
      parameters,
      inputs: [
        { name: "text_input", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(text)] } },
        ...(maxTokens !== undefined
          ? [{ name: "max_tokens", datatype: "INT32", shape: [1], contents: { int_contents: [maxTokens] } }]
          : []),
      ],
    });
    stream.write(prompt("plain", "one two three"));
    stream.write(prompt("with-final", "alpha beta", { triton_enable_empty_final_response: { bool_param: true } }));
    stream.write(prompt("capped", "a b c d e", {}, 2));
    stream.end();
    expect((await status).code).toBe(grpc.status.OK);

    const responses = (id: string) =>
      replies
        .filter((reply) => reply.infer_response.id === id)
        .map((reply) => {
          expect(reply.error_message).toBe("");
          const response = reply.infer_response;
          const text = response.raw_output_contents.map((data: Buffer) => decodeBytesElements(data)[0]!.toString())[0];
          return [text ?? null, response.parameters.triton_final_response.bool_param];
        });
    expect(responses("plain")).toEqual([
      ["three", false],
      ["two", false],
      ["one", false],
      ["done", false],
    ]);
    expect(responses("with-final")).toEqual([
      ["beta", false],
      ["alpha", false],
      ["done", false],
      [null, true],
    ]);
    expect(responses("capped")).toEqual([
      ["e", false],
      ["d", false],
      ["done", false],
    ]);
  });

  it("unary inference on it answers UNIMPLEMENTED (gRPC) and 501 (HTTP) with Triton's reason", async () => {
    const message =
      "model 'text_generator' is decoupled: use ModelStreamInfer (gRPC) or generate_stream / infer_stream (HTTP)";
    const error = await new Promise<grpc.ServiceError>((resolve, reject) =>
      inference["ModelInfer"](
        {
          model_name: "text_generator",
          inputs: [
            { name: "text_input", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("x")] } },
          ],
        },
        (failure: grpc.ServiceError | null) => (failure ? resolve(failure) : reject(new Error("ModelInfer succeeded"))),
      ),
    );
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(error.details).toBe(message);
    const response = await post("/v2/models/text_generator/infer", {
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [1], data: ["x"] }],
    });
    expect(response.status).toBe(501);
    expect(await response.json()).toEqual({ error: message, kind: "UNSUPPORTED" });
  });
});

describe("text_generator over HTTP server-sent events", () => {
  it("generate_stream: one event per response, in order", async () => {
    const response = await post("/v2/models/text_generator/generate_stream", {
      id: "sse-1",
      text_input: "hello big world",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(sseEvents(await response.text())).toEqual(
      ["world", "big", "hello", "done"].map((word) => ({
        model_name: "text_generator",
        model_version: "1",
        id: "sse-1",
        text_output: word,
      })),
    );
  });

  it("generate: exactly one response, else 501", async () => {
    const one = await post("/v2/models/text_generator/generate", { text_input: "hello world", max_tokens: 0 });
    expect(await one.json()).toEqual({ model_name: "text_generator", model_version: "1", text_output: "done" });
    const many = await post("/v2/models/text_generator/generate", { text_input: "hello world" });
    expect(many.status).toBe(501);
    expect(((await many.json()) as { error: string }).error).toMatch(
      /sent more than one response; generate answers with exactly one: use generate_stream/,
    );
  });

  it("infer_stream: KServe v2 JSON responses as events, the last one final", async () => {
    const response = await post("/v2/models/text_generator/infer_stream", {
      id: "is-1",
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [1], data: ["x y"] }],
    });
    const events = sseEvents(await response.text());
    expect(
      events.map((event) => [event.outputs[0]?.data[0] ?? null, event.parameters.triton_final_response, event.id]),
    ).toEqual([
      ["y", false, "is-1"],
      ["x", false, "is-1"],
      ["done", false, "is-1"],
      [null, true, "is-1"],
    ]);
    expect(events[0].outputs[0]).toEqual({ name: "text_output", datatype: "BYTES", shape: [1], data: ["y"] });
  });

  it("an instance takes the next request once execute returns (Triton), while earlier streams still run", async () => {
    const started = Date.now();
    const stream = async (id: string): Promise<number[]> => {
      const response = await post("/v2/models/text_generator_slow/generate_stream", { id, text_input: "a b c" });
      const reader = response.body!.getReader();
      const arrivals: number[] = [];
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        const events = Buffer.from(chunk.value)
          .toString()
          .split("\n\n")
          .filter((event) => event !== "");
        for (const _event of events) arrivals.push(Date.now() - started);
      }
      return arrivals;
    };
    // One instance; each stream sends 4 responses 150 ms apart.
    const [first, second] = await Promise.all([stream("first"), stream("second")]);
    expect(first).toHaveLength(4);
    expect(second).toHaveLength(4);
    // Held until the final response, the second stream could only start after the first ended.
    expect(second[0]!).toBeLessThan(first[3]!);
    expect(Math.max(first[3]!, second[3]!)).toBeLessThan(4 * 150 + 400);
  });

  it("a model's error inside the stream is an error event; before any response, a plain error status", async () => {
    const inside = await post("/v2/models/text_generator/generate_stream", { text_input: "x", max_tokens: -1 });
    expect(inside.status).toBe(200);
    expect(sseEvents(await inside.text())).toEqual([{ error: "max_tokens must be >= 0, got -1" }]);
    const before = await post("/v2/models/text_generator/generate_stream", { max_tokens: 1 });
    expect(before.status).toBe(400);
    expect(((await before.json()) as { error: string }).error).toMatch(/missing: 'text_input'/);
  });

  it("a decoupled model that never sends its final flag: the client is released with an error and the server logs it", async () => {
    const started = Date.now();
    const response = await post("/v2/models/forgetful/infer_stream", modeRequest("x"));
    const events = sseEvents(await response.text());
    expect(Date.now() - started).toBeLessThan(5000);
    expect(events).toHaveLength(2);
    expect(events[0].outputs[0].data).toEqual(["only"]);
    expect(events[0].parameters.triton_final_response).toBe(false);
    expect(events[1].error).toMatch(
      /^model 'forgetful' did not send the final response for request \d+ within 500 ms$/,
    );
    await server.waitForOutput(
      /"model":"forgetful"[^\n]*"msg":"model did not send the final response; ending the request"/,
      5000,
    );
    expect((await stats("forgetful")).inference_stats.fail.count).toBe(1);
  });
});

describe("a client that disconnects from a stream", () => {
  it("cancels its request: the stream ends for it at once and the request counts as CANCELED", async () => {
    const controller = new AbortController();
    const response = await post("/v2/models/forgetful/generate_stream", { MODE: "x" }, controller.signal);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe(
      'data: {"model_name":"forgetful","model_version":"1","OUT":"only"}\n\n',
    );
    controller.abort();
    const canceled = async (): Promise<number> => {
      const text = await (await fetch(server.metricsUrl)).text();
      const line = text
        .split("\n")
        .find(
          (row) =>
            row.startsWith("nv_inference_request_failure{") &&
            row.includes('model="forgetful"') &&
            row.includes('reason="CANCELED"'),
        );
      return line === undefined ? 0 : Number(line.split(" ").pop());
    };
    // Counted when the model is done with it (here: its final-flag timeout, 500 ms).
    await expect.poll(canceled, { timeout: 5000 }).toBe(1);
    expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
  });
});

// ---- faults of TypeScript models ----

describe("TypeScript model faults", () => {
  it("a model that throws fails only its request (500, or 400 for its INVALID_ARG) and the server stays ready", async () => {
    const thrown = await post("/v2/models/thrower/infer", modeRequest("throw"));
    expect(thrown.status).toBe(500);
    expect(await thrown.json()).toEqual({
      error: "model 'thrower' execute failed: thrower exploded",
      kind: "INTERNAL",
    });
    const invalid = await post("/v2/models/thrower/infer", modeRequest("invalid"));
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({ error: "thrower says MODE is invalid", kind: "INVALID_ARG" });
    const ok = await post("/v2/models/thrower/infer", modeRequest("fine"));
    expect(ok.status).toBe(200);
    expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
  });

  it("a model stuck in while(true){} fails its request 503 within seconds; the worker is restarted and serves the next one", async () => {
    const before = workerProcesses(server.pid).find((worker) => worker.instance === "spinner_0")?.pid;
    expect(before).toBeDefined();
    const started = Date.now();
    const stuck = await post("/v2/models/spinner/infer", modeRequest("spin"));
    expect(stuck.status).toBe(503);
    expect(await stuck.json()).toEqual({
      error: "model 'spinner' execute timed out after 1000 ms",
      kind: "UNAVAILABLE",
    });
    expect(Date.now() - started).toBeLessThan(5000);
    await server.waitForOutput(/"model":"spinner"[^\n]*"msg":"backend worker restarted"/, 10_000);
    const next = await post("/v2/models/spinner/infer", modeRequest("fine"));
    expect(next.status).toBe(200);
    const after = workerProcesses(server.pid).find((worker) => worker.instance === "spinner_0")?.pid;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });
});

// ---- BLS ----

describe("BLS", () => {
  it("bls_scaler answers (x + 1) * (x - 1) from two add_sub calls, which add_sub's statistics show", async () => {
    const before = await stats("add_sub");
    const response = await post("/v2/models/bls_scaler/infer", fp32Request([ramp(0), ramp(3)]));
    expect(response.status).toBe(200);
    const body = (await response.json()) as any;
    expect(body.outputs[0].shape).toEqual([2, 16]);
    expect(body.outputs[0].data).toEqual([...ramp(0), ...ramp(3)].map((x) => x * x - 1));
    const after = await stats("add_sub");
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(2);
    expect(after.inference_count - before.inference_count).toBe(4); // two calls of batch 2
  });

  it("concurrent BLS calls are batched by the called model's dynamic batcher", async () => {
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => post("/v2/models/bls_scaler_batched/infer", fp32Request([ramp(i)]))),
    );
    for (const [i, response] of responses.entries()) {
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).outputs[0].data).toEqual(ramp(i).map((x) => x * x - 1));
    }
    const called = await stats("add_sub_batched");
    expect(called.inference_count).toBe(16); // 8 requests x 2 calls, one row each
    // bls_scaler_batched batches its own requests too (each execution calls add_sub twice, with all its rows);
    // fewer add_sub executions than add_sub requests means distinct BLS calls were joined.
    expect(called.execution_count).toBeLessThan(called.inference_stats.success.count);
    expect(Math.max(...called.batch_stats.map((batch: any) => Number(batch.batch_size)))).toBeGreaterThan(1);
  });

  it("refuses calls beyond BLS depth 8 with INVALID_ARG, which fails the caller's request (400)", async () => {
    // The request's own depth (operon_bls_depth) plus one for each call: 7 -> calls at 8 are fine, 8 -> calls at 9 are not.
    const deep = await post("/v2/models/bls_scaler/infer", fp32Request([ramp(0)], { operon_bls_depth: 7 }));
    expect(deep.status).toBe(200);
    const tooDeep = await post("/v2/models/bls_scaler/infer", fp32Request([ramp(0)], { operon_bls_depth: 8 }));
    expect(tooDeep.status).toBe(400);
    expect(((await tooDeep.json()) as { error: string }).error).toBe(
      "bls_scaler: calling 'add_sub' failed: BLS depth limit exceeded: a call to model 'add_sub' at BLS depth 9, beyond the limit of 8 (does a model call itself, directly or through others, without end?)",
    );
  });

  it("a model calling itself is stopped at the depth limit, however it recurses", async () => {
    const countdown = (n: number, depth?: number) =>
      post("/v2/models/countdown/infer", {
        ...(depth !== undefined ? { parameters: { operon_bls_depth: depth } } : {}),
        inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [n] }],
      });
    const shallow = await countdown(2);
    expect(((await shallow.json()) as any).outputs[0].data).toEqual([2]);
    // Depth 6 -> 7 -> 8 through the model's own calls (it passes no depth on); its call at depth 9 is refused.
    const endless = await countdown(1000, 6);
    expect(endless.status).toBe(400);
    expect(((await endless.json()) as { error: string }).error).toMatch(
      /^BLS depth limit exceeded: a call to model 'countdown' at BLS depth 9, beyond the limit of 8/,
    );
    expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
  });
});
