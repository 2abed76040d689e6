import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcClient } from "../support/grpc-client.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 28.9: out-of-range gRPC `timeout` parameters (int64 beyond 2^53,
// uint64 max) were INTERNAL errors (the message printer choked on the
// bigint); HTTP already answered 400. Now INVALID_ARGUMENT naming the parameter.

const fp32 = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);

describe("gRPC schedule parameters out of range", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const inferWith = async (parameters: object): Promise<{ code: number; details: string } | undefined> => {
    const client = grpcClient(server.grpcAddress);
    try {
      return await client
        .call("ModelInfer", {
          model_name: "add_sub",
          parameters,
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
            { name: "INPUT1", datatype: "FP32", shape: [1, 16] },
          ],
          raw_input_contents: [fp32(new Array(16).fill(1)), fp32(new Array(16).fill(2))],
        })
        .then(
          () => undefined,
          (error: { code: number; details: string }) => error,
        );
    } finally {
      client.close();
    }
  };

  it.each([
    ["timeout", { int64_param: "9223372036854775807" }, "9223372036854775807"],
    ["timeout", { uint64_param: "18446744073709551615" }, "18446744073709551615"],
    ["timeout", { int64_param: "100000000000000000" }, "100000000000000000"],
    ["priority", { uint64_param: "18446744073709551615" }, "18446744073709551615"],
  ])("%s %j is INVALID_ARGUMENT naming the parameter", async (name, value, shown) => {
    const failure = await inferWith({ [name]: value });
    expect(failure?.code).toBe(3);
    expect(failure?.details).toBe(
      `'parameters.${name}' must be a non-negative integer, got ${shown} (outside 0..9007199254740991)`,
    );
  });

  it("still serves a timeout in range", async () => {
    expect(await inferWith({ timeout: { int64_param: "1000000" } })).toBeUndefined();
  });
});
