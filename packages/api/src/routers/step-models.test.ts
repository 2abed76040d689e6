import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

/**
 * Step models through the API, against a real gateway: the text_direction
 * pipeline built from built-in steps by an engineer (no code, no files but
 * the labels), used in an operator with the ONNX classifier, answers what
 * the repository's hand-written `text_direction` answers; a bad pipeline or
 * a missing file is refused with the field named before anything is stored;
 * viewers cannot create; every creation is audited with its SHA-256.
 */
const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));
const IMAGES = fileURLToPath(new URL("../../../../examples/images", import.meta.url));

const PREPROCESS = {
  steps: [
    { id: "decode", step: "image.decode", params: { channels: 3 } },
    { id: "resize", step: "image.resize", params: { height: 48, width: 192, fit: "height" } },
    { id: "normalize", step: "image.normalize", params: { scale: 1 / 255, mean: [0.5], std: [0.5] } },
    { id: "bgr", step: "image.swap-rb" },
    { id: "chw", step: "image.layout", params: { from: "HWC", to: "CHW" } },
    { id: "pad", step: "image.pad", params: { height: 48, width: 192, layout: "CHW" }, outputs: { y: "x" } },
  ],
};
const TOPK = { steps: [{ id: "top", step: "tensor.topk", params: { k: 1, labels: "labels.txt" } }] };
const LABELS = Buffer.from("0°\n180°\n").toString("base64");

