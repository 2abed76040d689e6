import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import type { Prisma } from "@operon/db";
import { AppError } from "../../app-error.js";
import { nextModelVersion } from "./model-versions.js";
import { recordAudit } from "../audit/audit-log.js";
import type { StoreChange } from "./model-store.js";
import { DB_MODEL_INCLUDE, isUnavailable, syncVersionStates, UPLOADED, versionState } from "./model-gateway-view.js";
import type { GatewayModelState, ModelActor, UploadSignature } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";
import { prepareConfig, selectVersions, suggestConfig } from "./uploaded-model-config.js";
import { UPLOAD_CHUNK_BYTES, type UploadSession } from "./upload-sessions.js";

const ONNX_PLATFORM = "onnxruntime_onnx";
/** Base64 of one full chunk. */
const MAX_CHUNK_BASE64_CHARS = Math.ceil(UPLOAD_CHUNK_BYTES / 3) * 4;

/** Uploads: chunked upload sessions that end in a new stored, loaded model version. */
export class ModelUploads {
  constructor(private readonly ws: ModelWorkspace) {}

  async beginUpload(
    who: ModelActor,
    input: { name: string; fileName: string; sizeBytes: number; sha256: string; version?: number | undefined },
  ): Promise<{ uploadId: string; version: number; chunkBytes: number }> {
    if (!/\.onnx$/i.test(input.fileName)) {
      throw new AppError(
        "VALIDATION_FAILED",
        `'${input.fileName}' is not an .onnx file: uploads are served by the ONNX Runtime backend, which takes ONNX models only`,
        {
          fieldErrors: [{ path: "fileName", message: "must be an .onnx file" }],
        },
      );
    }
    const max = this.ws.options.maxUploadBytes;
    if (input.sizeBytes > max) {
      throw new AppError(
        "PAYLOAD_TOO_LARGE",
        `the model file is ${formatBytes(input.sizeBytes)}, larger than the ${formatBytes(max)} an upload may have`,
        {
          fieldErrors: [{ path: "sizeBytes", message: `at most ${max} bytes` }],
        },
      );
    }
    return this.ws.withLock(input.name, async () => {
      const model = await this.ws.prisma.model.findFirst({
        where: { name: input.name, ...UPLOADED },
        include: { versions: { select: { version: true } } },
      });
      if (model === null) await this.ws.assertNotRepositoryModel(input.name);
      const taken = new Set([
        ...(model?.versions.map((row) => row.version) ?? []),
        ...this.ws.options.uploads.reservedVersions(input.name),
        ...(await this.ws.options.store.versionsOnDisk(input.name)),
      ]);
      if (input.version !== undefined && taken.has(input.version)) {
        throw new AppError(
          "CONFLICT",
          `version ${input.version} of model '${input.name}' exists or is being uploaded; leave the version out to get the next one`,
          {
            fieldErrors: [{ path: "version", message: "exists" }],
          },
        );
      }
      // Without a version asked for, this is the number the upload would get now; it is given when the upload finishes.
      const version = input.version ?? nextModelVersion(input.name, taken);
      const session = await this.ws.options.uploads.begin(who.userId, {
        modelName: input.name,
        version,
        versionRequested: input.version !== undefined,
        fileName: input.fileName,
        sizeBytes: input.sizeBytes,
        sha256: input.sha256,
      });
      return { uploadId: session.id, version, chunkBytes: UPLOAD_CHUNK_BYTES };
    });
  }

  async uploadChunk(
    who: ModelActor,
    input: { uploadId: string; offset: number; data: string },
  ): Promise<{ receivedBytes: number }> {
    const tooLarge = (bytes: number): AppError =>
      new AppError(
        "PAYLOAD_TOO_LARGE",
        `a chunk holds at most ${formatBytes(UPLOAD_CHUNK_BYTES)}; this one has ${formatBytes(bytes)}`,
        {
          fieldErrors: [{ path: "data", message: `at most ${UPLOAD_CHUNK_BYTES} bytes` }],
        },
      );
    // Checked on the text first, so an oversized chunk is not decoded at all.
    if (input.data.length > MAX_CHUNK_BASE64_CHARS) throw tooLarge(Math.floor((input.data.length * 3) / 4));
    if (input.data.length === 0)
      throw new AppError("VALIDATION_FAILED", "the chunk is empty", {
        fieldErrors: [{ path: "data", message: "empty" }],
      });
    if (input.data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(input.data)) {
      throw new AppError("VALIDATION_FAILED", "the chunk's data is not base64 (standard alphabet, with padding)", {
        fieldErrors: [{ path: "data", message: "not base64" }],
      });
    }
    const bytes = Buffer.from(input.data, "base64");
    if (bytes.length > UPLOAD_CHUNK_BYTES) throw tooLarge(bytes.length);
    return { receivedBytes: await this.ws.options.uploads.writeChunk(input.uploadId, who.userId, input.offset, bytes) };
  }

