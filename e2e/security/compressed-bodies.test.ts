import { randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 29.2: gzip bodies bypassed the in-flight budget. It counted the
// compressed bytes, and each body inflated to up to 64 MiB (24 bodies of
// 63 KB, 1.5 MB counted, held 3.8 GB). Now inflated bytes count against the
// budget as they inflate, and a body may inflate to at most
// --http-max-inflate-ratio (default 100) times its size.

const inputs = [
  { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
  { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
];

const postGzip = (httpUrl: string, json: string): Promise<Response> =>
  fetch(`${httpUrl}/v2/models/add_sub/infer`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
    body: gzipSync(Buffer.from(json)),
  });

describe("gzip request bodies", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
      "--http-max-body-bytes",
      "16000000",
      "--http-max-inflight-body-bytes",
      "8000000",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("serves an ordinary gzip body", async () => {
    const response = await postGzip(server.httpUrl, JSON.stringify({ id: "gz", inputs }));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { id: string }).id).toBe("gz");
  });

  it("refuses a body that inflates past 100 times its size with 413 naming --http-max-inflate-ratio", async () => {
    // 15 MB of one repeated character: about 15 KB compressed, a ratio of ~1000.
    const response = await postGzip(server.httpUrl, JSON.stringify({ id: "0".repeat(15_000_000), inputs }));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /inflates to more than 100 times its size \(--http-max-inflate-ratio 100\)/,
    );
  });

  it("counts inflated bytes against the in-flight budget as they inflate (503 past it), then serves again", async () => {
    // 9 MB that compress about 80x: within the ratio, past the 8 MB budget once inflated.
    const noise = randomBytes(100_000).toString("hex");
    const json = JSON.stringify({ id: noise + "0".repeat(8_800_000), inputs });
    const compressed = gzipSync(Buffer.from(json));
    expect(json.length / compressed.length).toBeLessThan(100);
    const response = await postGzip(server.httpUrl, json);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(((await response.json()) as { error: string }).error).toMatch(
      /would pass its limit of 8000000 \(--http-max-inflight-body-bytes\)/,
    );
    const after = await postGzip(server.httpUrl, JSON.stringify({ inputs }));
    expect(after.status).toBe(200);
  });
});
