import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { writeAddSubModel, writeMlpModel } from "@operon/testing/onnx-model-writer";
import { createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

// Issue 27 item 2: a new version keeps the model's config (Triton keeps config.pbtxt across version folders).
// Before, uploading v2 prefilled the config from the ONNX file again and, finished without a config, silently dropped
// the instance count and batching the model had (a config search's applied result, fixed dims).
const ADD_SUB = writeAddSubModel({ datatype: "FP32", shape: [-1, 16] });
const OTHER = writeAddSubModel({ datatype: "FP32", shape: [-1, 8] });
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe.each(testDatabaseBackends({ migrated: true }))("new versions on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: TestGateway;
  let dir: string;
  let storeDir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-version-config-"));
    storeDir = join(dir, "store");
    mkdirSync(storeDir);
    gateway = await startTestGateway({ modelRepositories: [storeDir], loadModels: [], modelControlMode: "explicit" });
    db = await backend.setup();
    h = await createControlPlaneHarness(db, {
      gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl },
      modelStoreDir: storeDir,
      uploadStagingDir: join(dir, "staging"),
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await gateway?.stop();
    await db?.close();
    await backend.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function begin(name: string, bytes: Buffer) {
    const engineer = h.as("ENGINEER");
    const { uploadId } = await engineer.models.upload.begin({
      name,
      fileName: "model.onnx",
      sizeBytes: bytes.length,
      sha256: sha256(bytes),
    });
    await engineer.models.upload.chunk({ uploadId, offset: 0, data: bytes.toString("base64") });
    return { uploadId, signature: await engineer.models.upload.inspect({ uploadId }) };
  }

  it("prefills v2 with the model's current config, says an identical file is identical, and keeps the config", async () => {
    const engineer = h.as("ENGINEER");
    const first = await begin("kept", ADD_SUB);
    expect(first.signature).toMatchObject({ configSource: "file", identicalTo: null, configNote: null });
    const config = {
      ...first.signature.suggestedConfig,
      max_batch_size: 8,
      instance_group: [{ kind: "KIND_CPU", count: 2 }],
      dynamic_batching: { max_queue_delay_microseconds: 500 },
    };
    await engineer.models.upload.finish({ uploadId: first.uploadId, config });

    const second = await begin("kept", ADD_SUB);
    expect(second.signature).toMatchObject({ configSource: "current", identicalTo: 1, configNote: null });
    expect(second.signature.suggestedConfig).toMatchObject({
      max_batch_size: 8,
      instance_group: [{ kind: "KIND_CPU", count: 2 }],
      dynamic_batching: { max_queue_delay_microseconds: 500 },
    });
    // Finished without a config (the API's own default), the version keeps the model's config too.
    expect(await engineer.models.upload.finish({ uploadId: second.uploadId })).toMatchObject({ version: 2 });
    const stored = parsePbtxt(readFileSync(join(storeDir, "kept", "config.pbtxt"), "utf8"), "config.pbtxt");
    expect(stored).toMatchObject({ max_batch_size: 8, instance_group: [{ count: 2 }] });
    expect(stored.dynamic_batching?.max_queue_delay_microseconds).toBe(500);
  }, 60_000);

  it("calls a file identical only to the version the model serves now, not to an older one (issue 27 item 2)", async () => {
    const engineer = h.as("ENGINEER");
    const v1 = writeMlpModel({ sizes: [4, 3], seed: 1 });
    const v2 = writeMlpModel({ sizes: [4, 3], seed: 2 });
    const first = await begin("rolled", v1);
    await engineer.models.upload.finish({ uploadId: first.uploadId, config: first.signature.suggestedConfig });
    const second = await begin("rolled", v2);
    expect(second.signature.identicalTo).toBeNull();
    expect(await engineer.models.upload.finish({ uploadId: second.uploadId })).toMatchObject({ version: 2 });
    // Version 2 serves (version_policy latest 1): v1's file again would bring v1 back, which is not "identical".
    const again = await begin("rolled", v1);
    expect(again.signature.identicalTo).toBeNull();
    await engineer.models.upload.abort({ uploadId: again.uploadId });
    const same = await begin("rolled", v2);
    expect(same.signature.identicalTo).toBe(2);
    await engineer.models.upload.abort({ uploadId: same.uploadId });
  }, 60_000);

  it("starts from the file, saying why, when the current config does not fit the new file", async () => {
    const other = await begin("kept", OTHER);
    expect(other.signature.configSource).toBe("file");
    expect(other.signature.identicalTo).toBeNull();
    expect(other.signature.configNote).toMatch(/current config does not fit this file/);
    await h.as("ENGINEER").models.upload.abort({ uploadId: other.uploadId });
  }, 60_000);
});
