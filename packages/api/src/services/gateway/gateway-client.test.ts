import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { GatewayClient } from "./gateway-client.js";
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
    await expect(client.modelConfig("no_such_model")).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining("no_such_model") });
    const unreachable = new GatewayClient({ httpUrl: "http://127.0.0.1:9", timeoutMs: 2000 });
    await expect(unreachable.repositoryIndex()).rejects.toMatchObject({ code: "GATEWAY_UNAVAILABLE" });
  });
});
