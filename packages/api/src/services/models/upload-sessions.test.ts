import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openAndMigrate, type Database } from "@operon/db";
import { AppError } from "../../app-error.js";
import { SILENT_LOGGER } from "../../options.js";
import { MAX_OPEN_UPLOADS_PER_USER, UploadSessions } from "./upload-sessions.js";

const ADD_SUB = readFileSync(
  fileURLToPath(new URL("../../../../../examples/model_repository/add_sub/1/model.onnx", import.meta.url)),
);
const TTL_MS = 60_000;

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof AppError ? error.code : String(error);
  }
  throw new Error("expected the call to fail");
}

describe("UploadSessions", () => {
  let dbDir: string;
  let db: Database;
  let dir: string;
  let now: number;
  let sessions: UploadSessions;

  // Sessions are rows of the embedded database (the same migrations as PostgreSQL), owned by users u1 and u2.
  beforeAll(async () => {
    dbDir = mkdtempSync(join(tmpdir(), "operon-uploads-db-"));
    db = (await openAndMigrate({ url: `file:${dbDir}` })).db;
    for (const id of ["u1", "u2"]) await db.prisma.user.create({ data: { id, email: `${id}@example.com` } });
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dbDir, { recursive: true, force: true });
  });

  const open = (stagingDir = dir) =>
    UploadSessions.create({
      stagingDir,
      prisma: db.prisma,
      logger: SILENT_LOGGER,
      ttlMs: TTL_MS,
      sweepIntervalMs: 0,
      now: () => now,
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-uploads-"));
    now = 1_000_000;
    await db.prisma.uploadSession.deleteMany();
    sessions = await open();
  });
  afterEach(async () => {
    await sessions.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const begin = (userId = "u1", bytes = ADD_SUB) =>
    sessions.begin(userId, {
      modelName: "m",
      version: 1,
      versionRequested: false,
      fileName: "m.onnx",
      sizeBytes: bytes.length,
      sha256: sha256(bytes),
    });

  it("stages chunks in order and verifies the whole file", async () => {
    const session = await begin();
    expect(await sessions.writeChunk(session.id, "u1", 0, ADD_SUB.subarray(0, 100))).toBe(100);
    expect(await codeOf(sessions.verify(session.id, "u1"))).toBe("VALIDATION_FAILED");
    expect(await sessions.writeChunk(session.id, "u1", 100, ADD_SUB.subarray(100))).toBe(ADD_SUB.length);
    const { signature } = await sessions.verify(session.id, "u1");
    expect(signature.outputs.map((output) => output.name)).toEqual(["OUTPUT0", "OUTPUT1"]);
    expect(readFileSync(session.path)).toEqual(ADD_SUB);
    // Numbered when it finishes: an upload without a version asked for holds none.
    expect(sessions.reservedVersions("m")).toEqual([]);
    const asked = await sessions.begin("u1", {
      modelName: "m",
      version: 4,
      versionRequested: true,
      fileName: "m.onnx",
      sizeBytes: ADD_SUB.length,
      sha256: sha256(ADD_SUB),
    });
    expect(sessions.reservedVersions("m")).toEqual([4]);
    await sessions.abort(asked.id, "u1");
  });

  it("keeps each upload to the user who began it", async () => {
    const session = await begin("u1");
    expect(await codeOf(sessions.writeChunk(session.id, "u2", 0, ADD_SUB))).toBe("NOT_FOUND");
    expect(await codeOf(sessions.abort(session.id, "u2"))).toBe("NOT_FOUND");
    await sessions.abort(session.id, "u1");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("expires uploads after the TTL without activity, on access and by the sweep", async () => {
    const touched = await begin();
    const idle = await begin();
    now += TTL_MS / 2;
    await sessions.writeChunk(touched.id, "u1", 0, ADD_SUB.subarray(0, 10));
    now += TTL_MS / 2 + 1;
    await sessions.sweep();
    expect(existsSync(idle.path)).toBe(false);
    expect(existsSync(touched.path)).toBe(true);
    expect(await codeOf(sessions.writeChunk(idle.id, "u1", 0, ADD_SUB))).toBe("NOT_FOUND");
    now += TTL_MS + 1;
    expect(await codeOf(sessions.writeChunk(touched.id, "u1", 10, ADD_SUB.subarray(10, 20)))).toBe("NOT_FOUND");
    expect(readdirSync(dir)).toEqual([]);
    expect(sessions.openCount).toBe(0);
  });

  it("lets one request at a time work on an upload", async () => {
    const session = await begin();
    let release!: () => void;
    const held = sessions.withClaim(
      session.id,
      "u1",
      "the finish",
      () => new Promise<void>((resolve) => (release = resolve)),
    );
    expect(await codeOf(sessions.writeChunk(session.id, "u1", 0, ADD_SUB))).toBe("CONFLICT");
    expect(await codeOf(sessions.abort(session.id, "u1"))).toBe("CONFLICT");
    now += TTL_MS * 2;
    await sessions.sweep();
    expect(existsSync(session.path)).toBe(true); // a claimed upload does not expire under its request
    release();
    await held;
    expect(await sessions.writeChunk(session.id, "u1", 0, ADD_SUB)).toBe(ADD_SUB.length);
  });

  it("limits the unfinished uploads of one user", async () => {
    for (let i = 0; i < MAX_OPEN_UPLOADS_PER_USER; i += 1) await begin("u1");
    expect(await codeOf(begin("u1"))).toBe("CONFLICT");
    await begin("u2");
  });

  it("removes files no upload owns, and only those", async () => {
    const other = join(dir, "other");
    mkdirSync(other);
    writeFileSync(join(other, "model-upload-keep.part"), "x");
    writeFileSync(join(dir, "model-upload-0000.part"), "stale");
    writeFileSync(join(dir, "notes.txt"), "not ours");
    const fresh = await open();
    expect(readdirSync(dir).sort()).toEqual(["notes.txt", "other"]);
    await fresh.stop();
  });

  it("resumes open uploads after a restart, where the client was told they stood", async () => {
    const session = await begin();
    await sessions.writeChunk(session.id, "u1", 0, ADD_SUB.subarray(0, 100));
    await sessions.stop();
    expect(await codeOf(begin())).toBe("GATEWAY_UNAVAILABLE");
    // A chunk that reached the file but not the row (the process died in between) is sent again by the client.
    writeFileSync(session.path, Buffer.concat([ADD_SUB.subarray(0, 100), Buffer.from("half a chunk")]));

    sessions = await open();
    expect(sessions.openCount).toBe(1);
    expect(await codeOf(sessions.writeChunk(session.id, "u1", 0, ADD_SUB))).toBe("CONFLICT");
    expect(await codeOf(sessions.writeChunk(session.id, "u2", 100, ADD_SUB.subarray(100)))).toBe("NOT_FOUND");
    expect(await sessions.writeChunk(session.id, "u1", 100, ADD_SUB.subarray(100))).toBe(ADD_SUB.length);
    const { signature } = await sessions.verify(session.id, "u1");
    expect(signature.outputs.map((output) => output.name)).toEqual(["OUTPUT0", "OUTPUT1"]);
    expect(readFileSync(session.path)).toEqual(ADD_SUB);
  });

  it("drops, on restart, uploads that expired or whose staged bytes were lost", async () => {
    const expired = await begin();
    now += TTL_MS / 2;
    const lost = await begin();
    await sessions.writeChunk(lost.id, "u1", 0, ADD_SUB.subarray(0, 100));
    await sessions.stop();
    writeFileSync(lost.path, ADD_SUB.subarray(0, 50)); // fewer bytes than the client was told arrived
    now += TTL_MS / 2 + 1;

    sessions = await open();
    expect(sessions.openCount).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
    expect(await db.prisma.uploadSession.count()).toBe(0);
    expect(await codeOf(sessions.writeChunk(expired.id, "u1", 0, ADD_SUB))).toBe("NOT_FOUND");
  });

  it("keeps no row or file of an upload that ended", async () => {
    const aborted = await begin();
    const finished = await begin();
    await sessions.writeChunk(finished.id, "u1", 0, ADD_SUB);
    await sessions.verify(finished.id, "u1");
    await sessions.abort(aborted.id, "u1");
    await sessions.discard(finished);
    expect(await db.prisma.uploadSession.count()).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });
});
