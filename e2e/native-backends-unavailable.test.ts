import { cpSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADD_SUB_CONFIG, addSubModel, writeModel } from "./support/model-fixtures.js";
import { EXAMPLE_REPOSITORY, startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * A host where native backends cannot run (here: OPERON_NATIVE=0, as on a
 * machine whose npm install found no compiler and left the UNAVAILABLE
 * marker): `--load-model '*'` (what npm start does) still starts, serves the
 * other models and reports ready; the native models are UNAVAILABLE in the
 * repository index with the reason, and loading one names it.
 */
let repository: string;
let server: RunningOperon;

beforeAll(async () => {
  repository = tempRepository("operon-e2e-native-off-");
  writeModel(repository, "add_sub", addSubModel(), { config: ADD_SUB_CONFIG() });
  cpSync(join(EXAMPLE_REPOSITORY, "identity_native"), join(repository, "identity_native"), { recursive: true });
  mkdirSync(join(repository, "identity_native", "1"), { recursive: true });
  server = await startOperon(
    ["--model-repository", repository, "--model-control-mode", "explicit", "--load-model", "*"],
    { env: { OPERON_NATIVE: "0" } },
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (repository !== undefined) rmSync(repository, { recursive: true, force: true });
});

describe("native backends unavailable on the host", () => {
  it("starts with --load-model '*' (exit-on-error on), serves the rest and reports ready", async () => {
    expect((await fetch(`${server.httpUrl}/v2/health/ready`)).status).toBe(200);
    const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(2) },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: new Array(16).fill(1) },
        ],
      }),
    });
    expect(response.status).toBe(200);
  });

  it("shows the native model UNAVAILABLE with the reason, and a load names it", async () => {
    const index = (await (await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      state: string;
      reason: string;
    }>;
    const native = index.find((entry) => entry.name === "identity_native");
    expect(native?.state).toBe("UNAVAILABLE");
    expect(native?.reason).toMatch(
      /needs native backend 'operon_identity': native backends are disabled by OPERON_NATIVE=0/,
    );
    const load = await fetch(`${server.httpUrl}/v2/repository/models/identity_native/load`, {
      method: "POST",
      body: "{}",
    });
    expect(load.status).toBe(503);
    expect(((await load.json()) as { error: string }).error).toMatch(/native backends are disabled by OPERON_NATIVE=0/);
  });
});
