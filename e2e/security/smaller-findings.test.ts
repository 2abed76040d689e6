import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiSession } from "../support/api-client.js";
import { grpcClient } from "../support/grpc-client.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Finding 16: gRPC took what HTTP refuses (priority -5, unknown triton_
// parameters); error messages named server paths; --admin-password showed in
// ps; a 429 came without Retry-After.

const ADMIN = { email: "admin@example.com", password: "from-a-file-0123" };

describe("smaller findings", () => {
  let server: RunningOperon;
  let grpc: ReturnType<typeof grpcClient>;
  beforeAll(async () => {
    const secrets = mkdtempSync(join(tmpdir(), "operon-sec-secret-"));
    writeFileSync(join(secrets, "admin-password"), `${ADMIN.password}\n`, { mode: 0o600 });
    server = await startOperon([
      "--control-plane",
      "--console=false",
      "--api-port",
      "0",
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
      "--admin-email",
      ADMIN.email,
      "--admin-password-file",
      join(secrets, "admin-password"),
    ]);
    grpc = grpcClient(server.grpcAddress);
  }, 120_000);
  afterAll(async () => {
    grpc?.close();
    await server?.stop();
  });

  it("takes the admin password from a file, so it is not on the command line", async () => {
    expect(readFileSync(`/proc/${server.pid}/cmdline`, "utf8")).not.toContain(ADMIN.password);
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    expect((await session.client.auth.signIn.mutate(ADMIN)).user.email).toBe(ADMIN.email);
  });

  it("refuses over gRPC what HTTP refuses: a negative priority, an unknown triton_ parameter", async () => {
    const inputs = [
      { name: "INPUT0", datatype: "FP32", shape: [1, 16], contents: { fp32_contents: Array(16).fill(1) } },
      { name: "INPUT1", datatype: "FP32", shape: [1, 16], contents: { fp32_contents: Array(16).fill(1) } },
    ];
    const negative = await grpc
      .call("ModelInfer", { model_name: "add_sub", inputs, parameters: { priority: { int64_param: -5 } } })
      .catch((error: { code: number; details: string }) => error);
    expect(negative).toMatchObject({
      code: 3,
      details: expect.stringMatching(/'parameters.priority' must be a non-negative integer/),
    });
    const reserved = await grpc
      .call("ModelInfer", { model_name: "add_sub", inputs, parameters: { triton_secret: { bool_param: true } } })
      .catch((error: { code: number; details: string }) => error);
    expect(reserved).toMatchObject({ code: 3, details: expect.stringMatching(/reserved for Triton usage/) });
  });

  it("names no server path in an error", async () => {
    const response = await fetch(`${server.httpUrl}/v2/repository/models/no_such_model/load`, { method: "POST" });
    expect(response.status).toBe(404);
    const { error } = (await response.json()) as { error: string };
    expect(error).toMatch(/no model folder of that name/);
    expect(error).not.toContain(EXAMPLE_REPOSITORY);
    expect(error).not.toContain(server.dataDir);
  });

  it("says when to retry on every 429", async () => {
    const session = apiSession(server.apiUrl!);
    await session.client.auth.session.query();
    await session.client.auth.signIn.mutate(ADMIN);
    const { key } = await session.client.apiKeys.create.mutate({ name: "slow", scopes: ["infer"], qpsQuota: 1 });
    const statuses: Response[] = [];
    for (let i = 0; i < 3; i += 1)
      statuses.push(
        await fetch(`${server.httpUrl}/v2/models/add_sub`, { headers: { authorization: `Bearer ${key}` } }),
      );
    const limited = statuses.find((response) => response.status === 429);
    expect(limited).toBeDefined();
    expect(limited!.headers.get("retry-after")).toBe("1");
  });
});
