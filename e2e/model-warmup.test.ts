import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float32Buffer, inferBinary } from "./support/http-binary-client.js";
import { startOperon, tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * model_warmup through the real server: every instance runs the samples
 * (zero_data, random_data, input_data_file; batch_size; count) after it
 * loads and before the model is READY; a failing sample fails the load
 * naming the sample; hostile samples (a file outside the model's folder,
 * a huge shape) fail the load clearly instead of reading or allocating.
 *
 * The model is a TypeScript-backend counter: it answers how many
 * executions and rows it saw before this one and the sum of every input
 * value it saw, so the test reads exactly what warmup sent it.
 */
const COUNTER_TS = `
export default class Counter {
  executions = 0;
  rows = 0;
  sum = 0;
  execute(requests, ctx) {
    return requests.map((request) => {
      const x = request.input("INPUT0");
      const values = x.toFloat32Array();
      if (values.some((value) => value === 13)) return ctx.error("INVALID_ARG", "13 is an unlucky number");
      const seen = [this.executions, this.rows, this.sum, 0];
      this.executions += 1;
      this.rows += x.shape[0];
      for (const value of values) this.sum += value;
      const out = new Float32Array(x.shape[0] * 4);
      for (let row = 0; row < x.shape[0]; row += 1) out.set(seen, row * 4);
      return { outputs: [ctx.tensor.fromTypedArray("OUTPUT0", x.shape, out)] };
    });
  }
}
`;

function counterModel(repository: string, name: string, warmup: string, files: Record<string, Buffer> = {}): void {
  const dir = join(repository, name);
  mkdirSync(join(dir, "1"), { recursive: true });
  writeFileSync(join(dir, "1", "model.mjs"), COUNTER_TS);
  if (Object.keys(files).length > 0) mkdirSync(join(dir, "warmup"), { recursive: true });
  for (const [file, data] of Object.entries(files)) writeFileSync(join(dir, "warmup", file), data);
  writeFileSync(
    join(dir, "config.pbtxt"),
    `name: "${name}"
backend: "typescript"
max_batch_size: 4
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
${warmup}`,
  );
}

async function indexRow(server: RunningOperon, name: string): Promise<{ state: string; reason?: string }> {
  const response = await fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST", body: "{}" });
  const rows = (await response.json()) as Array<{ name: string; state: string; reason?: string }>;
  return rows.find((row) => row.name === name) ?? { state: "MISSING" };
}

describe("model_warmup (real server)", () => {
  let server: RunningOperon;

  beforeAll(async () => {
    const repository = tempRepository();
    counterModel(
      repository,
      "warm",
      `model_warmup [
  { name: "zeros" batch_size: 2 count: 3 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } },
  { name: "from_file" batch_size: 1 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "ones.bin" } } },
  { name: "noise" batch_size: 4 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } }
]`,
      { "ones.bin": float32Buffer(1, 4) },
    );
    counterModel(repository, "cold", "");
    counterModel(
      repository,
      "poisoned",
      `model_warmup [ { name: "poison" batch_size: 1 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "thirteen.bin" } } } ]`,
      { "thirteen.bin": float32Buffer(13, 4) },
    );
    counterModel(
      repository,
      "escaping",
      `model_warmup [ { name: "peek" batch_size: 1 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "../../../../etc/passwd" } } } ]`,
    );
    counterModel(
      repository,
      "huge",
      `model_warmup [ { name: "big" batch_size: 4 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 1000000000 ] zero_data: true } } } ]`,
    );
    counterModel(
      repository,
      "short_file",
      `model_warmup [ { name: "short" batch_size: 1 inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "two.bin" } } } ]`,
      { "two.bin": float32Buffer(1, 2) },
    );
    server = await startOperon(["--model-repository", repository, "--exit-on-error=false"]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("runs every sample, count times, with its batch size and data, before the first request", async () => {
    expect((await fetch(`${server.httpUrl}/v2/models/warm/ready`)).status).toBe(200);
    const response = await inferBinary(server.httpUrl, "warm", [
      { name: "INPUT0", datatype: "FP32", shape: [1, 4], data: float32Buffer(0, 4) },
    ]);
    expect(response.status).toBe(200);
    const data = response.outputs[0]!.data;
    const seen = [0, 1, 2, 3].map((index) => data.readFloatLE(index * 4));
    // zeros: 3 runs of 2 rows; from_file: 1 run of 1 row of ones (sum 4); noise: 1 run of 4 rows of values in [0, 1).
    expect(seen[0]).toBe(5);
    expect(seen[1]).toBe(3 * 2 + 1 + 4);
    expect(seen[2]).toBeGreaterThan(4);
    expect(seen[2]).toBeLessThan(4 + 16);
  });

  it("a model without model_warmup sees the client's request first", async () => {
    const response = await inferBinary(server.httpUrl, "cold", [
      { name: "INPUT0", datatype: "FP32", shape: [1, 4], data: float32Buffer(0, 4) },
    ]);
    expect(response.outputs[0]!.data.readFloatLE(0)).toBe(0);
  });

  it("a failing sample fails the load, naming the sample and the model's error", async () => {
    const row = await indexRow(server, "poisoned");
    expect(row.state).toBe("UNAVAILABLE");
    expect(row.reason).toMatch(/warmup sample 'poison' failed on instance '.*': .*13 is an unlucky number/);
    expect((await fetch(`${server.httpUrl}/v2/models/poisoned/ready`)).status).not.toBe(200);
  });

  it("refuses an input_data_file outside the model's folder, a huge shape and a file of the wrong size", async () => {
    expect((await indexRow(server, "escaping")).reason).toMatch(
      /warmup sample 'peek', input 'INPUT0': input_data_file '..\/..\/..\/..\/etc\/passwd' points outside the model's folder/,
    );
    expect((await indexRow(server, "huge")).reason).toMatch(
      /warmup sample 'big', input 'INPUT0': shape \[4,1000000000\] of FP32 is 16000000000 bytes, more than the 67108864/,
    );
    expect((await indexRow(server, "short_file")).reason).toMatch(
      /warmup sample 'short', input 'INPUT0': input_data_file 'two.bin' does not fit the sample's shape: .*expected 16 bytes/,
    );
  });
});
