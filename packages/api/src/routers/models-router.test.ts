import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { writeOnnxModel, type OnnxValueInfo } from "@operon/testing/onnx-model-writer";
import type { AppError, FieldError } from "../app-error.js";
import { createInProcessContext } from "../context.js";
import { ControlPlane } from "../control-plane.js";
import { createCaller } from "../root.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));
/** Triton's "simple" model: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, FP32 [-1, 16]. */
const ADD_SUB = readFileSync(join(EXAMPLES, "add_sub/1/model.onnx"));
const MAX_UPLOAD_BYTES = 64 * 1024;

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A model ONNX Runtime refuses to load (an operator that does not exist) with the signature of add_sub. */
function unloadableModel(): Buffer {
  const tensor = (name: string): OnnxValueInfo => ({ name, datatype: "FP32", shape: [-1, 16] });
  return writeOnnxModel({
    inputs: [tensor("INPUT0"), tensor("INPUT1")],
    outputs: [tensor("OUTPUT0"), tensor("OUTPUT1")],
    nodes: [{ opType: "NoSuchOperator", inputs: ["INPUT0", "INPUT1"], outputs: ["OUTPUT0", "OUTPUT1"], name: "bogus" }],
  });
}

/** What a failed call carried: the app code, the message and the fieldErrors. */
async function failure(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; fieldErrors: FieldError[] }> {
  try {
    await promise;
  } catch (error) {
    const cause = (error as { cause?: AppError }).cause;
    return {
      code: cause?.code ?? `TRPC:${(error as { code?: string }).code}`,
      message: (error as Error).message,
      fieldErrors: cause?.fieldErrors ?? [],
    };
  }
  throw new Error("expected the call to fail, and it succeeded");
}

const inputData = Array.from({ length: 16 }, (_, i) => i);
const ones = new Array<number>(16).fill(1);
const addSubInputs = [
  { name: "INPUT0", datatype: "FP32" as const, shape: [1, 16], data: inputData },
  { name: "INPUT1", datatype: "FP32" as const, shape: [1, 16], data: ones },
];