  async inspectUpload(who: ModelActor, uploadId: string): Promise<UploadSignature> {
    const { session, signature } = await this.ws.options.uploads.verify(uploadId, who.userId);
    const fromFile = suggestConfig(session.modelName, signature);
    const base = { inputs: signature.inputs, outputs: signature.outputs };
    const model = await this.ws.prisma.model.findFirst({
      where: { name: session.modelName, ...UPLOADED },
      include: DB_MODEL_INCLUDE,
    });
    if (model === null)
      return { ...base, suggestedConfig: fromFile, configSource: "file", configNote: null, identicalTo: null };
    const current = await this.ws.storedConfig(model);
    // "Identical" means the same SHA-256 as a version the model serves now (its version_policy's pick): a file equal
    // to an older, unserved version brings that version back, which is news (issue 27 item 2).
    const stored = model.versions
      .filter((row) => row.state !== "UPLOADING" && row.state !== "ARCHIVED")
      .map((row) => row.version)
      .sort((a, b) => a - b);
    const serving = new Set(selectVersions(stored, current?.version_policy));
    const identical = model.versions
      .filter((row) => serving.has(row.version) && row.sha256 === session.sha256)
      .sort((a, b) => b.version - a.version)[0];
    const identicalTo = identical !== undefined ? identical.version : null;
    if (current === undefined)
      return { ...base, suggestedConfig: fromFile, configSource: "file", configNote: null, identicalTo };
    // The current config must fit the new file too (the same check finish makes): else start from the file, saying why.
    const signatures = await this.ws.storedSignatures(session.modelName);
    const candidate = Math.max(0, ...signatures.keys(), ...model.versions.map((row) => row.version)) + 1;
    signatures.set(candidate, signature);
    try {
      prepareConfig(session.modelName, current, signatures, candidate);
      return { ...base, suggestedConfig: current, configSource: "current", configNote: null, identicalTo };
    } catch (error) {
      const problems =
        error instanceof AppError && error.fieldErrors.length > 0
          ? error.fieldErrors.map((field) => `${field.path}: ${field.message}`).join("; ")
          : (error as Error).message;
      return {
        ...base,
        suggestedConfig: fromFile,
        configSource: "file",
        configNote: `the model's current config does not fit this file (${problems}); this one is made from the file`,
        identicalTo,
      };
    }
  }

  async abortUpload(who: ModelActor, uploadId: string): Promise<{ aborted: true }> {
    await this.ws.options.uploads.abort(uploadId, who.userId);
    return { aborted: true };
  }

  /**
   * Stores the upload as a new version and loads it. A config problem keeps
   * the upload open (fix the config and finish again); once the file has
   * gone into the store, any failure removes it again and ends the upload.
   */
  async finishUpload(
    who: ModelActor,
    input: { uploadId: string; description?: string | undefined; config?: Record<string, unknown> | undefined },
  ): Promise<{ name: string; version: number; state: GatewayModelState }> {
    const { signature } = await this.ws.options.uploads.verify(input.uploadId, who.userId);
    return this.ws.options.uploads.withClaim(input.uploadId, who.userId, "the finish", (session) =>
      this.ws.withLock(session.modelName, () =>
        this.installUpload(who, session, signature, input.description, input.config),
      ),
    );
  }

