import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOperon, tempRepository, type RunningOperon } from "../support/operon-process.js";

// Finding 5: a config override's default_model_filename ("../../…/tmp/x.js")
// pointed outside the model folder, and that file was loaded and ran.

const outside = mkdtempSync(join(tmpdir(), "operon-sec-outside-"));
const marker = join(outside, "ran");
const evil = join(outside, "evil.js");
writeFileSync(
  evil,
  `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "yes");\nexport default class { execute(requests) { return requests.map(() => ({ outputs: [] })); } }\n`,
);

describe("config-named files stay inside the model folder", () => {
  let server: RunningOperon;
  const repository = tempRepository();
  beforeAll(async () => {
    // Links placed in the operator's repository are the operator's (the example repository links its
    // ONNX files from node_modules); a load request must still not reach them from another model.
    mkdirSync(join(repository, "linked", "1"), { recursive: true });
    symlinkSync(evil, join(repository, "linked", "1", "model.js"));
    writeFileSync(join(repository, "linked", "config.pbtxt"), 'backend: "typescript"\n');
    mkdirSync(join(repository, "plain", "1"), { recursive: true });
    writeFileSync(join(repository, "plain", "config.pbtxt"), 'backend: "typescript"\n');
    server = await startOperon(["--model-repository", repository, "--model-control-mode", "explicit"]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses a default_model_filename that climbs out, and runs nothing", async () => {
    const config = JSON.stringify({
      backend: "typescript",
      default_model_filename: `../../../../../../../../../..${evil}`,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [1] }],
      output: [{ name: "y", data_type: "TYPE_FP32", dims: [1] }],
    });
    const response = await fetch(`${server.httpUrl}/v2/repository/models/sneaky/load`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ parameters: { config, "file:1/readme.txt": Buffer.from("hi").toString("base64") } }),
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: string };
    expect(error).toMatch(/default_model_filename of model 'sneaky' '.*' points outside the model's folder/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a config override that names another model's file, for a repository model too", async () => {
    const config = JSON.stringify({ backend: "typescript", default_model_filename: "../../linked/1/model.js" });
    const response = await fetch(`${server.httpUrl}/v2/repository/models/plain/load`, {
      method: "POST",
      body: JSON.stringify({ parameters: { config } }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /default_model_filename of model 'plain' '\.\.\/\.\.\/linked\/1\/model\.js' points outside the model's folder/,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(existsSync(marker)).toBe(false);
  });
});
