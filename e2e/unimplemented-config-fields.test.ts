import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDENTITY_CONFIG, identityModel, writeModel } from "./support/model-fixtures.js";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Config fields Operon parses but does not implement (issue 25) are never
 * silently accepted, through the real server: by default the model loads
 * with a warning per field in the repository index and the log; under
 * --strict-model-config it is refused, its reason naming every field,
 * while a model without such fields loads.
 */
const UNIMPLEMENTED = IDENTITY_CONFIG(
  "tuned",
  `optimization { graph { level: 1 } }
instance_group [ { count: 1, kind: KIND_CPU, rate_limiter { resources [ { name: "R", count: 1 } ] } } ]`,
);

interface IndexRow {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
  warnings?: string[];
}

async function row(server: RunningOperon, name: string): Promise<IndexRow | undefined> {
  const response = await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST", body: "{}" });
  return ((await response.json()) as IndexRow[]).find((entry) => entry.name === name);
}

describe("config fields Operon does not implement (real server)", () => {
  let repository: string;
  let lenient: RunningOperon;
  let strict: RunningOperon;

  beforeAll(async () => {
    repository = tempRepository();
    writeModel(repository, "tuned", identityModel("FP32", [4]), { config: UNIMPLEMENTED });
    writeModel(repository, "plain", identityModel("FP32", [4]), { config: IDENTITY_CONFIG("plain") });
    [lenient, strict] = await Promise.all([
      startOperon(["--model-repository", repository]),
      startOperon(["--model-repository", repository, "--strict-model-config", "--exit-on-error=false"]),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([lenient?.stop(), strict?.stop()]);
  });

  it("loads the model with a warning per field in the repository index and the log", async () => {
    expect(await row(lenient, "tuned")).toEqual({
      name: "tuned",
      version: "1",
      state: "READY",
      reason: "",
      warnings: [
        "optimization: model optimization (graph level, priority, CUDA graphs, execution accelerators, pinned memory, eager batching) is not implemented by Operon; the setting has no effect",
        "instance_group[0].rate_limiter: the rate limiter (resources and priority per instance) is not implemented by Operon; the setting has no effect",
      ],
    });
    expect(lenient.output()).toMatch(/model config sets a field Operon does not implement/);
    // A model without such fields has no warnings field at all.
    expect(await row(lenient, "plain")).toEqual({ name: "plain", version: "1", state: "READY", reason: "" });
    // It serves.
    const response = await fetch(`${lenient.httpUrl}/v2/models/tuned/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(response.status).toBe(200);
  });

  it("refuses it under --strict-model-config, naming every field; other models load", async () => {
    const refused = await row(strict, "tuned");
    expect(refused).toMatchObject({ name: "tuned", state: "UNAVAILABLE" });
    expect(refused!.reason).toMatch(
      /config of model 'tuned' sets field\(s\) Operon does not implement, refused under --strict-model-config: optimization: .*; instance_group\[0\]\.rate_limiter: /,
    );
    expect(await row(strict, "plain")).toMatchObject({ state: "READY" });
  });
});