describe.each(testDatabaseBackends({ migrated: true }))("models on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: TestGateway;
  let dir: string;
  let storeDir: string;
  let stagingDir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-models-"));
    storeDir = join(dir, "store");
    stagingDir = join(dir, "staging");
    mkdirSync(storeDir);
    // The store first: the gateway's first repository wins on duplicate names. EXAMPLES provides repository models.
    gateway = await startTestGateway({
      modelRepositories: [storeDir, EXAMPLES],
      loadModels: [],
      modelControlMode: "explicit",
    });
    db = await backend.setup();
    h = await createControlPlaneHarness(db, {
      gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl },
      modelStoreDir: storeDir,
      uploadStagingDir: stagingDir,
      maxUploadBytes: MAX_UPLOAD_BYTES,
    });
  });
  afterAll(async () => {
    await h?.close();
    await gateway?.stop();
    await db?.close();
    await backend.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const engineer = () => h.as("ENGINEER");

  /** Begins an upload and sends `bytes` in `chunks` pieces (the last may be cut short with `stopAt`). */
  async function upload(
    name: string,
    bytes: Buffer,
    options: { chunks?: number; version?: number; sha?: string; fileName?: string; stopAt?: number } = {},
  ) {
    const begun = await engineer().models.upload.begin({
      name,
      fileName: options.fileName ?? "model.onnx",
      sizeBytes: bytes.length,
      sha256: options.sha ?? sha256(bytes),
      ...(options.version !== undefined ? { version: options.version } : {}),
    });
    const end = options.stopAt ?? bytes.length;
    const size = Math.ceil(bytes.length / (options.chunks ?? 3));
    const received: number[] = [];
    for (let offset = 0; offset < end; offset += size) {
      const data = bytes.subarray(offset, Math.min(offset + size, end)).toString("base64");
      received.push((await engineer().models.upload.chunk({ uploadId: begun.uploadId, offset, data })).receivedBytes);
    }
    return { ...begun, received };
  }

  /** After a failure: nothing of model `name` in the store, the staging folder or the database, and the list does not show it. */
  async function expectNothingLeftOf(name: string, versionsKept: number[] = []): Promise<void> {
    expect(readdirSync(stagingDir)).toEqual([]);
    expect(readdirSync(storeDir).filter((entry) => entry.startsWith("."))).toEqual([]);
    if (versionsKept.length === 0) {
      expect(existsSync(join(storeDir, name))).toBe(false);
      expect(await db.prisma.model.count({ where: { name } })).toBe(0);
      expect((await h.as("VIEWER").models.list()).models.map((model) => model.name)).not.toContain(name);
    } else {
      const folders = readdirSync(join(storeDir, name))
        .filter((entry) => /^\d+$/.test(entry))
        .map(Number)
        .sort();
      expect(folders).toEqual(versionsKept);
      const rows = await db.prisma.modelVersion.findMany({ where: { model: { name } }, orderBy: { version: "asc" } });
      expect(rows.map((row) => row.version)).toEqual(versionsKept);
    }
  }

  it("lets viewers read, engineers change, and nobody signed out in", async () => {
    expect(await appCodeOf(h.as(null).models.list())).toBe("UNAUTHENTICATED");
    expect(
      await appCodeOf(
        h.as("VIEWER").models.upload.begin({ name: "x", fileName: "x.onnx", sizeBytes: 10, sha256: "a".repeat(64) }),
      ),
    ).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").models.load({ name: "add_sub" }))).toBe("FORBIDDEN");
    const { models, gatewayError } = await h.as("VIEWER").models.list();
    expect(gatewayError).toBeNull();
    expect(models.find((model) => model.name === "add_sub")).toMatchObject({
      source: "repository",
      state: "UNAVAILABLE",
      reason: "not loaded",
      versions: [],
    });
  });

  it("uploads a model in chunks, stores it as a Triton model, loads it and answers an inference", async () => {
    const { uploadId, version, chunkBytes, received } = await upload("adder", ADD_SUB, { chunks: 4 });
    expect(version).toBe(1);
    expect(chunkBytes).toBe(4 * 1024 * 1024);
    expect(received).toEqual([48, 96, 144, 192]);

    const inspected = await engineer().models.upload.inspect({ uploadId });
    expect(inspected.inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape }))).toEqual([
      { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
      { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
    ]);
    expect(inspected.suggestedConfig).toEqual({
      name: "adder",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      input: [
        { name: "INPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "INPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      output: [
        { name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "OUTPUT1", data_type: "TYPE_FP32", dims: [16] },
      ],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
      dynamic_batching: {},
    });

    expect(await engineer().models.upload.finish({ uploadId, description: "sum and difference" })).toEqual({
      name: "adder",
      version: 1,
      state: "READY",
    });
    expect(readFileSync(join(storeDir, "adder/1/model.onnx"))).toEqual(ADD_SUB);
    const stored = parsePbtxt(readFileSync(join(storeDir, "adder/config.pbtxt"), "utf8"), "config.pbtxt");
    expect(stored).toMatchObject({
      name: "adder",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      dynamic_batching: {},
    });
    expect(readdirSync(stagingDir)).toEqual([]);
    const row = await db.prisma.modelVersion.findFirstOrThrow({
      where: { model: { name: "adder" }, version: 1 },
      include: { model: true },
    });
    expect(row).toMatchObject({
      state: "LOADED",
      sizeBytes: 192n,
      sha256: sha256(ADD_SUB),
      uploadedById: h.users.ENGINEER.id,
      artifactUri: "adder/1/model.onnx",
    });
    expect(row.model).toMatchObject({
      description: "sum and difference",
      platform: "onnxruntime_onnx",
      ownerId: h.users.ENGINEER.id,
    });

    const result = await h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs });
    expect(result.modelVersion).toBe("1");
    expect(result.outputs.find((output) => output.name === "OUTPUT0")).toMatchObject({
      datatype: "FP32",
      shape: [1, 16],
      data: inputData.map((x) => x + 1),
    });
    expect(result.outputs.find((output) => output.name === "OUTPUT1")?.data).toEqual(inputData.map((x) => x - 1));
    expect(result.latencyMs).toBeGreaterThan(0);
    expect(
      await appCodeOf(
        h
          .as("VIEWER")
          .models.infer({ name: "adder", inputs: [{ ...addSubInputs[0]!, data: [1, 2] }, addSubInputs[1]!] }),
      ),
    ).toBe("VALIDATION_FAILED");

    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === "adder");
    expect(listed).toMatchObject({
      source: "uploaded",
      description: "sum and difference",
      platform: "onnxruntime_onnx",
      backend: "onnxruntime",
      state: "READY",
      reason: "",
      instanceCount: 1,
      inferenceCount: 1,
      versions: [
        { version: 1, state: "READY", sizeBytes: 192, sha256: sha256(ADD_SUB), uploadedBy: "engineer@example.com" },
      ],
    });
    const detail = await h.as("VIEWER").models.get({ name: "adder" });
    expect(detail.configSource).toBe("gateway");
    expect(detail.config).toMatchObject({ name: "adder", max_batch_size: 4 });
    expect(detail.inputs).toEqual([
      { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
      { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
    ]);
    expect(detail.statistics).toMatchObject({ inferenceCount: 1, successCount: 1, failureCount: 0 });
    expect(detail.statistics?.lastInferenceAt).toBeInstanceOf(Date);
  });

  it("still lists uploads when the gateway cannot be reached, and says why", async () => {
    const offline = await ControlPlane.create({
      db,
      gateway: { httpUrl: "http://127.0.0.1:9", timeoutMs: 2000 },
      modelStoreDir: storeDir,
      uploadStagingDir: join(dir, "offline-staging"),
      usageSampleIntervalSecs: 0,
    });
    try {
      const viewer = createCaller(createInProcessContext(offline.services, h.users.VIEWER));
      const { models, gatewayError } = await viewer.models.list();
      expect(gatewayError).toMatch(/not reachable/);
      expect(models.map((model) => model.name)).toEqual(["adder"]);
      expect(models[0]).toMatchObject({ state: "UNKNOWN", versions: [{ version: 1, state: "UNKNOWN" }] });
      expect(await viewer.models.get({ name: "adder" })).toMatchObject({
        configSource: "stored",
        config: { max_batch_size: 4 },
      });
      const engineerOffline = createCaller(createInProcessContext(offline.services, h.users.ENGINEER));
      const begin = await failure(
        engineerOffline.models.upload.begin({
          name: "later",
          fileName: "m.onnx",
          sizeBytes: 10,
          sha256: "a".repeat(64),
        }),
      );
      expect(begin).toMatchObject({
        code: "GATEWAY_UNAVAILABLE",
        message: expect.stringMatching(/^uploads need the gateway/),
      });
    } finally {
      await offline.stop();
    }
  });

  it("adds a second version that takes over serving", async () => {
    expect(
      await appCodeOf(
        engineer().models.upload.begin({
          name: "adder",
          fileName: "m.onnx",
          sizeBytes: ADD_SUB.length,
          sha256: sha256(ADD_SUB),
          version: 1,
        }),
      ),
    ).toBe("CONFLICT");
    // An upload begun and left (a closed browser tab) holds no number: uploads are numbered when they finish.
    const abandoned = await engineer().models.upload.begin({
      name: "adder",
      fileName: "m.onnx",
      sizeBytes: ADD_SUB.length,
      sha256: sha256(ADD_SUB),
    });
    expect(abandoned.version).toBe(2);
    const { uploadId, version } = await upload("adder", ADD_SUB, { chunks: 2 });
    expect(version).toBe(2);
    const config = { max_batch_size: 8, dynamic_batching: { max_queue_delay_microseconds: 100 } };
    expect(await engineer().models.upload.finish({ uploadId, config })).toEqual({
      name: "adder",
      version: 2,
      state: "READY",
    });
    await engineer().models.upload.abort({ uploadId: abandoned.uploadId });
    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === "adder")!;
    expect(listed.state).toBe("READY");
    expect(listed.versions.map(({ version: v, state, reason }) => ({ v, state, reason }))).toEqual([
      { v: 1, state: "UNAVAILABLE", reason: "unloaded" },
      { v: 2, state: "READY", reason: "" },
    ]);
    expect((await h.as("VIEWER").models.infer({ name: "adder", version: 2, inputs: addSubInputs })).modelVersion).toBe(
      "2",
    );
    expect((await h.as("VIEWER").models.get({ name: "adder" })).config).toMatchObject({
      max_batch_size: 8,
      dynamic_batching: { max_queue_delay_microseconds: 100 },
    });
    const rows = await db.prisma.modelVersion.findMany({
      where: { model: { name: "adder" } },
      orderBy: { version: "asc" },
    });
    expect(rows.map((row) => row.state)).toEqual(["UNLOADED", "LOADED"]);
  });

  it("refuses bad upload requests up front, naming the problem", async () => {
    const tooBig = await failure(
      engineer().models.upload.begin({
        name: "big",
        fileName: "big.onnx",
        sizeBytes: MAX_UPLOAD_BYTES + 1,
        sha256: "a".repeat(64),
      }),
    );
    expect(tooBig.code).toBe("PAYLOAD_TOO_LARGE");
    expect(tooBig.message).toContain(`${MAX_UPLOAD_BYTES + 1} bytes`);
    expect(tooBig.message).toContain(`${MAX_UPLOAD_BYTES} bytes`);
    const notOnnx = await failure(
      engineer().models.upload.begin({ name: "torch", fileName: "model.pt", sizeBytes: 10, sha256: "a".repeat(64) }),
    );
    expect(notOnnx).toMatchObject({ code: "VALIDATION_FAILED", fieldErrors: [{ path: "fileName" }] });
    expect(
      await appCodeOf(
        engineer().models.upload.begin({ name: ".hidden", fileName: "m.onnx", sizeBytes: 10, sha256: "a".repeat(64) }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    expect(
      await appCodeOf(
        engineer().models.upload.begin({ name: "a/b", fileName: "m.onnx", sizeBytes: 10, sha256: "a".repeat(64) }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    expect(
      await appCodeOf(
        engineer().models.upload.begin({
          name: "x".repeat(129),
          fileName: "m.onnx",
          sizeBytes: 10,
          sha256: "a".repeat(64),
        }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    expect(
      await appCodeOf(
        engineer().models.upload.begin({ name: "short_hash", fileName: "m.onnx", sizeBytes: 10, sha256: "abc" }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    // The console's upload page is /models/upload: no model may be named so.
    await expect(
      engineer().models.upload.begin({ name: "upload", fileName: "m.onnx", sizeBytes: 10, sha256: "a".repeat(64) }),
    ).rejects.toThrow(/'upload' and 'steps' are names of the console's pages under \/models/);
    // A repository model's name cannot be taken by an upload.
    const taken = await failure(
      engineer().models.upload.begin({ name: "add_sub", fileName: "m.onnx", sizeBytes: 10, sha256: "a".repeat(64) }),
    );
    expect(taken.code).toBe("CONFLICT");
    expect(taken.message).toMatch(/model repository folders/);

    // A chunk past the declared size.
    const { uploadId } = await engineer().models.upload.begin({
      name: "small",
      fileName: "small.onnx",
      sizeBytes: 10,
      sha256: "a".repeat(64),
    });
    const past = await failure(
      engineer().models.upload.chunk({ uploadId, offset: 0, data: Buffer.alloc(11).toString("base64") }),
    );
    expect(past.code).toBe("PAYLOAD_TOO_LARGE");
    expect(past.message).toMatch(/past the 10 bytes declared/);
    expect(await appCodeOf(engineer().models.upload.chunk({ uploadId, offset: 0, data: "not base64!" }))).toBe(
      "VALIDATION_FAILED",
    );
    // Only the engineer who began it sees the upload.
    expect(await appCodeOf(h.as("ADMIN").models.upload.chunk({ uploadId, offset: 0, data: "AAAA" }))).toBe("NOT_FOUND");
    await engineer().models.upload.abort({ uploadId });
    await expectNothingLeftOf("small");
  });

  it("wants chunks in order, without gaps or overlaps", async () => {
    const { uploadId } = await engineer().models.upload.begin({
      name: "ordered",
      fileName: "m.onnx",
      sizeBytes: ADD_SUB.length,
      sha256: sha256(ADD_SUB),
    });
    const gap = await failure(
      engineer().models.upload.chunk({ uploadId, offset: 10, data: ADD_SUB.subarray(10, 20).toString("base64") }),
    );
    expect(gap).toMatchObject({ code: "CONFLICT", message: expect.stringContaining("expected offset 0") });
    await engineer().models.upload.chunk({ uploadId, offset: 0, data: ADD_SUB.subarray(0, 50).toString("base64") });
    const overlap = await failure(
      engineer().models.upload.chunk({ uploadId, offset: 0, data: ADD_SUB.subarray(0, 50).toString("base64") }),
    );
    expect(overlap).toMatchObject({ code: "CONFLICT", message: expect.stringContaining("expected offset 50") });
    await engineer().models.upload.abort({ uploadId });
    expect(await appCodeOf(engineer().models.upload.chunk({ uploadId, offset: 50, data: "AAAA" }))).toBe("NOT_FOUND");
    await expectNothingLeftOf("ordered");
  });

  it("refuses to finish an upload before its last byte", async () => {
    const { uploadId } = await upload("truncated", ADD_SUB, { chunks: 2, stopAt: 100 });
    const early = await failure(engineer().models.upload.finish({ uploadId }));
    expect(early).toMatchObject({ code: "VALIDATION_FAILED", message: "upload incomplete: got 100 of 192 bytes" });
    expect(await appCodeOf(engineer().models.upload.inspect({ uploadId }))).toBe("VALIDATION_FAILED");
    expect(existsSync(join(storeDir, "truncated"))).toBe(false);
    await engineer().models.upload.abort({ uploadId });
    await expectNothingLeftOf("truncated");
  });

  it("discards an upload whose sha256 does not match", async () => {
    const declared = sha256(Buffer.from("something else"));
    const { uploadId } = await upload("mismatch", ADD_SUB, { sha: declared });
    const wrong = await failure(engineer().models.upload.inspect({ uploadId }));
    expect(wrong.code).toBe("VALIDATION_FAILED");
    expect(wrong.message).toContain(sha256(ADD_SUB));
    expect(wrong.message).toContain(declared);
    expect(await appCodeOf(engineer().models.upload.finish({ uploadId }))).toBe("NOT_FOUND");
    await expectNothingLeftOf("mismatch");
  });

  it("discards a file that is not an ONNX model", async () => {
    const text = Buffer.from("this is a text file pretending to be a model\n".repeat(4));
    const { uploadId } = await upload("fake", text, { fileName: "fake.onnx" });
    const refused = await failure(engineer().models.upload.finish({ uploadId }));
    expect(refused.code).toBe("VALIDATION_FAILED");
    expect(refused.message).toMatch(
      /^fake\.onnx: this is not an ONNX model file: it looks like text \(it starts with "this is a text file.*; the upload was discarded$/,
    );
    await expectNothingLeftOf("fake");
  });

  it("refuses a config that disagrees with the model, pointing at the field, and keeps the upload for a fixed config", async () => {
    const { uploadId } = await upload("miswired", ADD_SUB);
    const tensor = (name: string, dims: number[]) => ({ name, data_type: "TYPE_FP32", dims });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ max_batch_size: 4, input: [tensor("INPUT0", [8]), tensor("INPUT1", [16])] }, "input[0].dims"],
      [{ input: [{ name: "INPUT0", data_type: "TYPE_INT32" }] }, "input[0].data_type"],
      [{ output: [{ name: "SUM" }] }, "output[0].name"],
      [{ max_batch_size: -1 }, "max_batch_size"],
      [{ input: [{ name: "INPUT0", dims: ["sixteen"] }] }, "input[0].dims[0]"],
      [{ platform: "tensorflow_savedmodel" }, "platform"],
      [{ name: "other" }, "name"],
      [{ version_policy: { specific: { versions: [7] } } }, "version_policy"],
    ];
    for (const [config, path] of cases) {
      const refused = await failure(engineer().models.upload.finish({ uploadId, config }));
      expect(refused.code, path).toBe("VALIDATION_FAILED");
      expect(
        refused.fieldErrors.map((field) => field.path),
        JSON.stringify(config),
      ).toContain(path);
    }
    const dims = await failure(engineer().models.upload.finish({ uploadId, config: cases[0]![0] }));
    expect(dims.message).toMatch(/input\[0\]\.dims: \[8\] does not match the model's input 'INPUT0': expected \[16\]/);
    expect(existsSync(join(storeDir, "miswired"))).toBe(false);
    expect(await db.prisma.model.count({ where: { name: "miswired" } })).toBe(0);
    // The upload is still there for another try.
    expect((await engineer().models.upload.inspect({ uploadId })).inputs).toHaveLength(2);
    await engineer().models.upload.abort({ uploadId });
    await expectNothingLeftOf("miswired");
  });

  it("removes everything of a model the gateway refuses, and a refused new version leaves the old one serving", async () => {
    const broken = unloadableModel();
    const first = await upload("broken", broken);
    const refused = await failure(engineer().models.upload.finish({ uploadId: first.uploadId }));
    expect(refused.code).toBe("VALIDATION_FAILED");
    expect(refused.message).toMatch(/^the gateway refused version 1 of model 'broken': .*NoSuchOperator/);
    await expectNothingLeftOf("broken");
    expect(await appCodeOf(h.as("VIEWER").models.get({ name: "broken" }))).toBe("NOT_FOUND");

    const configBefore = readFileSync(join(storeDir, "adder/config.pbtxt"), "utf8");
    const next = await upload("adder", broken);
    expect(next.version).toBe(3);
    const refusedVersion = await failure(
      engineer().models.upload.finish({ uploadId: next.uploadId, config: { max_batch_size: 2 } }),
    );
    expect(refusedVersion.message).toMatch(/^the gateway refused version 3 of model 'adder'/);
    await expectNothingLeftOf("adder", [1, 2]);
    expect(readFileSync(join(storeDir, "adder/config.pbtxt"), "utf8")).toBe(configBefore);
    expect((await h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs })).modelVersion).toBe("2");
    expect((await h.as("VIEWER").models.get({ name: "adder" })).state).toBe("READY");
  });

  it("updates a config: refuses a bad field, restores a config the gateway refuses, applies a good one", async () => {
    const path = join(storeDir, "adder/config.pbtxt");
    const before = readFileSync(path, "utf8");
    const bad = await failure(
      engineer().models.updateConfig({
        name: "adder",
        config: { max_batch_size: 4, input: [{ name: "INPUT1", data_type: "TYPE_FP32", dims: [4, 4] }] },
      }),
    );
    expect(bad).toMatchObject({ code: "VALIDATION_FAILED", fieldErrors: [{ path: "input[0].dims" }] });
    expect(readFileSync(path, "utf8")).toBe(before);

    // Inline instances run on the gateway's event loop: no upload may ask for them, an admin's included.
    for (const role of ["ENGINEER", "ADMIN"] as const) {
      const inline = await failure(
        h.as(role).models.updateConfig({
          name: "adder",
          config: { parameters: { operon_isolation: { string_value: "inline" } } },
        }),
      );
      expect(inline).toMatchObject({
        code: "VALIDATION_FAILED",
        fieldErrors: [{ path: "parameters.operon_isolation" }],
      });
      expect(inline.message).toMatch(/gateway's event loop/);
      expect(readFileSync(path, "utf8")).toBe(before);
    }

    const refused = await failure(
      engineer().models.updateConfig({
        name: "adder",
        config: { parameters: { intra_op_thread_count: { string_value: "lots" } } },
      }),
    );
    expect(refused.code).toBe("VALIDATION_FAILED");
    expect(refused.message).toMatch(
      /^the gateway refused the new config of model 'adder': .*intra_op_thread_count.*; the previous config is restored and serving$/,
    );
    expect(readFileSync(path, "utf8")).toBe(before);
    expect((await h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs })).modelVersion).toBe("2");

    const updated = await engineer().models.updateConfig({
      name: "adder",
      config: { max_batch_size: 8, instance_group: [{ kind: "KIND_CPU", count: 2 }] },
    });
    expect(updated).toMatchObject({
      name: "adder",
      state: "READY",
      config: { max_batch_size: 8, instance_group: [{ kind: "KIND_CPU", count: 2 }] },
    });
    expect(parsePbtxt(readFileSync(path, "utf8"), path).instance_group).toEqual([{ kind: "KIND_CPU", count: 2 }]);
    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === "adder")!;
    expect(listed.instanceCount).toBe(2);
    const rows = await db.prisma.modelVersion.findMany({ where: { model: { name: "adder" } } });
    expect(rows.every((row) => (row.config as { instance_group?: unknown }).instance_group !== undefined)).toBe(true);
    expect(await appCodeOf(h.as("VIEWER").models.updateConfig({ name: "adder", config: {} }))).toBe("FORBIDDEN");
  });

  it("unloads, loads and deletes uploads; repository models are only loaded and unloaded", async () => {
    expect(await engineer().models.unload({ name: "adder" })).toMatchObject({
      name: "adder",
      state: "UNAVAILABLE",
      reason: "unloaded",
    });
    expect((await h.as("VIEWER").models.list()).models.find((model) => model.name === "adder")).toMatchObject({
      state: "UNAVAILABLE",
      instanceCount: 0,
    });
    await expect(h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs })).rejects.toThrow(/adder/);
    const stored = await h.as("VIEWER").models.get({ name: "adder" });
    expect(stored.configSource).toBe("stored");
    expect(stored.inputs).toEqual([
      { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
      { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
    ]);
    expect(
      (await db.prisma.modelVersion.findMany({ where: { model: { name: "adder" } } })).map((row) => row.state),
    ).toEqual(["UNLOADED", "UNLOADED"]);
    expect(await engineer().models.load({ name: "adder" })).toMatchObject({ state: "READY" });
    expect((await h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs })).modelVersion).toBe("2");

    const repoDelete = await failure(engineer().models.delete({ name: "add_sub" }));
    expect(repoDelete.code).toBe("CONFLICT");
    expect(repoDelete.message).toMatch(/lives in one of the gateway's model repository folders/);
    expect((await failure(engineer().models.updateConfig({ name: "add_sub", config: {} }))).code).toBe("CONFLICT");
    expect(await engineer().models.load({ name: "add_sub" })).toMatchObject({ state: "READY" });
    expect(await engineer().models.unload({ name: "add_sub" })).toMatchObject({ state: "UNAVAILABLE" });
    expect(await appCodeOf(engineer().models.delete({ name: "no_such_model" }))).toBe("NOT_FOUND");

    expect(await appCodeOf(h.as("VIEWER").models.delete({ name: "adder" }))).toBe("FORBIDDEN");
    expect(await engineer().models.delete({ name: "adder" })).toEqual({ name: "adder", deleted: true });
    await expectNothingLeftOf("adder");
    await expect(h.as("VIEWER").models.infer({ name: "adder", inputs: addSubInputs })).rejects.toThrow(/adder/);
    // The name is free again.
    const again = await upload("adder", ADD_SUB);
    expect(again.version).toBe(1);
    await engineer().models.upload.abort({ uploadId: again.uploadId });
  });

  it("keeps repository models repository models when the usage sampler has a row for them", async () => {
    // The sampler records usage of every served model, so it makes Model rows without versions.
    await db.prisma.model.upsert({ where: { name: "add_sub" }, create: { name: "add_sub" }, update: {} });
    const listed = (await h.as("VIEWER").models.list()).models.find((model) => model.name === "add_sub");
    expect(listed).toMatchObject({ source: "repository" });
    expect((await h.as("VIEWER").models.get({ name: "add_sub" })).source).toBe("repository");
    expect((await failure(engineer().models.delete({ name: "add_sub" }))).code).toBe("CONFLICT");
    expect(await db.prisma.model.count({ where: { name: "add_sub" } })).toBe(1);
  });

  it("lists an operator as an operator, says which operators use a model, and refuses to delete a model in use", async () => {
    const { uploadId } = await upload("used_adder", ADD_SUB);
    await engineer().models.upload.finish({ uploadId });
    const spec = {
      inputs: [
        { name: "A", datatype: "FP32", dims: [16] },
        { name: "B", datatype: "FP32", dims: [16] },
      ],
      outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
      maxBatchSize: 4,
      steps: [
        {
          id: "first",
          kind: "model",
          model: "used_adder",
          inputs: { INPUT0: "A", INPUT1: "B" },
          outputs: { OUTPUT0: "Y" },
        },
      ],
    };
    await engineer().operators.create({ name: "adds_once", spec });
    const listed = (await h.as("VIEWER").models.list()).models;
    // The gateway lists the operator beside its models: it is an operator, not a repository folder (issue 27, item 4).
    expect(listed.find((model) => model.name === "adds_once")).toMatchObject({ source: "operator", usedBy: [] });
    expect(listed.find((model) => model.name === "used_adder")).toMatchObject({
      source: "uploaded",
      usedBy: ["adds_once"],
    });
    expect(await h.as("VIEWER").models.get({ name: "adds_once" })).toMatchObject({ source: "operator" });
    expect((await h.as("VIEWER").models.get({ name: "used_adder" })).usedBy).toEqual(["adds_once"]);

    const refused = await failure(engineer().models.delete({ name: "used_adder" }));
    expect(refused.code).toBe("CONFLICT");
    expect(refused.message).toMatch(
      /^model 'used_adder' is used by operator 'adds_once': change it to use another model/,
    );
    expect(await db.prisma.model.count({ where: { name: "used_adder" } })).toBe(1);
    expect((await h.as("VIEWER").models.infer({ name: "used_adder", inputs: addSubInputs })).modelVersion).toBe("1");
    const unload = await failure(engineer().models.unload({ name: "adds_once" }));
    expect(unload.code).toBe("CONFLICT");
    expect(unload.message).toMatch(/'adds_once' is an operator, not a model/);

    await engineer().operators.delete({ name: "adds_once" });
    expect(await engineer().models.delete({ name: "used_adder" })).toEqual({ name: "used_adder", deleted: true });
  });

  it("sends BYTES inputs given as base64 (a file picked in Try it) as binary data, and refuses bad ones", async () => {
    expect(await engineer().models.load({ name: "identity_bytes" })).toMatchObject({ state: "READY" });
    const [input] = (await h.as("VIEWER").models.get({ name: "identity_bytes" })).inputs;
    const shape = input!.shape.map((dim) => (dim < 0 ? 1 : dim));
    // Text with a character JSON would carry too, and bytes that arrive as they were sent.
    const text = "héllo, wörld";
    const answer = await h.as("VIEWER").models.infer({
      name: "identity_bytes",
      inputs: [
        {
          name: input!.name,
          datatype: "BYTES",
          shape,
          data: [Buffer.from(text).toString("base64")],
          encoding: "base64",
        },
      ],
    });
    expect(answer.outputs[0]!.data).toEqual([text]);

    const notBase64 = await failure(
      h.as("VIEWER").models.infer({
        name: "identity_bytes",
        inputs: [{ name: input!.name, datatype: "BYTES", shape, data: ["not base64!"], encoding: "base64" }],
      }),
    );
    expect(notBase64.code).toBe("VALIDATION_FAILED");
    expect(notBase64.message).toMatch(/each element must be base64/);
    const notBytes = await failure(
      h.as("VIEWER").models.infer({
        name: "add_sub",
        inputs: [{ ...addSubInputs[0]!, data: addSubInputs[0]!.data.map(() => "AAAA"), encoding: "base64" }],
      }),
    );
    expect(notBytes.message).toMatch(/base64 data is for BYTES inputs, not FP32/);
    const tooLarge = await failure(
      h.as("VIEWER").models.infer({
        name: "identity_bytes",
        inputs: [
          { name: input!.name, datatype: "BYTES", shape, data: ["A".repeat(9 * 1024 * 1024)], encoding: "base64" },
        ],
      }),
    );
    expect(tooLarge.message).toMatch(/more than 6 MiB/);
  });

  it("writes an audit event for every change", async () => {
    const { events } = await h.as("ADMIN").audit.list({ action: "model.", limit: 100 });
    const actions = new Set(events.map((event) => `${event.action} ${event.targetId}`));
    for (const expected of [
      "model.upload adder",
      "model.updateConfig adder",
      "model.unload adder",
      "model.load adder",
      "model.delete adder",
      "model.load add_sub",
      "model.unload add_sub",
    ]) {
      expect(actions).toContain(expected);
    }
    const uploads = events.filter((event) => event.action === "model.upload" && event.targetId === "adder");
    expect(uploads.map((event) => (event.after as { version: number }).version).sort()).toEqual([1, 2]);
    expect(uploads.every((event) => event.actorEmail === "engineer@example.com")).toBe(true);
    // Refused uploads left no trace in the models' tables, and none in the audit either.
    expect(events.some((event) => event.targetId === "broken")).toBe(false);
  });
});
