import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { ERROR_KINDS, httpStatusOf, type ErrorKind } from "@operon/protocol/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_KIND_CODES, GatewayClient, GatewayError, gatewayError } from "./gateway-client.js";
import { startTestGateway, type TestGateway } from "../../testing/gateway-harness.js";

const EXAMPLES = fileURLToPath(new URL("../../../../../examples/model_repository", import.meta.url));

describe("gateway client against a running gateway", () => {
  let gateway: TestGateway;
  let client: GatewayClient;

  beforeAll(async () => {
    gateway = await startTestGateway({ modelRepositories: [EXAMPLES], loadModels: ["add_sub"] });
    client = new GatewayClient({ httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl });
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("reads the repository index, config and statistics", async () => {
    const index = await client.repositoryIndex();
    expect(index.find((entry) => entry.name === "add_sub")?.state).toBe("READY");
    expect((await client.modelConfig("add_sub"))["name"]).toBe("add_sub");
    expect((await client.statistics("add_sub"))[0]?.name).toBe("add_sub");
    expect(await client.isReady()).toBe(true);
    expect(await client.metricsText()).toContain("nv_inference_count");
  });

  it("runs an inference and times it", async () => {
    const data = Array.from({ length: 16 }, (_, i) => i);
    const response = await client.infer("add_sub", undefined, {
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data },
      ],
    });
    expect((response.body["outputs"] as Array<{ data: number[] }>)[0]!.data[3]).toBe(6);
    expect(response.latencyMs).toBeGreaterThan(0);
  });

  it("turns gateway errors into app errors that keep the gateway's message", async () => {
    await expect(client.modelConfig("no_such_model")).rejects.toMatchObject({
      code: "NOT_FOUND",
      kind: "NOT_FOUND",
      message: expect.stringContaining("no_such_model"),
    });
    const unreachable = new GatewayClient({ httpUrl: "http://127.0.0.1:9", timeoutMs: 2000 });
    await expect(unreachable.repositoryIndex()).rejects.toMatchObject({ code: "GATEWAY_UNAVAILABLE" });
  });
});

describe("gateway error kinds", () => {
  it("maps every kind to an API code in one table", () => {
    expect(Object.keys(GATEWAY_KIND_CODES).sort()).toEqual([...ERROR_KINDS].sort());
    expect(GATEWAY_KIND_CODES).toEqual({
      INVALID_ARG: "VALIDATION_FAILED",
      ALREADY_EXISTS: "VALIDATION_FAILED",
      CANCELLED: "VALIDATION_FAILED",
      NOT_FOUND: "NOT_FOUND",
      UNAVAILABLE: "GATEWAY_UNAVAILABLE",
      UNSUPPORTED: "GATEWAY_ERROR",
      INTERNAL: "GATEWAY_ERROR",
      UNKNOWN: "GATEWAY_ERROR",
      UNAUTHENTICATED: "GATEWAY_ERROR",
      PERMISSION_DENIED: "GATEWAY_ERROR",
      RESOURCE_EXHAUSTED: "GATEWAY_ERROR",
    });
  });

  it.each(ERROR_KINDS)("turns a %s answer into a GatewayError that keeps the kind and the message", (kind) => {
    const error = gatewayError(httpStatusOf(kind), "what the gateway said", kind);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.kind).toBe(kind);
    expect(error.code).toBe(GATEWAY_KIND_CODES[kind]);
    expect(error.message).toContain("what the gateway said");
  });

  it("says a refused key is the control plane's key, not the caller's", () => {
    expect(gatewayError(401, "no valid API key", "UNAUTHENTICATED").message).toBe(
      "the gateway refused the control plane's key: no valid API key",
    );
    expect(gatewayError(403, "needs admin", "PERMISSION_DENIED").message).toBe(
      "the gateway refused the control plane's key: needs admin",
    );
  });

  it("maps answers without a kind (failures of HTTP itself) by status", () => {
    expect(gatewayError(404, "no endpoint at '/v2/x'", undefined).code).toBe("NOT_FOUND");
    expect(gatewayError(413, "too large", undefined).code).toBe("PAYLOAD_TOO_LARGE");
    expect(gatewayError(405, "use GET", undefined).code).toBe("GATEWAY_ERROR");
  });
});

