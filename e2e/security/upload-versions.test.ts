import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "../support/api-client.js";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, type RunningOperon } from "../support/operon-process.js";

// Issue 28, item 8: an upload at version 2147483647 made every later upload of that model an
// internal error (the next version, 2^31, does not fit the database's INT).

const ADD_SUB = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));
const SHA256 = createHash("sha256").update(ADD_SUB).digest("hex");

async function upload(session: ApiSession, name: string, version?: number) {
  const begun = await session.client.models.upload.begin.mutate({
    name,
    fileName: "model.onnx",
    sizeBytes: ADD_SUB.length,
    sha256: SHA256,
    ...(version !== undefined ? { version } : {}),
  });
  await session.client.models.upload.chunk.mutate({
    uploadId: begun.uploadId,
    offset: 0,
    data: ADD_SUB.toString("base64"),
  });
  return session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
}

describe("upload versions stay within 1 to 2^31-1", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  beforeAll(async () => {
    server = await startControlPlaneServer();
    admin = await signedIn(server);
    await admin.client.perf.updateSettings.mutate({ enabled: false });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses 2^31 at the boundary, naming the limit", async () => {
    const error = await apiErrorOf(
      admin.client.models.upload.begin.mutate({
        name: "edge",
        fileName: "model.onnx",
        sizeBytes: ADD_SUB.length,
        sha256: SHA256,
        version: 2_147_483_648,
      }),
    );
    expect(error.appCode).toBe("VALIDATION_FAILED");
    expect(error.message).toMatch(/at most 2147483647 \(2\^31−1\)/);
  });

  it("an upload at 2147483647 works, and later uploads get a clear answer, not an internal error", async () => {
    expect(await upload(admin, "edge", 2_147_483_647)).toMatchObject({ version: 2_147_483_647 });
    const next = await apiErrorOf(upload(admin, "edge"));
    expect(next.appCode).toBe("CONFLICT");
    expect(next.message).toBe(
      "model 'edge' has version 2147483647, the highest a version may be (2^31−1), so there is no next one; give the upload a free version number",
    );
    // A lower free version is taken as an upload, and refused for what it is: the model serves its latest version only.
    const lower = await apiErrorOf(upload(admin, "edge", 2));
    expect(lower.appCode).toBe("VALIDATION_FAILED");
    expect(lower.message).toMatch(/would not serve the uploaded version 2 \(it serves 2147483647\)/);
    const model = await admin.client.models.get.query({ name: "edge" });
    expect(model.versions.map((version) => version.version)).toEqual([2_147_483_647]);
  });
});
