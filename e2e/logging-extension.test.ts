import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTO_DIR, grpcClient } from "./support/grpc-client.js";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Triton's logging extension through the real `operon serve`: GET|POST
 * /v2/logging and gRPC LogSettings change what the running server writes,
 * and every log line of a request carries its request id, which the client
 * gets back (X-Request-Id over HTTP, x-request-id metadata over gRPC): the
 * frontend's failure and verbose lines, and the lines a model writes in its
 * worker process while it runs the request. Tests run in order against one
 * server.
 */

let server: RunningOperon;
let rpc: ReturnType<typeof grpcClient>;

const DEFAULTS = {
  log_file: "",
  log_info: true,
  log_warning: true,
  log_error: true,
  log_verbose_level: 0,
  log_format: "default",
};

beforeAll(async () => {
  const repository = tempRepository("operon-e2e-logging-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  // A TypeScript model (in a worker process) that writes a log line for every request it runs.
  mkdirSync(join(repository, "chatty", "1"), { recursive: true });
  writeFileSync(
    join(repository, "chatty", "config.pbtxt"),
    `name: "chatty"
backend: "typescript"
max_batch_size: 0
input [ { name: "X", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
`,
  );
  writeFileSync(
    join(repository, "chatty", "1", "model.ts"),
    `export default class Chatty {
  execute(requests, ctx) {
    return requests.map((request) => {
      const x = request.input("X").toFloat32Array()[0];
      ctx.log("info", "chatty model ran", { x });
      ctx.log("debug", "chatty model detail", { x });
      return { outputs: [ctx.tensor.float32("Y", [1], [x * 2])] };
    });
  }
}
`,
  );
  server = await startOperon(["--model-repository", repository]);
  rpc = grpcClient(server.grpcAddress);
});

afterAll(async () => {
  rpc?.close();
  await server?.stop();
});

const url = (path: string): string => `${server.httpUrl}${path}`;

async function setLogging(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url("/v2/logging"), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Log lines (JSON) printed after `mark` characters of output that mention `needle`. */
function linesSince(mark: number, needle: string): Array<Record<string, unknown>> {
  return server
    .output()
    .slice(mark)
    .split("\n")
    .filter((line) => line.startsWith("{") && line.includes(needle))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function failingRequest(headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url("/v2/models/no_such_model_for_logs/infer"), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({ id: "triton-id-7", inputs: [] }),
  });
}

async function chattyOverHttp(x: number, headers: Record<string, string> = {}, id?: string): Promise<Response> {
  const response = await fetch(url("/v2/models/chatty/infer"), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({
      ...(id !== undefined ? { id } : {}),
      inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [x] }],
    }),
  });
  await response.arrayBuffer();
  return response;
}