  private async installUpload(
    who: ModelActor,
    session: UploadSession,
    signature: ModelIoMetadata,
    description: string | undefined,
    rawConfig: Record<string, unknown> | undefined,
  ): Promise<{ name: string; version: number; state: GatewayModelState }> {
    const { modelName: name } = session;
    const { store, uploads } = this.ws.options;
    const existing = await this.ws.prisma.model.findFirst({
      where: { name, ...UPLOADED },
      include: { versions: { select: { version: true } } },
    });
    // Numbered now (under the model's lock), unless the upload asked for a number: abandoned uploads leave no gaps.
    const version = session.versionRequested
      ? session.version
      : nextModelVersion(name, [
          ...(existing?.versions.map((row) => row.version) ?? []),
          ...uploads.reservedVersions(name),
          ...(await store.versionsOnDisk(name)),
        ]);
    // A row without versions is the usage sampler's record of a repository model that is gone now: the upload takes it over.
    const samplerRow =
      existing === null ? await this.ws.prisma.model.findUnique({ where: { name }, select: { id: true } }) : null;
    if (existing === null) await this.ws.assertNotRepositoryModel(name);
    if (existing?.versions.some((row) => row.version === version)) {
      await uploads.discard(session);
      throw new AppError(
        "CONFLICT",
        `version ${version} of model '${name}' was stored by another upload meanwhile; this upload was discarded, start a new one`,
      );
    }
    const signatures = await this.ws.storedSignatures(name);
    signatures.set(version, signature);
    // A new version without a config given keeps the model's current one (Triton keeps config.pbtxt across versions).
    const current =
      rawConfig === undefined && existing !== null
        ? await this.ws.storedConfig(
            (await this.ws.prisma.model.findFirst({ where: { id: existing.id }, include: DB_MODEL_INCLUDE })) ?? {
              name,
            },
          )
        : undefined;
    const prepared = prepareConfig(name, rawConfig ?? current, signatures, version);

    const { model, row } = await this.ws.prisma.$transaction(async (tx) => {
      const model =
        existing ??
        (await tx.model.upsert({
          where: { name },
          create: { name, description: description ?? null, platform: ONNX_PLATFORM, ownerId: who.userId },
          update: { description: description ?? null, platform: ONNX_PLATFORM },
        }));
      const row = await tx.modelVersion.create({
        data: {
          modelId: model.id,
          version,
          artifactUri: store.artifactUri(name, version),
          sizeBytes: BigInt(session.sizeBytes),
          sha256: session.sha256,
          config: prepared.config as Prisma.InputJsonValue,
          state: "LOADING",
          uploadedById: who.userId,
        },
      });
      return { model, row };
    });

    let change: StoreChange | undefined;
    let loaded = false;
    try {
      change = await store.addVersion(name, version, session.path, prepared.text);
      try {
        await this.ws.gateway.loadModel(name);
      } catch (error) {
        throw this.ws.loadFailure(error, name, `version ${version} of model '${name}'`);
      }
      loaded = true;
      const view = await this.ws.gatewayView();
      await this.ws.prisma.$transaction(async (tx) => {
        await syncVersionStates(tx, model.id, name, view, version);
        if (existing !== null && description !== undefined)
          await tx.model.update({ where: { id: model.id }, data: { description } });
        await recordAudit(tx, who.actor, {
          action: "model.upload",
          targetType: "Model",
          targetId: name,
          after: {
            name,
            version,
            fileName: session.fileName,
            sizeBytes: session.sizeBytes,
            sha256: session.sha256,
            newModel: existing === null,
            config: prepared.config,
          },
        });
      });
      this.ws.removed.delete(name);
      this.ws.options.onChange?.({
        kind: "MODEL",
        name,
        version: String(version),
        action: existing === null ? "model.upload" : "model.version",
      });
      return { name, version, state: versionState(view, name, version).state };
    } catch (error) {
      // Order matters: nothing may serve from files while they go, and a reload must see the restored ones.
      await this.ws.undo(`the upload of version ${version} of '${name}'`, [
        async () => {
          // A new model: unload what may have loaded (an unreachable gateway may have loaded it all the same).
          if (existing === null && (loaded || isUnavailable(error))) await this.ws.gateway.unloadModel(name);
        },
        async () => change?.undo(),
        async () => {
          if (loaded && existing !== null) await this.ws.gateway.loadModel(name); // back to the previous versions
        },
        async () => {
          if (existing === null && samplerRow === null) await this.ws.prisma.model.delete({ where: { id: model.id } });
          else await this.ws.prisma.modelVersion.delete({ where: { id: row.id } });
        },
      ]);
      if (existing === null) this.ws.removed.add(name);
      throw error;
    } finally {
      await uploads.discard(session);
    }
  }
}

function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return `${bytes} bytes${mib >= 0.1 ? ` (${mib.toFixed(1)} MiB)` : ""}`;
}
