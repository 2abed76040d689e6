import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOperon, tempRepository, type RunningOperon } from "../support/operon-process.js";

// Issue 29.3: file:// URLs passed the server-path scrubber in client-visible
// error texts (only bare absolute paths were matched): a model error
// carrying import.meta.url reached the client with the server's path.

describe("file:// URLs in model errors", () => {
  let server: RunningOperon;
  let repository: string;
  beforeAll(async () => {
    repository = tempRepository();
    mkdirSync(join(repository, "leaky", "1"), { recursive: true });
    writeFileSync(
      join(repository, "leaky", "config.pbtxt"),
      'backend: "typescript"\nmax_batch_size: 0\ninput [ { name: "x", data_type: TYPE_FP32, dims: [ 1 ] } ]\noutput [ { name: "y", data_type: TYPE_FP32, dims: [ 1 ] } ]\n',
    );
    writeFileSync(
      join(repository, "leaky", "1", "model.js"),
      "export default class { execute(requests, ctx) { return requests.map(() => ctx.error('INVALID_ARG', `cannot read the table next to ${import.meta.url}`)); } }\n",
    );
    server = await startOperon([
      "--model-repository",
      repository,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "leaky",
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("reaches the client without the server's path", async () => {
    const response = await fetch(`${server.httpUrl}/v2/models/leaky/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [1], data: [1] }] }),
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: string };
    expect(error).toMatch(/cannot read the table next to <server path>\/model\.js/);
    expect(error).not.toContain("file:");
    expect(error).not.toContain(repository);
  });
});