async function waitForLine(mark: number, needle: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 50; i++) {
    const found = linesSince(mark, needle);
    if (found.length > 0) return found[0]!;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no log line mentioning ${needle}`);
}

describe("the logging extension", () => {
  it("GET /v2/logging answers Triton's settings", async () => {
    const response = await fetch(url("/v2/logging"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(DEFAULTS);
  });

  it("a failed request's log line carries the request id the client got back, and Triton's id beside it", async () => {
    const mark = server.output().length;
    const response = await failingRequest();
    expect(response.status).toBe(404);
    const requestId = response.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const line = await waitForLine(mark, requestId!);
    expect(line).toMatchObject({
      requestId,
      id: "triton-id-7",
      path: "/v2/models/no_such_model_for_logs/infer",
      kind: "NOT_FOUND",
    });
    expect(typeof line["time"]).toBe("number");

    const given = await failingRequest({ "X-Request-Id": "client-chosen-42" });
    expect(given.headers.get("x-request-id")).toBe("client-chosen-42");
    await waitForLine(mark, "client-chosen-42");
    // One with spaces or control characters is not echoed (it would go into headers and logs as is).
    const hostile = await failingRequest({ "X-Request-Id": "a b" });
    expect(hostile.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("POST changes the format and the levels at run time, and answers every setting", async () => {
    const changed = await setLogging({ log_format: "ISO8601", log_verbose_level: 1 });
    expect(changed).toEqual({ status: 200, body: { ...DEFAULTS, log_format: "ISO8601", log_verbose_level: 1 } });
    let mark = server.output().length;
    const iso = await failingRequest({ "X-Request-Id": "iso-time-check" });
    const line = await waitForLine(mark, "iso-time-check");
    expect(line["time"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(iso.status).toBe(404);

    // Client errors log at info: with log_info off they are no longer written.
    expect((await setLogging({ log_info: false })).body["log_info"]).toBe(false);
    mark = server.output().length;
    await failingRequest({ "X-Request-Id": "silenced-line" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(linesSince(mark, "silenced-line")).toEqual([]);
    expect((await setLogging({ log_info: true })).body["log_info"]).toBe(true);
    mark = server.output().length;
    await failingRequest({ "X-Request-Id": "audible-again" });
    await waitForLine(mark, "audible-again");
  });

  it.each([
    [{ log_format: "xml" }, 400, /log_format' must be one of default, ISO8601/],
    [{ log_verbose_level: -1 }, 400, /unsigned 32-bit integer/],
    [{ log_verbose_level: 2 ** 40 }, 400, /unsigned 32-bit integer/],
    [{ log_info: "yes" }, 400, /must be a boolean/],
    [{ log_everything: true }, 400, /unknown log setting 'log_everything'/],
    [{ log_file: "/etc/cron.d/evil" }, 501, /log_file cannot be changed at run time/],
    [[1, 2], 400, /must be a JSON object/],
  ])("refuses %j (nothing changes)", async (body, status, message) => {
    const before = await (await fetch(url("/v2/logging"))).json();
    const answer = await setLogging(body);
    expect(answer.status).toBe(status);
    expect(String(answer.body["error"])).toMatch(message);
    expect(await (await fetch(url("/v2/logging"))).json()).toEqual(before);
  });

  it("gRPC LogSettings reads and changes the same settings", async () => {
    const read = await rpc.call("LogSettings", {});
    expect(read.settings["log_format"]).toMatchObject({ string_param: "ISO8601" });
    expect(read.settings["log_info"]).toMatchObject({ bool_param: true });
    const changed = await rpc.call("LogSettings", {
      settings: { log_format: { string_param: "default" }, log_verbose_level: { uint32_param: 0 } },
    });
    expect(changed.settings["log_format"]).toMatchObject({ string_param: "default" });
    expect(changed.settings["log_verbose_level"]).toMatchObject({ uint32_param: 0 });
    expect(await (await fetch(url("/v2/logging"))).json()).toEqual(DEFAULTS);
    const refused = (await rpc
      .call("LogSettings", { settings: { log_format: { string_param: "xml" } } })
      .catch((error: unknown) => error)) as grpc.ServiceError;
    expect(refused.code).toBe(3); // INVALID_ARGUMENT
    expect(refused.details).toMatch(/log_format/);
  });

  it("a model's own log lines, written in its worker process, carry the request id the client got back", async () => {
    const mark = server.output().length;
    const response = await chattyOverHttp(7, { "X-Request-Id": "chatty-http-1" });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-request-id")).toBe("chatty-http-1");
    expect(await waitForLine(mark, "chatty model ran")).toMatchObject({
      requestId: "chatty-http-1",
      model: "chatty",
      instance: expect.stringContaining("chatty"),
      x: 7,
    });
    // Without an X-Request-Id the server makes one up, returns it, and the model's line carries that one.
    const unnamed = await chattyOverHttp(8);
    const made = unnamed.headers.get("x-request-id")!;
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    expect((await waitForLine(mark, made))["x"]).toBe(8);
    // Verbose lines are written only at log_verbose_level > 0.
    expect(linesSince(mark, "chatty model detail")).toEqual([]);
  });

  it("at log_verbose_level 1, the per-request verbose lines carry the request id and Triton's id", async () => {
    expect((await setLogging({ log_verbose_level: 1 })).status).toBe(200);
    try {
      const mark = server.output().length;
      const response = await chattyOverHttp(9, { "X-Request-Id": "verbose-http-1" }, "triton-id-9");
      expect(response.status).toBe(200);
      expect(await waitForLine(mark, "chatty model detail")).toMatchObject({ requestId: "verbose-http-1", x: 9 });
      expect(await waitForLine(mark, "HTTP request served")).toMatchObject({
        requestId: "verbose-http-1",
        id: "triton-id-9",
        method: "POST",
        path: "/v2/models/chatty/infer",
        status: 200,
        level: 20,
      });
    } finally {
      await setLogging({ log_verbose_level: 0 });
    }
  });

  it("a successful gRPC call returns its request id (x-request-id trailing metadata); the model's lines carry it", async () => {
    const mark = server.output().length;
    const message = {
      model_name: "chatty",
      id: "grpc-triton-id",
      inputs: [{ name: "X", datatype: "FP32", shape: [1] }],
      raw_input_contents: [Buffer.from(new Float32Array([21]).buffer)],
    };
    const given = await rpc.callWithMetadata("ModelInfer", message, { "x-request-id": "chatty-grpc-1" });
    expect(given.trailing.get("x-request-id")).toEqual(["chatty-grpc-1"]);
    expect(await waitForLine(mark, "chatty-grpc-1")).toMatchObject({ msg: "chatty model ran", x: 21 });
    // None sent: one is made up and returned, on every kind of call.
    const made = await rpc.callWithMetadata("ModelInfer", message);
    const requestId = String(made.trailing.get("x-request-id")[0]);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await waitForLine(mark, requestId)).toMatchObject({ msg: "chatty model ran" });
    const live = await rpc.callWithMetadata("ServerLive", {});
    expect(String(live.trailing.get("x-request-id")[0])).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("ModelStreamInfer returns the stream's request id in its initial metadata; the model's lines carry it", async () => {
    const mark = server.output().length;
    const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
      keepCase: true,
      longs: String,
      defaults: true,
      includeDirs: [PROTO_DIR],
    });
    const loaded = grpc.loadPackageDefinition(definition) as any;
    const client = new loaded.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("x-request-id", "chatty-stream-1");
      const initial = await new Promise<grpc.Metadata>((resolve, reject) => {
        let received = new grpc.Metadata();
        const call = client.ModelStreamInfer(metadata) as grpc.ClientDuplexStream<object, object>;
        call.on("metadata", (value: grpc.Metadata) => {
          received = value;
        });
        call.on("data", () => undefined);
        call.on("end", () => resolve(received));
        call.on("error", reject);
        call.write({
          model_name: "chatty",
          inputs: [{ name: "X", datatype: "FP32", shape: [1] }],
          raw_input_contents: [Buffer.from(new Float32Array([33]).buffer)],
        });
        call.end();
      });
      expect(initial.get("x-request-id")).toEqual(["chatty-stream-1"]);
      expect(await waitForLine(mark, "chatty-stream-1")).toMatchObject({ msg: "chatty model ran", x: 33 });
    } finally {
      client.close();
    }
  });

  it("a failed gRPC ModelInfer logs its request id and Triton's id, and returns the request id", async () => {
    const mark = server.output().length;
    const failure = (await rpc
      .callWithMetadata(
        "ModelInfer",
        { model_name: "no_such_model_for_logs", id: "grpc-failing-id", inputs: [] },
        { "x-request-id": "grpc-failing-1" },
      )
      .catch((error: unknown) => error)) as grpc.ServiceError;
    expect(failure.code).toBe(5); // NOT_FOUND
    expect(failure.metadata.get("x-request-id")).toEqual(["grpc-failing-1"]);
    expect(await waitForLine(mark, "grpc-failing-1")).toMatchObject({
      requestId: "grpc-failing-1",
      id: "grpc-failing-id",
      kind: "NOT_FOUND",
    });
  });

  it("a failed gRPC call returns its request id in the trailing metadata, and logs it", async () => {
    const mark = server.output().length;
    const error = (await rpc
      .call("ModelMetadata", { name: "no_such_model_for_logs" })
      .catch((failure: unknown) => failure)) as grpc.ServiceError;
    expect(error.code).toBe(5); // NOT_FOUND
    const requestId = error.metadata.get("x-request-id")[0];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await waitForLine(mark, String(requestId))).toMatchObject({ requestId, kind: "NOT_FOUND" });
  });
});