describe("gateway client against a fake gateway", () => {
  let server: http.Server;
  let client: GatewayClient;
  /** What the fake gateway answers next: status and body. */
  let answer: { status: number; body: unknown } = { status: 200, body: {} };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const text = JSON.stringify(answer.body);
        res
          .writeHead(answer.status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) })
          .end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    client = new GatewayClient({ httpUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it.each<[ErrorKind, string]>([
    ["INVALID_ARG", "VALIDATION_FAILED"],
    ["NOT_FOUND", "NOT_FOUND"],
    ["UNSUPPORTED", "GATEWAY_ERROR"],
    ["UNAVAILABLE", "GATEWAY_UNAVAILABLE"],
  ])("reads the kind of a %s error body", async (kind, code) => {
    answer = { status: httpStatusOf(kind), body: { error: `failed: ${kind}`, kind } };
    const error = await client.loadModel("m").then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ kind, code, message: `failed: ${kind}` });
  });

  it("checks every answer against the admin contract and names the field that drifted", async () => {
    answer = {
      status: 200,
      body: {
        workers: [{ model: "m", version: "1" }],
        hostCpuCores: 2,
        gateway: { pid: 1, cpuSeconds: 0, rssBytes: 0 },
      },
    };
    await expect(client.workers()).rejects.toMatchObject({
      code: "GATEWAY_ERROR",
      message: expect.stringMatching(
        /GET \/v2\/operon\/workers does not match the admin contract: 'workers\.0\.instance'/,
      ),
    });
    answer = { status: 200, body: { valid: false, problems: ["a bare string, the old shape"] } };
    await expect(client.validateOperator("op", {})).rejects.toMatchObject({
      message: expect.stringMatching(/'problems\.0'/),
    });
    answer = {
      status: 200,
      body: { valid: false, problems: [{ code: "unknown-model", message: "unknown model 'x'" }] },
    };
    expect(await client.validateOperator("op", {})).toEqual({
      valid: false,
      problems: [{ code: "unknown-model", message: "unknown model 'x'" }],
    });
    answer = { status: 400, body: { error: "invalid operator spec 'op': steps must be an array" } };
    expect(await client.validateOperator("op", {})).toEqual({
      valid: false,
      problems: [{ message: "invalid operator spec 'op': steps must be an array" }],
    });
    answer = { status: 200, body: { models: "add_sub" } };
    await expect(client.parkedModels()).rejects.toMatchObject({ message: expect.stringMatching(/'models'/) });
    // Statistics are checked to the figure, the index to its closed set of states (no casts on the way in).
    answer = {
      status: 200,
      body: { model_stats: [{ name: "m", version: "1", inference_count: 1, execution_count: 1 }] },
    };
    await expect(client.statistics()).rejects.toMatchObject({
      message: expect.stringMatching(
        /GET \/v2\/models\/stats does not match the admin contract: 'model_stats\.0\.last_inference'/,
      ),
    });
    answer = { status: 200, body: [{ name: "m", version: "1", state: "SLEEPING" }] };
    await expect(client.repositoryIndex()).rejects.toMatchObject({ message: expect.stringMatching(/'0\.state'/) });
  });

  it("ignores a kind outside the closed set and falls back to the status", async () => {
    answer = { status: 404, body: { error: "gone", kind: "SOMETHING_ELSE" } };
    await expect(client.unloadModel("m")).rejects.toMatchObject({
      kind: undefined,
      code: "NOT_FOUND",
      message: "gone",
    });
  });
});
