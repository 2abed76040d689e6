import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Finding 11: an operator showed "Served" and /v2/models/<op>/ready answered
// 200 while one of its step models was unloaded. Its readiness now follows
// its steps, and the API shows it DEGRADED naming the missing model.

const SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
  ],
};

describe("operator readiness follows its step models", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer(["--anonymous-model-control"]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("is not ready and shows degraded, naming the model, while a step model is unloaded", async () => {
    const admin = await signedIn(server);
    await admin.client.operators.create.mutate({ name: "add_once", spec: SPEC });
    const ready = async (): Promise<number> => (await fetch(`${server.httpUrl}/v2/models/add_once/ready`)).status;
    expect(await ready()).toBe(200);

    expect((await fetch(`${server.httpUrl}/v2/repository/models/add_sub/unload`, { method: "POST" })).status).toBe(200);
    expect(await ready()).toBe(400);
    const listed = (await admin.client.operators.list.query()).find((operator) => operator.name === "add_once")!;
    expect(listed.state).toBe("DEGRADED");
    expect(listed.unreadyModels).toEqual(["add_sub"]);
    const gateway = (await (await fetch(`${server.httpUrl}/v2/operators/add_once`)).json()) as {
      unreadyModels: string[];
    };
    expect(gateway.unreadyModels).toEqual(["add_sub"]);

    expect((await fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, { method: "POST" })).status).toBe(200);
    expect(await ready()).toBe(200);
    expect((await admin.client.operators.list.query()).find((operator) => operator.name === "add_once")!.state).toBe(
      "SERVED",
    );
  });
});
