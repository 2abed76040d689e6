import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, workerProcesses, type RunningOperon } from "../support/operon-process.js";

// Finding 10: a config with instance_group.count 12 and intra_op_thread_count
// 64 was accepted and started. Admin-set limits now refuse it at load.

describe("per-model and per-host resource limits", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--backend-isolation",
      "process",
      "--max-instances-per-model",
      "4",
      "--max-instances",
      "5",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const load = (config: object): Promise<Response> =>
    fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, {
      method: "POST",
      body: JSON.stringify({ parameters: { config: JSON.stringify(config) } }),
    });

  it("refuses 12 instances of 64 threads, naming the limit, and starts no worker", async () => {
    const response = await load({
      backend: "onnxruntime",
      instance_group: [{ count: 12, kind: "KIND_CPU" }],
      parameters: { intra_op_thread_count: { string_value: "64" } },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /asks for 12 instances; this server allows at most 4 per model \(--max-instances-per-model\)/,
    );
    expect(workerProcesses(server.pid)).toHaveLength(0);
  });

  it("refuses more threads per instance than the default limit (the core count)", async () => {
    const response = await load({
      backend: "onnxruntime",
      instance_group: [{ count: 1, kind: "KIND_CPU" }],
      parameters: { intra_op_thread_count: { string_value: String(availableParallelism() + 1) } },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/--max-threads-per-instance/);
  });

  it("counts the instances of the other models against the host limit", async () => {
    expect((await load({ backend: "onnxruntime", instance_group: [{ count: 4, kind: "KIND_CPU" }] })).status).toBe(200);
    const other = await fetch(`${server.httpUrl}/v2/repository/models/identity_bytes/load`, {
      method: "POST",
      body: JSON.stringify({
        parameters: { config: JSON.stringify({ instance_group: [{ count: 2, kind: "KIND_CPU" }] }) },
      }),
    });
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: string }).error).toMatch(
      /would make 6 on this server, over the limit of 5 \(--max-instances\)/,
    );
  });
});
