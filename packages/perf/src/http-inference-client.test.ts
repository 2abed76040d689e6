import { afterEach, describe, expect, it } from "vitest";
import { type FakeKserveServer, startFakeKserveServer } from "../test/fake-kserve-server.js";
import { HttpInferenceClient } from "./http-inference-client.js";
import type { PreparedInputSet } from "./input-data.js";
import { PerfError } from "./perf-error.js";

const SET: PreparedInputSet = [
  { name: "X", datatype: "FP32", shape: [1, 4], data: Buffer.from(new Float32Array([1, 2, 3, 4]).buffer) },
];

describe("HttpInferenceClient", () => {
  let server: FakeKserveServer;
  let client: HttpInferenceClient | undefined;
  afterEach(async () => {
    client?.close();
    await server?.close();
  });

  it("sends the prepared binary request: JSON header, then the tensor bytes, binary outputs asked for", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({ url: server.url, model: "toy", version: "2", inputSets: [SET] });
    await client.infer();
    await client.infer();
    const [first, second] = server.received;
    expect(first!.path).toBe("/v2/models/toy/versions/2/infer");
    const headerLength = Number(first!.headers["inference-header-content-length"]);
    expect(first!.headers["content-type"]).toBe("application/octet-stream");
    expect(JSON.parse(first!.body.subarray(0, headerLength).toString())).toEqual({
      inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], parameters: { binary_data_size: 16 } }],
      // Perf traffic is tagged so the gateway counts it apart from users' (issue 27).
      parameters: { binary_data_output: true, operon_traffic: "perf" },
    });
    expect(first!.body.subarray(headerLength)).toEqual(SET[0]!.data);
    expect(second!.body).toEqual(first!.body);
    // Keep-alive: both requests used one connection.
    expect(first!.headers.connection).toBe("keep-alive");
  });

  it("sends JSON data when binaryData is off", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({
      url: `http://${server.url}`,
      model: "toy",
      inputSets: [SET],
      binaryData: false,
    });
    await client.infer();
    const request = server.received[0]!;
    expect(request.path).toBe("/v2/models/toy/infer");
    expect(request.headers["inference-header-content-length"]).toBeUndefined();
    expect(JSON.parse(request.body.toString())).toEqual({
      inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
      parameters: { operon_traffic: "perf" },
    });
  });

  it("sends a priority with every inference, binary and JSON (automatic runs measure at the lowest level)", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({ url: server.url, model: "toy", inputSets: [SET], priority: 3 });
    await client.infer();
    const binary = server.received[0]!;
    const headerLength = Number(binary.headers["inference-header-content-length"]);
    expect(JSON.parse(binary.body.subarray(0, headerLength).toString()).parameters).toEqual({
      binary_data_output: true,
      operon_traffic: "perf",
      priority: 3,
    });
    client.close();
    client = new HttpInferenceClient({
      url: server.url,
      model: "toy",
      inputSets: [SET],
      priority: 3,
      binaryData: false,
    });
    await client.infer({ id: 5n, start: true, end: false });
    expect(JSON.parse(server.received[1]!.body.toString()).parameters).toEqual({
      operon_traffic: "perf",
      priority: 3,
      sequence_id: 5,
      sequence_start: true,
      sequence_end: false,
    });
  });

  it("sends the extra headers (an API key) with inferences and metadata calls", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({
      url: server.url,
      model: "toy",
      inputSets: [SET],
      headers: { authorization: "Bearer opk_test" },
    });
    await client.modelConfig();
    await client.infer();
    expect(server.received.map((request) => request.headers.authorization)).toEqual([
      "Bearer opk_test",
      "Bearer opk_test",
    ]);
    expect(server.received[1]!.headers["content-type"]).toBe("application/octet-stream");
  });

  it("cycles through several prepared requests", async () => {
    server = await startFakeKserveServer();
    const other: PreparedInputSet = [{ ...SET[0]!, data: Buffer.alloc(16) }];
    client = new HttpInferenceClient({ url: server.url, model: "toy", inputSets: [SET, other], binaryData: false });
    for (let i = 0; i < 3; i += 1) await client.infer();
    const data = server.received.map(
      (r) => (JSON.parse(r.body.toString()) as { inputs: Array<{ data: number[] }> }).inputs[0]!.data,
    );
    expect(data).toEqual([
      [1, 2, 3, 4],
      [0, 0, 0, 0],
      [1, 2, 3, 4],
    ]);
  });

  it("rejects a failed inference with the server's message and status", async () => {
    server = await startFakeKserveServer();
    server.failInfer(400, "input 'X': bad");
    client = new HttpInferenceClient({ url: server.url, model: "toy", inputSets: [SET] });
    await expect(client.infer()).rejects.toThrow("HTTP 400: input 'X': bad");
  });

  it("reads metadata, config and statistics", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({ url: server.url, model: "toy" });
    expect(await client.modelMetadata()).toMatchObject({
      name: "toy",
      versions: ["1", "2"],
      inputs: [{ name: "X", datatype: "FP32", shape: [-1, 4] }],
    });
    expect(await client.modelConfig()).toEqual({
      maxBatchSize: 8,
      sequenceBatching: false,
      decoupled: false,
      responseCache: false,
    });
    expect((await client.modelStatistics())[0]).toMatchObject({ name: "toy", version: "2" });
    await expect(client.infer()).rejects.toThrow(/no inference request was prepared/);
  });

  it("maps an unknown model to MODEL_NOT_FOUND and a closed port to UNREACHABLE", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({ url: server.url, model: "nope" });
    await expect(client.modelMetadata()).rejects.toMatchObject({
      code: "MODEL_NOT_FOUND",
      message: expect.stringContaining("model 'nope'"),
    });
    const url = server.url;
    await server.close();
    const closed = new HttpInferenceClient({ url, model: "toy" });
    try {
      const error = await closed.modelMetadata().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PerfError);
      expect(error).toMatchObject({
        code: "UNREACHABLE",
        message: expect.stringMatching(/^cannot connect to the server at http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/),
      });
    } finally {
      closed.close();
    }
  });

  it("splices a sequence request's controls into the prepared body, binary and JSON, growing the binary header's length", async () => {
    server = await startFakeKserveServer();
    client = new HttpInferenceClient({ url: server.url, model: "toy", inputSets: [SET] });
    await client.infer({ id: 42n, start: true, end: false });
    await client.infer();
    const [withSequence, plain] = server.received;
    const headerLength = Number(withSequence!.headers["inference-header-content-length"]);
    expect(JSON.parse(withSequence!.body.subarray(0, headerLength).toString()).parameters).toEqual({
      sequence_id: 42,
      sequence_start: true,
      sequence_end: false,
      binary_data_output: true,
      operon_traffic: "perf",
    });
    expect(withSequence!.body.subarray(headerLength)).toEqual(SET[0]!.data);
    expect(Number(withSequence!.headers["content-length"])).toBe(withSequence!.body.length);
    // The prepared request itself is unchanged.
    const plainHeader = Number(plain!.headers["inference-header-content-length"]);
    expect(JSON.parse(plain!.body.subarray(0, plainHeader).toString()).parameters).toEqual({
      binary_data_output: true,
      operon_traffic: "perf",
    });
    client.close();

    client = new HttpInferenceClient({ url: server.url, model: "toy", inputSets: [SET], binaryData: false });
    await client.infer({ id: 7n, start: false, end: true });
    expect(JSON.parse(server.received[2]!.body.toString())).toEqual({
      inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
      parameters: { sequence_id: 7, sequence_start: false, sequence_end: true, operon_traffic: "perf" },
    });
  });
});