/** One PNG through the gateway over HTTP binary; label and score. */
async function classify(httpUrl: string, model: string, file: Buffer): Promise<{ label: string; score: number }> {
  const element = Buffer.concat([Buffer.alloc(4), file]);
  element.writeUInt32LE(file.length, 0);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "image", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: element.length } }],
    }),
  );
  const response = await fetch(`${httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
    body: Buffer.concat([header, element]),
  });
  const body = (await response.json()) as { outputs?: Array<{ name: string; data: unknown[] }>; error?: string };
  if (response.status !== 200) throw new Error(`${model}: ${response.status} ${body.error}`);
  const out = (name: string) => body.outputs!.find((o) => o.name === name)!.data[0];
  return { label: String(out("label")), score: Number(out("score")) };
}

describe.each(testDatabaseBackends({ migrated: true }))("step models on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: TestGateway;
  let dir: string;
  let storeDir: string;
  const name = (base: string): string => `${base}_${backend.name}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-step-models-"));
    storeDir = join(dir, "store");
    mkdirSync(storeDir);
    gateway = await startTestGateway({
      modelRepositories: [storeDir, EXAMPLES],
      loadModels: ["text_direction_classifier", "text_direction_preprocess", "text_direction_topk", "text_direction"],
      modelControlMode: "explicit",
    });
    db = await backend.setup();
    h = await createControlPlaneHarness(db, {
      gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl },
      modelStoreDir: storeDir,
      uploadStagingDir: join(dir, "staging"),
    });
  });
  afterAll(async () => {
    await h?.close();
    await gateway?.stop();
    await db?.close();
    await backend.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the built-in steps with docs, typed ports and parameter schemas for viewers", async () => {
    const catalog = await h.as("VIEWER").models.stepCatalog();
    const decode = catalog.find((step) => step.name === "image.decode");
    expect(decode?.doc).toMatch(/PNG, JPEG or WebP/);
    expect(decode?.inputs).toEqual([expect.objectContaining({ name: "image", datatypes: ["BYTES"] })]);
    expect(decode?.paramsSchema).toMatchObject({ type: "object", properties: { channels: expect.any(Object) } });
    expect(catalog.map((step) => step.category)).toEqual(expect.arrayContaining(["image", "text", "tensor"]));
    // Steps with required parameters show the ports of their example parameters.
    expect(catalog.find((step) => step.name === "image.resize")?.outputs[0]?.dims).toEqual([224, 224, "C"]);
  });

  it("builds text_direction from steps without code, and the operator answers as the hand-written one", async () => {
    const engineer = h.as("ENGINEER");
    const pre = await engineer.models.createSteps({
      name: name("steps_pre"),
      inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
      outputs: [{ name: "x", datatype: "FP32", dims: [3, 48, 192] }],
      pipeline: PREPROCESS,
    });
    expect(pre).toMatchObject({ version: 1, state: "READY" });
    const top = await engineer.models.createSteps({
      name: name("steps_top"),
      inputs: [{ name: "probabilities", datatype: "FP32", dims: [2] }],
      outputs: [
        { name: "label", datatype: "BYTES", dims: [1] },
        { name: "score", datatype: "FP32", dims: [1] },
      ],
      pipeline: TOPK,
      files: [{ path: "labels.txt", data: LABELS }],
    });
    expect(top.state).toBe("READY");
    const operator = name("td_from_steps");
    await engineer.operators.create({
      name: operator,
      spec: {
        maxBatchSize: 8,
        inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
        outputs: [
          { name: "label", datatype: "BYTES", dims: [1] },
          { name: "score", datatype: "FP32", dims: [1] },
        ],
        steps: [
          { id: "pre", kind: "model", model: name("steps_pre"), inputs: { image: "image" }, outputs: { x: "x" } },
          {
            id: "cls",
            kind: "model",
            model: "text_direction_classifier",
            inputs: { x: "x" },
            outputs: { "softmax_0.tmp_0": "p" },
          },
          {
            id: "top",
            kind: "model",
            model: name("steps_top"),
            inputs: { probabilities: "p" },
            outputs: { label: "label", score: "score" },
          },
        ],
      },
    });
    for (const image of ["text_0.png", "text_180.png", "text_grey.png"]) {
      const file = readFileSync(join(IMAGES, image));
      const original = await classify(gateway.httpUrl, "text_direction", file);
      const rebuilt = await classify(gateway.httpUrl, operator, file);
      expect(rebuilt.label, image).toBe(original.label);
      expect(Math.abs(rebuilt.score - original.score), image).toBeLessThanOrEqual(1e-5);
    }
    // Audited with the SHA-256 of the stored steps.json and of the labels file.
    const { events } = await h.as("ADMIN").audit.list({ action: "model.steps.create", limit: 10 });
    const event = events.find((e) => e.targetId === name("steps_top"));
    const stored = readFileSync(join(storeDir, name("steps_top"), "1", "steps.json"));
    expect(event?.after).toMatchObject({
      sha256: createHash("sha256").update(stored).digest("hex"),
      steps: ["tensor.topk"],
      files: [{ path: "labels.txt", sha256: createHash("sha256").update("0°\n180°\n").digest("hex") }],
    });
    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === name("steps_pre"));
    expect([listed?.state, listed?.platform, listed?.source]).toEqual(["READY", "operon_steps", "uploaded"]);
  });

  it("refuses a bad pipeline or a missing file naming the field, storing nothing", async () => {
    const engineer = h.as("ENGINEER");
    const bad = engineer.models.createSteps({
      name: name("steps_bad"),
      inputs: [{ name: "image", datatype: "BYTES", dims: [1] }],
      outputs: [{ name: "x", datatype: "FP32", dims: [3, 48, 192] }],
      pipeline: {
        steps: [
          { id: "decode", step: "image.decode" },
          { id: "resize", step: "image.resize", params: { height: 0, width: 8 } },
        ],
      },
    });
    await expect(bad).rejects.toThrow(/step 2 'resize' \(image\.resize\): params\.height must be an integer >= 1/);
    await expect(bad).rejects.toThrow(/model output 'x' is produced by no step/);
    const missing = engineer.models.createSteps({
      name: name("steps_bad"),
      inputs: [{ name: "probabilities", datatype: "FP32", dims: [2] }],
      outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
      pipeline: TOPK,
    });
    await expect(missing).rejects.toThrow(
      /files: step 'top' \(tensor\.topk\) reads 'labels\.txt': upload it with the model/,
    );
    const escape = engineer.models.createSteps({
      name: name("steps_bad"),
      inputs: [{ name: "probabilities", datatype: "FP32", dims: [2] }],
      outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
      pipeline: TOPK,
      files: [{ path: "../labels.txt", data: LABELS }],
    });
    await expect(escape).rejects.toThrow(/files\.0\.path: '\.\.\/labels\.txt' must be a relative path/);
    expect(await appCodeOf(missing)).toBe("VALIDATION_FAILED");
    expect(existsSync(join(storeDir, name("steps_bad")))).toBe(false);
    expect(await db.prisma.model.findUnique({ where: { name: name("steps_bad") } })).toBeNull();
    // A name that is taken.
    expect(
      await appCodeOf(
        engineer.models.createSteps({
          name: name("steps_top"),
          inputs: [{ name: "probabilities", datatype: "FP32", dims: [2] }],
          outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
          pipeline: TOPK,
          files: [{ path: "labels.txt", data: LABELS }],
        }),
      ),
    ).toBe("CONFLICT");
  });

  it("lets engineers and admins create step models, not viewers", async () => {
    const attempt = h.as("VIEWER").models.createSteps({
      name: name("steps_viewer"),
      inputs: [{ name: "probabilities", datatype: "FP32", dims: [2] }],
      outputs: [{ name: "index", datatype: "INT64", dims: [1] }],
      pipeline: { steps: [{ step: "tensor.topk" }] },
    });
    expect(await appCodeOf(attempt)).toBe("FORBIDDEN");
  });
});
