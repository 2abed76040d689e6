import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import { EXAMPLE_REPOSITORY } from "../support/operon-process.js";

// Finding 12: SIGTERM during upload.finish: the client got "socket hang up"
// but the model was committed. The API now answers requests in flight
// before it exits.

describe("SIGTERM while the API is busy", () => {
  it("answers an upload.finish in flight, then exits 0", async () => {
    const server = await startControlPlaneServer();
    try {
      const session = await signedIn(server);
      const bytes = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));
      const begun = await session.client.models.upload.begin.mutate({
        name: "adder",
        fileName: "model.onnx",
        sizeBytes: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
      });
      await session.client.models.upload.chunk.mutate({
        uploadId: begun.uploadId,
        offset: 0,
        data: bytes.toString("base64"),
      });
      const finishing = session.client.models.upload.finish.mutate({ uploadId: begun.uploadId }).then(
        (result) => ({ ok: true as const, result }),
        (error: Error) => ({ ok: false as const, error: error.message }),
      );
      await new Promise((resolve) => setTimeout(resolve, 30));
      server.process.kill("SIGTERM");
      const outcome = await finishing;
      expect(outcome).toMatchObject({ ok: true, result: { name: "adder", version: 1 } });
      expect((await server.exited).code).toBe(0);
    } finally {
      await server.stop();
    }
  }, 120_000);
});
