import { createHash } from "node:crypto";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, type RunningOperon } from "./support/operon-process.js";

// Issue 23: "a control plane that restarts loses nothing": an upload in progress when the control plane is
// killed goes on after the restart from the last chunk the client was told had arrived.

describe("an upload in progress survives a control plane killed mid-upload", () => {
  const servers: RunningOperon[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop().catch(() => undefined);
  });

  it("resumes at the acknowledged offset, then finishes into a served model with the declared sha256", async () => {
    const bytes = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));
    const half = Math.floor(bytes.length / 2);
    const first = await startControlPlaneServer();
    servers.push(first);
    const before = await signedIn(first);
    const { uploadId } = await before.client.models.upload.begin.mutate({
      name: "adder",
      fileName: "model.onnx",
      sizeBytes: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
    });
    const acknowledged = await before.client.models.upload.chunk.mutate({
      uploadId,
      offset: 0,
      data: bytes.subarray(0, half).toString("base64"),
    });
    expect(acknowledged).toMatchObject({ receivedBytes: half });
    // A crash, not a clean stop; and bytes of a chunk whose answer never left (written, not recorded).
    first.process.kill("SIGKILL");
    await first.exited;
    const staging = join(first.dataDir, "upload-staging");
    const [part] = readdirSync(staging).filter((name) => name.endsWith(".part"));
    appendFileSync(join(staging, part!), bytes.subarray(half, half + 10));

    const second = await startControlPlaneServer([], { dataDir: first.dataDir });
    servers.push(second);
    expect(second.output()).toMatch(/resumed an upload/);
    const after = await signedIn(second);
    await expect(
      after.client.models.upload.chunk.mutate({ uploadId, offset: 0, data: bytes.toString("base64") }),
    ).rejects.toThrow(`expected offset ${half}`);
    await after.client.models.upload.chunk.mutate({
      uploadId,
      offset: half,
      data: bytes.subarray(half).toString("base64"),
    });
    const finished = await after.client.models.upload.finish.mutate({ uploadId });
    expect(finished).toMatchObject({ name: "adder", version: 1, state: "READY" });

    const inputs = ["INPUT0", "INPUT1"].map((name) => ({
      name,
      datatype: "FP32",
      shape: [1, 16],
      data: Array.from({ length: 16 }, (_, i) => i),
    }));
    const answer = await fetch(`${second.httpUrl}/v2/models/adder/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ inputs }),
    });
    expect(answer.status).toBe(200);
    const outputs = ((await answer.json()) as { outputs: Array<{ name: string; data: number[] }> }).outputs;
    expect(outputs.find((output) => output.name === "OUTPUT0")!.data).toEqual(
      Array.from({ length: 16 }, (_, i) => 2 * i),
    );
    expect(readdirSync(staging)).toEqual([]);
  }, 240_000);
});
