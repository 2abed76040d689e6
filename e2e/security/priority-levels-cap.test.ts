import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 28.7: a config with priority_levels 4,000,000 was accepted; 80
// requests then took 20 s and readiness stalled 2 s. Now a model may have at
// most 1,000 levels, and the scheduler keeps queues only for the levels in
// use (its unit test runs 4,000,000 levels in well under a second).

const INFER_BODY = (priority: number): string =>
  JSON.stringify({
    parameters: { priority },
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  });

describe("priority levels are capped", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon(["--model-repository", EXAMPLE_REPOSITORY, "--model-control-mode", "explicit"]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const loadWithLevels = (levels: number): Promise<Response> =>
    fetch(`${server.httpUrl}/v2/repository/models/add_sub/load`, {
      method: "POST",
      body: JSON.stringify({
        parameters: {
          config: JSON.stringify({
            max_batch_size: 8,
            dynamic_batching: { priority_levels: levels, default_priority_level: 1 },
          }),
        },
      }),
    });

  it("refuses 4,000,000 priority levels at load, naming the limit", async () => {
    const response = await loadWithLevels(4_000_000);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /dynamic_batching\.priority_levels.*is 4000000; a model may have at most 1000 priority levels/,
    );
  });

  it("serves 1,000 levels, 80 requests across them promptly", async () => {
    expect((await loadWithLevels(1000)).status).toBe(200);
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        fetch(`${server.httpUrl}/v2/models/add_sub/infer`, { method: "POST", body: INFER_BODY(1 + ((i * 37) % 1000)) }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(new Array(80).fill(200));
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
