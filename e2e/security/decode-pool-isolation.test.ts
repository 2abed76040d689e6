import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 29.1: the decode pool was one shared choke point. A body that ran
// the decode thread out of heap failed, and so did an innocent request
// queued behind it (400). Now the pool hands out one body per thread from a
// queue of its own: the thread that dies takes only its body, and the
// bodies behind it decode on the replacement thread. One thread with a
// small heap here, so one body can exhaust it within the body limits.

/** A JSON body of `count` distinct short strings: 12 MB on the wire, far more heap once parsed. */
function heavyJson(count: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(`"s${i}"`);
  return Buffer.from(`{"ready": true, "pad": [${parts.join(",")}]}`);
}

/** add_sub's inference, with an id long enough (70 KB) that its body goes to the decode pool too. */
const innocentInfer = (httpUrl: string): Promise<Response> =>
  fetch(`${httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    body: JSON.stringify({
      id: "i".repeat(70_000),
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
      ],
    }),
  });

describe("the decode pool fails only the body that breaks a limit", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
      "--decode-threads",
      "1",
      "--decode-max-heap-mb",
      "48",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("a body that runs its decode thread out of heap fails with 400; the request queued behind it is answered 200", async () => {
    const heavy = fetch(`${server.httpUrl}/v2/repository/index`, { method: "POST", body: heavyJson(2_500_000) });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const behind = innocentInfer(server.httpUrl);
    const ready = await fetch(`${server.httpUrl}/v2/health/ready`);
    expect(ready.status).toBe(200);
    const [heavyAnswer, behindAnswer] = await Promise.all([heavy, behind]);
    expect(heavyAnswer.status).toBe(400);
    expect(((await heavyAnswer.json()) as { error: string }).error).toMatch(
      /too large or too complex to decode within the decoder's 48 MiB of memory/,
    );
    expect(behindAnswer.status).toBe(200);
    const outputs = ((await behindAnswer.json()) as { outputs: Array<{ name: string; data: number[] }> }).outputs;
    expect(outputs.find((o) => o.name === "OUTPUT0")?.data[3]).toBe(4);
    // And the pool serves on with its new thread.
    expect((await innocentInfer(server.httpUrl)).status).toBe(200);
  }, 90_000);
});
