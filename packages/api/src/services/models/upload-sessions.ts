import { createHash, randomUUID, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, readdir, rm, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import type { PrismaClient } from "@operon/db";
import { readOnnxSignatureFile, type OnnxSignature } from "@operon/model-config/onnx-signature";
import { OperonError } from "@operon/protocol/errors";
import { AppError } from "../../app-error.js";
import type { Logger } from "@operon/protocol/logger";
import { PeriodicTask } from "@operon/protocol/periodic-task";

/**
 * Resumable model uploads: a session per upload, its bytes staged in one
 * file of the staging folder, appended in order (each chunk must start where
 * the last one ended) and hashed as they arrive, so the sha256 check at the
 * end costs nothing.
 *
 * Sessions are rows of the database (UploadSession) as well as objects here:
 * a chunk counts as received once its bytes are in the staging file and its
 * row says so, and only then is the client told the new offset. A control
 * plane that restarts (or is killed) reads the rows back, cuts each staging
 * file to the bytes its row counts (a chunk written but not recorded is sent
 * again by the client, who was never told it arrived) and hashes it again, so
 * the upload goes on where it stood. Staging files without a row (named
 * model-upload-<id>.part, so that nothing else in the folder is touched) and
 * rows without a file are removed then. A session expires after an hour
 * without activity; a timer sweeps expired ones.
 *
 * One control plane serves the uploads of a database (the design's one
 * control plane, many gateways): the rows make uploads outlive it, not shared
 * between several at once.
 *
 * Ownership: one call at a time works on a session (`busy`); a second one
 * gets CONFLICT instead of interleaving writes. The finishing step claims
 * the session for its whole duration, so that neither chunks, nor an abort,
 * nor the sweeper pull the file away underneath it.
 */
export const UPLOAD_CHUNK_BYTES = 4 * 1024 * 1024;
export const UPLOAD_SESSION_TTL_MS = 60 * 60 * 1000;
/** Unfinished uploads one user may hold, so that abandoned ones cannot fill the staging disk. */
export const MAX_OPEN_UPLOADS_PER_USER = 8;

const FILE_PREFIX = "model-upload-";
const FILE_SUFFIX = ".part";

export interface UploadSession {
  readonly id: string;
  readonly userId: string;
  readonly modelName: string;
  /**
   * The version asked for, or (versionRequested false) the one the model
   * would get if the upload finished now: uploads without a version are
   * numbered when they finish, so an abandoned one uses up no number.
   */
  readonly version: number;
  readonly versionRequested: boolean;
  readonly fileName: string;
  readonly sizeBytes: number;
  /** Lower-case hex, as declared at the start. */
  readonly sha256: string;
  readonly path: string;
  receivedBytes: number;
  lastActivityMs: number;
  busy: boolean;
  /** Set once the complete file matched its hash and parsed as ONNX. */
  signature: OnnxSignature | undefined;
}

export interface UploadSessionsOptions {
  stagingDir: string;
  /** Where the sessions are recorded (the UploadSession table). */
  prisma: PrismaClient;
  logger: Logger;
  ttlMs?: number;
  /** How often expired sessions are swept (default one minute; 0 = no timer). */
  sweepIntervalMs?: number;
  now?: () => number;
}

interface SessionState extends UploadSession {
  hash: Hash;
}

export class UploadSessions {
  private readonly sessions = new Map<string, SessionState>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly ttlMs: number;
  private readonly now: () => number;
  private timer: PeriodicTask | undefined;
  private stopped = false;

  private constructor(private readonly options: UploadSessionsOptions) {
    this.ttlMs = options.ttlMs ?? UPLOAD_SESSION_TTL_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * Creates the staging folder, takes back the uploads a previous run left
   * open (see the class comment) and removes what no upload owns.
   */
  static async create(options: UploadSessionsOptions): Promise<UploadSessions> {
    await mkdir(options.stagingDir, { recursive: true });
    const sessions = new UploadSessions(options);
    await sessions.resume();
    const interval = options.sweepIntervalMs ?? 60_000;
    sessions.timer = new PeriodicTask(() => sessions.sweep(), {
      intervalMs: interval,
      onError: (error) => options.logger.error({ err: error }, "upload session sweep failed"),
    });
    sessions.timer.start();
    return sessions;
  }

  private pathOf(id: string): string {
    return join(this.options.stagingDir, `${FILE_PREFIX}${id}${FILE_SUFFIX}`);
  }

  private async resume(): Promise<void> {
    const { prisma, logger } = this.options;
    const rows = await prisma.uploadSession.findMany();
    const owned = new Set<string>();
    for (const row of rows) {
      const path = this.pathOf(row.id);
      const recorded = Number(row.receivedBytes);
      const onDisk = await stat(path).then(
        (info) => info.size,
        () => undefined,
      );
      const expired = this.now() - row.lastActivityAt.getTime() > this.ttlMs;
      if (onDisk === undefined || onDisk < recorded || expired) {
        // A file shorter than its row lost bytes the client was told had arrived: the upload cannot go on.
        await prisma.uploadSession.deleteMany({ where: { id: row.id } });
        await rm(path, { force: true });
        logger.info(
          { uploadId: row.id, model: row.modelName },
          expired ? "upload expired" : "removed an upload whose staged bytes were lost",
        );
        continue;
      }
      // Bytes past the row's count belong to a chunk whose answer never left: the client sends it again.
      if (onDisk > recorded) await truncate(path, recorded);
      const hash = createHash("sha256");
      if (recorded > 0) for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
      owned.add(`${FILE_PREFIX}${row.id}${FILE_SUFFIX}`);
      this.sessions.set(row.id, {
        id: row.id,
        userId: row.userId,
        modelName: row.modelName,
        version: row.version,
        versionRequested: row.versionRequested,
        fileName: row.fileName,
        sizeBytes: Number(row.sizeBytes),
        sha256: row.sha256,
        path,
        receivedBytes: recorded,
        lastActivityMs: row.lastActivityAt.getTime(),
        busy: false,
        signature: undefined,
        hash,
      });
      logger.info({ uploadId: row.id, model: row.modelName, receivedBytes: recorded }, "resumed an upload");
    }
    for (const name of await readdir(this.options.stagingDir)) {
      if (name.startsWith(FILE_PREFIX) && name.endsWith(FILE_SUFFIX) && !owned.has(name)) {
        await rm(join(this.options.stagingDir, name), { force: true });
        logger.info({ file: name }, "removed an upload file no upload owns");
      }
    }
  }

  /** Versions that open uploads of `modelName` asked for by number (the others are numbered when they finish). */
  reservedVersions(modelName: string): number[] {
    return [...this.sessions.values()]
      .filter((session) => session.modelName === modelName && session.versionRequested)
      .map((session) => session.version);
  }

  async begin(
    userId: string,
    init: {
      modelName: string;
      version: number;
      versionRequested: boolean;
      fileName: string;
      sizeBytes: number;
      sha256: string;
    },
  ): Promise<UploadSession> {
    if (this.stopped) throw new AppError("GATEWAY_UNAVAILABLE", "the control plane is shutting down");
    const held = [...this.sessions.values()].filter((session) => session.userId === userId).length;
    if (held >= MAX_OPEN_UPLOADS_PER_USER) {
      throw new AppError(
        "CONFLICT",
        `you have ${held} unfinished uploads; finish or abort one before starting another`,
      );
    }
    const id = randomUUID();
    const path = this.pathOf(id);
    await (await open(path, "wx")).close();
    const session: SessionState = {
      ...init,
      sha256: init.sha256.toLowerCase(),
      id,
      userId,
      path,
      receivedBytes: 0,
      lastActivityMs: this.now(),
      busy: false,
      signature: undefined,
      hash: createHash("sha256"),
    };
    try {
      await this.options.prisma.uploadSession.create({
        data: {
          id,
          userId,
          modelName: session.modelName,
          version: session.version,
          versionRequested: session.versionRequested,
          fileName: session.fileName,
          sizeBytes: BigInt(session.sizeBytes),
          sha256: session.sha256,
          lastActivityAt: new Date(session.lastActivityMs),
        },
      });
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
    this.sessions.set(id, session);
    return session;
  }

  /** The caller's session; NOT_FOUND for unknown, expired or someone else's (without saying which). */
  get(id: string, userId: string): Promise<UploadSession> {
    return this.state(id, userId);
  }

  private async state(id: string, userId: string): Promise<SessionState> {
    const session = this.sessions.get(id);
    if (session !== undefined && !session.busy && this.now() - session.lastActivityMs > this.ttlMs) {
      await this.discard(session);
    } else if (session !== undefined && session.userId === userId) {
      session.lastActivityMs = this.now();
      return session;
    }
    throw new AppError(
      "NOT_FOUND",
      `upload ${id} was not found: it was finished, aborted or discarded, or it expired after ${Math.round(this.ttlMs / 60_000)} minutes without activity`,
    );
  }

  /**
   * Claims a session for one operation; CONFLICT when another one holds it.
   * Returns the release. stop() waits for every claim to be released.
   */
  private claim(session: SessionState, doing: string): () => void {
    if (session.busy)
      throw new AppError(
        "CONFLICT",
        `upload ${session.id} is busy with another request; retry ${doing} once it is done`,
      );
    session.busy = true;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.inFlight.add(done);
    return () => {
      session.busy = false;
      session.lastActivityMs = this.now();
      this.inFlight.delete(done);
      settle();
    };
  }

  /** Appends one chunk at `offset` (which must be the bytes received so far). Returns the new total. */
  async writeChunk(id: string, userId: string, offset: number, data: Buffer): Promise<number> {
    const session = await this.state(id, userId);
    if (offset !== session.receivedBytes) {
      throw new AppError(
        "CONFLICT",
        `expected offset ${session.receivedBytes}, got ${offset}: chunks must follow each other without gaps or overlaps`,
        {
          fieldErrors: [{ path: "offset", message: `expected offset ${session.receivedBytes}` }],
        },
      );
    }
    if (offset + data.length > session.sizeBytes) {
      throw new AppError(
        "PAYLOAD_TOO_LARGE",
        `this chunk would end at byte ${offset + data.length}, past the ${session.sizeBytes} bytes declared when the upload began`,
        { fieldErrors: [{ path: "data", message: `at most ${session.sizeBytes - offset} more bytes` }] },
      );
    }
    const release = this.claim(session, "the chunk");
    try {
      const handle = await open(session.path, "r+");
      try {
        let written = 0;
        while (written < data.length) {
          written += (await handle.write(data, written, data.length - written, offset + written)).bytesWritten;
        }
      } finally {
        await handle.close();
      }
      // Only bytes that reached the file and the row count; a failed write is retried at the same offset
      // (the next write overwrites what a failed one left, and a restart cuts the file to the row).
      const received = session.receivedBytes + data.length;
      await this.options.prisma.uploadSession.update({
        where: { id: session.id },
        data: { receivedBytes: BigInt(received), lastActivityAt: new Date(this.now()) },
      });
      session.hash.update(data);
      session.receivedBytes = received;
      return session.receivedBytes;
    } finally {
      release();
    }
  }

  /**
   * Checks the complete upload and reads its ONNX signature (once; later
   * calls return the first answer). An incomplete upload stays open; a hash
   * mismatch or a file that is not an ONNX model cannot be repaired by more
   * chunks, so the upload is discarded.
   */
  async verify(id: string, userId: string): Promise<{ session: UploadSession; signature: OnnxSignature }> {
    const session = await this.state(id, userId);
    if (session.signature !== undefined) return { session, signature: session.signature };
    if (session.receivedBytes < session.sizeBytes) {
      throw new AppError(
        "VALIDATION_FAILED",
        `upload incomplete: got ${session.receivedBytes} of ${session.sizeBytes} bytes`,
      );
    }
    const release = this.claim(session, "the check");
    let signature: OnnxSignature;
    try {
      const actual = session.hash.copy().digest("hex");
      if (actual !== session.sha256) {
        await this.discard(session);
        throw new AppError(
          "VALIDATION_FAILED",
          `the uploaded file's sha256 is ${actual}, but the upload declared ${session.sha256}; the file was damaged or is not the one meant, so the upload was discarded`,
          { fieldErrors: [{ path: "sha256", message: `the file's sha256 is ${actual}` }] },
        );
      }
      try {
        signature = await readOnnxSignatureFile(session.path, session.fileName);
      } catch (error) {
        if (!(error instanceof OperonError)) throw error;
        await this.discard(session);
        throw new AppError("VALIDATION_FAILED", `${error.message}; the upload was discarded`, { cause: error });
      }
      const unservable = [
        ...signature.inputs.map((t) => ["input", t] as const),
        ...signature.outputs.map((t) => ["output", t] as const),
      ].filter(([, tensor]) => tensor.datatype === undefined);
      if (unservable.length > 0) {
        await this.discard(session);
        const list = unservable.map(([kind, tensor]) => `${kind} '${tensor.name}' is ${tensor.onnxType}`).join(", ");
        throw new AppError(
          "VALIDATION_FAILED",
          `the ONNX Runtime backend cannot serve this model: ${list}, which has no KServe tensor datatype; the upload was discarded`,
        );
      }
      session.signature = signature;
    } finally {
      release();
    }
    return { session, signature };
  }

  /**
   * Runs `fn` with the session claimed (see the class comment). The session
   * stays open afterwards; `fn` discards it when it is done with it.
   */
  async withClaim<T>(
    id: string,
    userId: string,
    doing: string,
    fn: (session: UploadSession) => Promise<T>,
  ): Promise<T> {
    const session = await this.state(id, userId);
    const release = this.claim(session, doing);
    try {
      return await fn(session);
    } finally {
      release();
    }
  }

  /** Ends a session and removes its staging file (gone already when it was moved into the store). */
  async discard(session: UploadSession): Promise<void> {
    this.sessions.delete(session.id);
    await this.options.prisma.uploadSession.deleteMany({ where: { id: session.id } });
    await rm(session.path, { force: true });
  }

  /** The caller's abort: CONFLICT while another request works on the upload. */
  async abort(id: string, userId: string): Promise<void> {
    const session = await this.state(id, userId);
    if (session.busy)
      throw new AppError(
        "CONFLICT",
        `upload ${id} is busy with another request (a chunk or the finish); abort it once that is done`,
      );
    await this.discard(session);
  }

  /** Discards sessions idle for longer than the TTL. */
  async sweep(): Promise<void> {
    const now = this.now();
    for (const session of [...this.sessions.values()]) {
      if (!session.busy && now - session.lastActivityMs > this.ttlMs) {
        this.options.logger.info({ uploadId: session.id, model: session.modelName }, "upload expired");
        await this.discard(session).catch((error: unknown) =>
          this.options.logger.warn({ err: error }, "could not remove an expired upload"),
        );
      }
    }
  }

  get openCount(): number {
    return this.sessions.size;
  }

  /**
   * Stops the sweeper and lets requests working on uploads finish. Open
   * uploads stay (their rows and staging files): the next start resumes
   * them. Idempotent.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.timer?.stop();
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }
}
