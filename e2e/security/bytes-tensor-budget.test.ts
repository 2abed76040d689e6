import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcClient } from "../support/grpc-client.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 28.3: raw BYTES bodies amplified memory ~90x: a 31 MB binary body of
// 8 M empty elements took the gateway from 930 MB to 3.8 GB (17 s). Each
// element became JS objects on the way (a Buffer view, a string, another
// Buffer). Now a BYTES tensor may hold --max-bytes-elements (default
// 1,048,576) elements, checked on the shape or by a walk that stops at the
// limit, and BYTES data is read and written in place.

const EIGHT_MILLION = 8_000_000;

/** The server's peak resident memory so far (VmHWM), MiB. */
function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

describe("BYTES tensors are budgeted per tensor", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "identity_bytes",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const infer = (body: Buffer, headerLength: number): Promise<Response> =>
    fetch(`${server.httpUrl}/v2/models/identity_bytes/infer`, {
      method: "POST",
      headers: { "inference-header-content-length": String(headerLength), "content-type": "application/octet-stream" },
      body,
    });

  it("refuses a raw binary body of 8 M empty elements at once, naming the flag, without the memory blowing up", async () => {
    const before = peakRssMb(server.pid);
    const started = Date.now();
    const response = await infer(Buffer.alloc(EIGHT_MILLION * 4), 0);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /tensor 'INPUT0' has more BYTES elements, more than the limit of 1048576 per BYTES tensor \(--max-bytes-elements\)/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    // Was +2.8 GB; the body itself is 32 MB.
    expect(peakRssMb(server.pid) - before).toBeLessThan(300);
  }, 60_000);

  it("refuses a JSON header that declares 8 M elements of binary data, on the shape", async () => {
    const data = Buffer.alloc(EIGHT_MILLION * 4);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          {
            name: "INPUT0",
            datatype: "BYTES",
            shape: [1, EIGHT_MILLION],
            parameters: { binary_data_size: data.length },
          },
        ],
      }),
    );
    const response = await infer(Buffer.concat([header, data]), header.length);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /tensor 'INPUT0' has 8000000 BYTES elements, more than the limit of 1048576/,
    );
  }, 60_000);

  it("refuses the same over gRPC raw_input_contents with INVALID_ARGUMENT", async () => {
    const client = grpcClient(server.grpcAddress);
    try {
      const failure = await client
        .call("ModelInfer", {
          model_name: "identity_bytes",
          inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2_000_000] }],
          raw_input_contents: [Buffer.alloc(2_000_000 * 4)],
        })
        .then(
          () => undefined,
          (error: { code: number; details: string }) => error,
        );
      expect(failure?.code).toBe(3);
      expect(failure?.details).toMatch(
        /has 2000000 BYTES elements, more than the limit of 1048576 per BYTES tensor \(--max-bytes-elements\)/,
      );
    } finally {
      client.close();
    }
  }, 60_000);

  it("serves a BYTES tensor at the limit", async () => {
    const elements = 1 << 20;
    const response = await infer(Buffer.alloc(elements * 4), 0);
    expect(response.status).toBe(200);
    const headerLength = Number(response.headers.get("inference-header-content-length"));
    const header = JSON.parse(
      Buffer.from(await response.arrayBuffer())
        .subarray(0, headerLength)
        .toString(),
    ) as { outputs: Array<{ shape: number[] }> };
    expect(header.outputs[0]!.shape).toEqual([1, elements]);
  }, 60_000);
});
