import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

// Issue 27 item 9: config as Triton users know it. A version is finished with config.pbtxt text (a Triton model
// folder's), and an uploaded model's config is replaced by config.pbtxt text (the console's editor, an uploaded file).
const ADD_SUB = writeAddSubModel({ datatype: "FP32", shape: [-1, 16] });
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

const FOLDER_CONFIG = `# as written for Triton
name: "pbtxt_model"
backend: "onnxruntime"
max_batch_size: 4
input [
  { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
instance_group [ { kind: KIND_CPU, count: 2 } ]
`;

describe.each(testDatabaseBackends({ migrated: true }))("config.pbtxt text on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: TestGateway;
  let dir: string;
  let storeDir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-config-pbtxt-"));
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

  const storedConfig = () =>
    parsePbtxt(readFileSync(join(storeDir, "pbtxt_model", "config.pbtxt"), "utf8"), "config.pbtxt");

  it("finishes an upload with a folder's config.pbtxt, and refuses text that does not parse, naming line and column", async () => {
    const engineer = h.as("ENGINEER");
    const { uploadId } = await engineer.models.upload.begin({
      name: "pbtxt_model",
      fileName: "model.onnx",
      sizeBytes: ADD_SUB.length,
      sha256: sha256(ADD_SUB),
    });
    await engineer.models.upload.chunk({ uploadId, offset: 0, data: ADD_SUB.toString("base64") });
    const broken = engineer.models.upload.finish({ uploadId, configPbtxt: `${FOLDER_CONFIG}dimz: [ 1 ]\n` });
    await expect(broken).rejects.toThrow(
      /^the config\.pbtxt does not parse: config\.pbtxt:14:1: unknown field .dimz. in inference\.ModelConfig/,
    );
    // Both forms at once is ambiguous.
    expect(await appCodeOf(engineer.models.upload.finish({ uploadId, config: {}, configPbtxt: FOLDER_CONFIG }))).toBe(
      "TRPC:BAD_REQUEST",
    );
    // The upload stayed open: the right text finishes it.
    expect(await engineer.models.upload.finish({ uploadId, configPbtxt: FOLDER_CONFIG })).toMatchObject({
      name: "pbtxt_model",
      version: 1,
      state: "READY",
    });
    expect(storedConfig()).toMatchObject({ max_batch_size: 4, instance_group: [{ kind: "KIND_CPU", count: 2 }] });
  }, 60_000);

  it("replaces an uploaded model's config with config.pbtxt text, and keeps it when the text is refused", async () => {
    const engineer = h.as("ENGINEER");
    const edited = FOLDER_CONFIG.replace("count: 2", "count: 3").replace(
      "instance_group",
      "dynamic_batching { max_queue_delay_microseconds: 700 }\ninstance_group",
    );
    const updated = await engineer.models.updateConfig({ name: "pbtxt_model", configPbtxt: edited });
    expect(updated).toMatchObject({ name: "pbtxt_model", state: "READY" });
    expect(storedConfig()).toMatchObject({ instance_group: [{ count: 3 }] });
    expect(storedConfig().dynamic_batching?.max_queue_delay_microseconds).toBe(700);

    const refused = engineer.models.updateConfig({ name: "pbtxt_model", configPbtxt: "input [ { name: " });
    await expect(refused).rejects.toThrow(/^the config\.pbtxt of model 'pbtxt_model' does not parse: config\.pbtxt:1:/);
    expect(await appCodeOf(engineer.models.updateConfig({ name: "pbtxt_model" }))).toBe("TRPC:BAD_REQUEST");
    expect(
      await appCodeOf(h.as("VIEWER").models.updateConfig({ name: "pbtxt_model", configPbtxt: FOLDER_CONFIG })),
    ).toBe("FORBIDDEN");
    expect(storedConfig()).toMatchObject({ instance_group: [{ count: 3 }] });
  }, 60_000);
});
