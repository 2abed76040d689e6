import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Finding 8: response_stats had one entry per response index of a decoupled
// model, so one 200 KB generate_stream request (a response per word) grew the
// model's statistics to megabytes. Indexes are now capped (128).

describe("statistics stay bounded under long streams", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "text_generator",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("keeps at most 128 response indexes after a stream of 5000 responses", async () => {
    const words = Array.from({ length: 5000 }, (_, i) => `w${i}`).join(" ");
    const response = await fetch(`${server.httpUrl}/v2/models/text_generator/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ text_input: words }),
    });
    expect(response.status).toBe(200);
    const events = (await response.text()).split("\n\n").filter((event) => event.startsWith("data:"));
    expect(events.length).toBeGreaterThan(5000);
    const stats = (await (await fetch(`${server.httpUrl}/v2/models/text_generator/stats`)).json()) as {
      model_stats: Array<{ response_stats: Record<string, unknown> }>;
    };
    const responseStats = stats.model_stats[0]!.response_stats;
    expect(Object.keys(responseStats).length).toBeLessThanOrEqual(128);
    expect(JSON.stringify(stats).length).toBeLessThan(200_000);
  });
});
