import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { writeIdentityModel } from "@operon/testing/onnx-model-writer";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

// Issue 27 item 1: perf runs of models with variable dims, and of an image pipeline whose BYTES input must be a PNG.
// Before the fix every run of `ocr_rec` failed with "give its size with --shape x:3,48,N" (a flag the console cannot
// pass) and every run of the PNG decoder with "not a PNG" (random bytes).
const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));
const PNG = readFileSync(fileURLToPath(new URL("../../../../examples/images/text_0.png", import.meta.url)));

let repository: string;
let gateway: TestGateway;

beforeAll(async () => {
  repository = mkdtempSync(join(tmpdir(), "operon-perf-inputs-"));
  // An OCR recogniser's input as PaddleOCR exports it: [batch, 3, 48, width].
  mkdirSync(join(repository, "ocr_rec", "1"), { recursive: true });
  writeFileSync(
    join(repository, "ocr_rec", "1", "model.onnx"),
    writeIdentityModel({ datatype: "FP32", shape: [-1, 3, 48, -1], inputName: "x", outputName: "y" }),
  );
  writeFileSync(
    join(repository, "ocr_rec", "config.pbtxt"),
    `name: "ocr_rec"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninput [ { name: "x", data_type: TYPE_FP32, dims: [ 3, 48, -1 ] } ]\noutput [ { name: "y", data_type: TYPE_FP32, dims: [ 3, 48, -1 ] } ]\n`,
  );
  gateway = await startTestGateway({
    modelRepositories: [repository, EXAMPLES],
    loadModels: ["ocr_rec", "text_direction_preprocess"],
  });
}, 120_000);
afterAll(async () => {
  await gateway?.stop();
  if (repository) rmSync(repository, { recursive: true, force: true });
});

const quick = { batchSize: 1, measurementIntervalMs: 150, maxTrials: 3, concurrency: { start: 1, end: 1, step: 1 } };

describe.each(testDatabaseBackends({ migrated: true }))("perf inputs on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db, { gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl } });
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  async function finished(id: string) {
    await h.controlPlane.services.perfRuns.settled(id);
    return h.as("VIEWER").perf.get({ id });
  }

  it("suggests a size for each variable dim and a run with no --shape measures at it", async () => {
    const view = await h.as("VIEWER").perf.inputs({ kind: "MODEL", name: "ocr_rec" });
    expect(view).toMatchObject({
      maxBatchSize: 8,
      inputs: [{ name: "x", shape: [-1, 3, 48, -1], variable: true, dims: [3, 48, 320], suggested: true }],
      data: { kind: "random", name: null },
      updatedAt: null,
    });
    const { id } = await h.as("ENGINEER").perf.start({ target: { kind: "MODEL", name: "ocr_rec" }, ...quick });
    const report = await finished(id);
    expect(report.error).toBeNull();
    expect(report.status).toBe("SUCCEEDED");
    expect(report.samples[0]!.throughput).toBeGreaterThan(0);
    expect(report.summary).toMatchObject({
      inputs: [{ name: "x", shape: [1, 3, 48, 320] }],
      inputData: { kind: "random", name: null },
    });
  }, 60_000);

  it("saves the owner's shapes, which later runs use; refuses shapes and files that do not fit, naming the input", async () => {
    const target = { kind: "MODEL" as const, name: "ocr_rec" };
    const random = { kind: "random" as const };
    expect(await appCodeOf(h.as("VIEWER").perf.setInputs({ target, shapes: { x: [3, 48, 100] }, data: random }))).toBe(
      "FORBIDDEN",
    );
    await expect(h.as("ENGINEER").perf.setInputs({ target, shapes: { x: [3, 48] }, data: random })).rejects.toThrow(
      /has 2 dims, but the input's shape \[3,48,-1\]/,
    );
    await expect(
      h.as("ENGINEER").perf.setInputs({ target, shapes: { x: [3, 32, 100] }, data: random }),
    ).rejects.toThrow(/conflicts with the input's fixed shape/);
    await expect(h.as("ENGINEER").perf.setInputs({ target, shapes: { y: [1] }, data: random })).rejects.toThrow(
      /the model has no input 'y' \(inputs: x\)/,
    );
    // The largest shape the schema lets through would take gigabytes per request: refused before anything is allocated.
    await expect(
      h.as("ENGINEER").perf.setInputs({ target, shapes: { x: [3, 48, 1_000_000] }, data: random }),
    ).rejects.toThrow(/would take \d+ bytes per request .* at most 16777216/);
    const file = (json: string) => ({ kind: "file" as const, name: "data.json", json });
    await expect(h.as("ENGINEER").perf.setInputs({ target, shapes: {}, data: file("{nope") })).rejects.toThrow(
      /'data.json' is not JSON/,
    );
    await expect(
      h.as("ENGINEER").perf.setInputs({ target, shapes: {}, data: file('{"data":[{"z":[1]}]}') }),
    ).rejects.toThrow(/data\[0\]\.x is missing/);
    expect(await db.prisma.perfInputs.count()).toBe(0);

    const saved = await h
      .as("ENGINEER")
      .perf.setInputs({ target, shapes: { x: [3, 48, 100] }, data: { kind: "zero" } });
    expect(saved.inputs[0]).toMatchObject({ dims: [3, 48, 100], suggested: false });
    expect(saved).toMatchObject({ data: { kind: "zero" } });
    expect(saved.updatedAt).not.toBeNull();
    const { id } = await h.as("ENGINEER").perf.start({ target, ...quick });
    const report = await finished(id);
    expect(report.status).toBe("SUCCEEDED");
    expect(report.summary).toMatchObject({ inputs: [{ shape: [1, 3, 48, 100] }], inputData: { kind: "zero" } });
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.inputs", limit: 10 });
    expect(events).toHaveLength(1);
  }, 60_000);

  it("measures an image pipeline with an uploaded PNG as its BYTES input, where random bytes fail", async () => {
    const target = { kind: "MODEL" as const, name: "text_direction_preprocess" };
    const before = await finished((await h.as("ENGINEER").perf.start({ target, ...quick })).id);
    expect(before.status).toBe("FAILED");
    expect(before.error).toMatch(/PNG/i);

    const json = JSON.stringify({ data: [{ image: { b64: PNG.toString("base64") } }] });
    const saved = await h
      .as("ENGINEER")
      .perf.setInputs({ target, shapes: {}, data: { kind: "file", name: "text_0.png", json } });
    expect(saved.data).toMatchObject({ kind: "file", name: "text_0.png", entries: 1 });
    const after = await finished((await h.as("ENGINEER").perf.start({ target, ...quick })).id);
    expect(after.error).toBeNull();
    expect(after.status).toBe("SUCCEEDED");
    expect(after.samples[0]!.errorCount).toBe(0);
    expect(after.summary).toMatchObject({ inputData: { kind: "file", name: "text_0.png" } });
  }, 90_000);
});
