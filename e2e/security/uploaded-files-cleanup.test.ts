import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, tempRepository } from "../support/operon-process.js";

// Finding 14: model files uploaded through the gateway's load API stayed in
// the data directory forever. They go on unload, on a clean stop, and at
// the next start after a crash.

const uploadsOf = (dataDir: string): string[] => {
  const root = join(dataDir, "uploaded-models");
  return existsSync(root) ? readdirSync(root, { recursive: true }).map(String) : [];
};

describe("uploaded model files are cleaned up", () => {
  it("on unload, and at start after a kill", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "operon-sec-uploads-"));
    const repository = tempRepository();
    const onnx = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx")).toString("base64");
    const load = async (url: string, name: string): Promise<void> => {
      const response = await fetch(`${url}/v2/repository/models/${name}/load`, {
        method: "POST",
        body: JSON.stringify({
          parameters: { config: JSON.stringify({ backend: "onnxruntime" }), "file:1/model.onnx": onnx },
        }),
      });
      expect(response.status, await response.text()).toBe(200);
    };
    let server = await startOperon(["--model-repository", repository, "--model-control-mode", "explicit"], { dataDir });
    await load(server.httpUrl, "uploaded_a");
    expect(uploadsOf(dataDir).some((path) => path.endsWith("model.onnx"))).toBe(true);
    expect((await fetch(`${server.httpUrl}/v2/repository/models/uploaded_a/unload`, { method: "POST" })).status).toBe(
      200,
    );
    expect(uploadsOf(dataDir).filter((path) => path.endsWith("model.onnx"))).toEqual([]);

    await load(server.httpUrl, "uploaded_b");
    server.process.kill("SIGKILL");
    await server.exited;
    expect(uploadsOf(dataDir).some((path) => path.endsWith("model.onnx"))).toBe(true);
    server = await startOperon(["--model-repository", repository, "--model-control-mode", "explicit"], { dataDir });
    expect(uploadsOf(dataDir)).toEqual([]);
    await load(server.httpUrl, "uploaded_c");
    await server.stop();
    expect(uploadsOf(dataDir)).toEqual([]);
  }, 120_000);
});
