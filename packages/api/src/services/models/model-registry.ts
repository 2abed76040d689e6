import { sep } from "node:path";
import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { readOnnxSignatureFile, type OnnxTensorInfo } from "@operon/model-config/onnx-signature";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { fromConfigDataType } from "@operon/protocol/datatypes";
import type { ModelStatistics, RepositoryIndexEntry } from "@operon/protocol/inference";
import type { ModelGetPayload, Prisma, PrismaClient } from "@operon/db";
import { AppError } from "../../app-error.js";
import type { ApiLogger } from "../../options.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import type { ModelStore, StoreChange } from "./model-store.js";
import { prepareConfig, suggestConfig } from "./uploaded-model-config.js";
import { UPLOAD_CHUNK_BYTES, type UploadSession, type UploadSessions } from "./upload-sessions.js";
import { KeyedLock } from "../keyed-lock.js";

/**
 * The models the console manages: uploads stored in the model store and
 * served by the gateway, plus the models of the gateway's other repository
 * folders (listed, loaded and unloaded, never changed or deleted here).
 *
 * Truth is split on purpose: the database holds who uploaded what (Model,
 * ModelVersion rows, the audit trail), the store holds the files, and the
 * gateway holds what is serving. Every change keeps the three consistent:
 * rows are written first (state LOADING), then the files (atomically), then
 * the gateway is asked to load; a failure at any step undoes the earlier
 * ones, so a refused upload leaves nothing behind and the previous version
 * keeps serving. Changes to one model are serialized (a per-name lock);
 * different models change concurrently.
 */
export type GatewayModelState = "READY" | "UNAVAILABLE" | "LOADING" | "UNLOADING" | "UNKNOWN";
export type ModelSource = "uploaded" | "repository";

export interface ModelVersionSummary {
  version: number;
  state: GatewayModelState;
  reason: string;
  /** null for repository models (the API did not store them). */
  sizeBytes: number | null;
  sha256: string | null;
  uploadedBy: string | null;
  createdAt: Date | null;
}

export interface ModelSummary {
  name: string;
  description: string | null;
  source: ModelSource;
  platform: string | null;
  backend: string | null;
  state: GatewayModelState;
  /** Why the model is not READY ("unloaded", the load error, ...); "" when READY. */
  reason: string;
  versions: ModelVersionSummary[];
  /** Instances the gateway runs (instance_group counts of the served config); 0 when not loaded. */
  instanceCount: number;
  /** Successful inferences since the gateway loaded the model. */
  inferenceCount: number;
}

export interface TensorMetadata {
  name: string;
  /** KServe datatype ("FP32"); null when the config names none. */
  datatype: string | null;
  /** With -1 for dynamic sizes (and the batch dimension when the model batches). */
  shape: number[];
}

export interface StatisticsSummary {
  inferenceCount: number;
  executionCount: number;
  successCount: number;
  failureCount: number;
  /** Mean request time of successful inferences, server side. */
  averageLatencyMs: number | null;
  averageQueueMs: number | null;
  /** Mean compute time (input + infer + output) per execution. */
  averageComputeMs: number | null;
  lastInferenceAt: Date | null;
}

export interface ModelDetail extends ModelSummary {
  /** The gateway's config while loaded (with Triton's defaults), else the stored one; null for unloaded repository models. */
  config: ModelConfigJson | null;
  configSource: "gateway" | "stored" | null;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
  statistics: StatisticsSummary | null;
}

export interface UploadSignature {
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
  suggestedConfig: ModelConfigJson;
}

export interface InferInput {
  name: string;
  datatype: string;
  shape: number[];
  data: Array<number | string | boolean>;
}

export interface InferResult {
  modelName: string;
  modelVersion: string;
  outputs: Array<{ name: string; datatype: string; shape: number[]; data: unknown[] }>;
  /** Round trip through the gateway as the control plane measured it. */
  latencyMs: number;
}

export interface ModelStateResult {
  name: string;
  state: GatewayModelState;
  reason: string;
}

export interface ModelRegistryOptions {
  prisma: PrismaClient;
  gateway: GatewayClient;
  store: ModelStore;
  uploads: UploadSessions;
  maxUploadBytes: number;
  logger: ApiLogger;
}

/** Who is acting: the signed-in user (uploads are theirs) and the audit actor. */
export interface ModelActor {
  userId: string;
  actor: Actor;
}

interface GatewayView {
  /** null when the gateway answered. */
  error: string | null;
  rows: Map<string, RepositoryIndexEntry[]>;
}

type DbModel = ModelGetPayload<{ include: { versions: { include: { uploadedBy: { select: { email: true } } } } } }>;

const ONNX_PLATFORM = "onnxruntime_onnx";
/**
 * A Model row is an upload when it has stored versions. Rows without any
 * are the usage sampler's records of repository models (their samples need
 * a model row) and must not make those models look uploaded.
 */
const UPLOADED = { versions: { some: {} } } satisfies Prisma.ModelWhereInput;

const DB_MODEL_INCLUDE = { versions: { include: { uploadedBy: { select: { email: true } } }, orderBy: { version: "asc" } } } as const;
/** Base64 of one full chunk. */
const MAX_CHUNK_BASE64_CHARS = Math.ceil(UPLOAD_CHUNK_BYTES / 3) * 4;

export class ModelRegistry {
  private readonly locks = new KeyedLock();
  /**
   * Names this control plane removed from the store (deleted, or a refused
   * first upload). The gateway keeps listing a model it once knew in explicit
   * mode, as UNAVAILABLE, even after its folder is gone; such entries are not
   * repository models and are hidden unless something serves under the name.
   */
  private readonly removed = new Set<string>();

  private constructor(private readonly options: ModelRegistryOptions) {}

  /**
   * Versions a crash left LOADING (between their rows and the gateway's
   * answer) are marked FAILED, with the reason, so that they show up instead
   * of passing for uploads in progress; delete the model or upload the
   * version again.
   */
  static async create(options: ModelRegistryOptions): Promise<ModelRegistry> {
    const { count } = await options.prisma.modelVersion.updateMany({
      where: { state: "LOADING" },
      data: { state: "FAILED", stateMessage: "the upload was interrupted by a restart of the control plane" },
    });
    if (count > 0) options.logger.warn({ versions: count }, "model versions whose upload a restart interrupted were marked failed");
    return new ModelRegistry(options);
  }

  private get prisma(): PrismaClient {
    return this.options.prisma;
  }

  private get gateway(): GatewayClient {
    return this.options.gateway;
  }

  // ---- reading -------------------------------------------------------------

  async list(): Promise<{ models: ModelSummary[]; gatewayError: string | null }> {
    const [dbModels, view] = await Promise.all([this.prisma.model.findMany({ where: UPLOADED, include: DB_MODEL_INCLUDE, orderBy: { name: "asc" } }), this.gatewayView()]);
    const uploaded = new Set(dbModels.map((model) => model.name));
    const repository = [...view.rows.keys()].filter((name) => !uploaded.has(name) && this.isRepositoryModel(name, view));
    const ready = [...uploaded, ...repository].filter((name) => modelState(view, name).state === "READY");
    const [configs, statistics] = await Promise.all([
      Promise.all(ready.map(async (name) => [name, await this.gateway.modelConfig(name).catch(() => undefined)] as const)),
      view.error === null ? this.gateway.statistics().catch(() => [] as ModelStatistics[]) : Promise.resolve([] as ModelStatistics[]),
    ]);
    const configOf = new Map(configs);
    const models = [
      ...dbModels.map((model) => this.summarize(model.name, model, view, configOf.get(model.name), statistics)),
      ...repository.map((name) => this.summarize(name, null, view, configOf.get(name), statistics)),
    ].sort((a, b) => a.name.localeCompare(b.name));
    return { models, gatewayError: view.error };
  }

  async get(name: string): Promise<ModelDetail> {
    const [model, view] = await Promise.all([this.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE }), this.gatewayView()]);
    if (model === null) this.assertRepositoryModel(name, view);
    const loaded = modelState(view, name).state === "READY";
    const [gatewayConfig, metadata, statistics] = loaded
      ? await Promise.all([
          this.gateway.modelConfig(name).catch(() => undefined),
          this.gateway.modelMetadata(name).catch(() => undefined),
          this.gateway.statistics(name).catch(() => [] as ModelStatistics[]),
        ])
      : [undefined, undefined, [] as ModelStatistics[]];
    const summary = this.summarize(name, model, view, gatewayConfig, statistics);
    const stored = gatewayConfig === undefined && model !== null ? await this.storedConfig(model) : undefined;
    const config = (gatewayConfig as ModelConfigJson | undefined) ?? stored ?? null;
    const io = metadata !== undefined ? tensorsOfMetadata(metadata) : config !== null ? tensorsOfConfig(config) : { inputs: [], outputs: [] };
    return {
      ...summary,
      config,
      configSource: gatewayConfig !== undefined ? "gateway" : stored !== undefined ? "stored" : null,
      ...io,
      statistics: loaded ? summarizeStatistics(statistics) : null,
    };
  }

  // ---- uploads -------------------------------------------------------------

  async beginUpload(
    who: ModelActor,
    input: { name: string; fileName: string; sizeBytes: number; sha256: string; version?: number | undefined },
  ): Promise<{ uploadId: string; version: number; chunkBytes: number }> {
    if (!/\.onnx$/i.test(input.fileName)) {
      throw new AppError("VALIDATION_FAILED", `'${input.fileName}' is not an .onnx file: uploads are served by the ONNX Runtime backend, which takes ONNX models only`, {
        fieldErrors: [{ path: "fileName", message: "must be an .onnx file" }],
      });
    }
    const max = this.options.maxUploadBytes;
    if (input.sizeBytes > max) {
      throw new AppError("PAYLOAD_TOO_LARGE", `the model file is ${formatBytes(input.sizeBytes)}, larger than the ${formatBytes(max)} an upload may have`, {
        fieldErrors: [{ path: "sizeBytes", message: `at most ${max} bytes` }],
      });
    }
    return this.withLock(input.name, async () => {
      const model = await this.prisma.model.findFirst({ where: { name: input.name, ...UPLOADED }, include: { versions: { select: { version: true } } } });
      if (model === null) await this.assertNotRepositoryModel(input.name);
      const taken = new Set([
        ...(model?.versions.map((row) => row.version) ?? []),
        ...this.options.uploads.reservedVersions(input.name),
        ...(await this.options.store.versionsOnDisk(input.name)),
      ]);
      if (input.version !== undefined && taken.has(input.version)) {
        throw new AppError("CONFLICT", `version ${input.version} of model '${input.name}' exists or is being uploaded; leave the version out to get the next one`, {
          fieldErrors: [{ path: "version", message: "exists" }],
        });
      }
      const version = input.version ?? Math.max(0, ...taken) + 1;
      const session = await this.options.uploads.begin(who.userId, { modelName: input.name, version, fileName: input.fileName, sizeBytes: input.sizeBytes, sha256: input.sha256 });
      return { uploadId: session.id, version, chunkBytes: UPLOAD_CHUNK_BYTES };
    });
  }

  async uploadChunk(who: ModelActor, input: { uploadId: string; offset: number; data: string }): Promise<{ receivedBytes: number }> {
    const tooLarge = (bytes: number): AppError =>
      new AppError("PAYLOAD_TOO_LARGE", `a chunk holds at most ${formatBytes(UPLOAD_CHUNK_BYTES)}; this one has ${formatBytes(bytes)}`, {
        fieldErrors: [{ path: "data", message: `at most ${UPLOAD_CHUNK_BYTES} bytes` }],
      });
    // Checked on the text first, so an oversized chunk is not decoded at all.
    if (input.data.length > MAX_CHUNK_BASE64_CHARS) throw tooLarge(Math.floor((input.data.length * 3) / 4));
    if (input.data.length === 0) throw new AppError("VALIDATION_FAILED", "the chunk is empty", { fieldErrors: [{ path: "data", message: "empty" }] });
    if (input.data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(input.data)) {
      throw new AppError("VALIDATION_FAILED", "the chunk's data is not base64 (standard alphabet, with padding)", {
        fieldErrors: [{ path: "data", message: "not base64" }],
      });
    }
    const bytes = Buffer.from(input.data, "base64");
    if (bytes.length > UPLOAD_CHUNK_BYTES) throw tooLarge(bytes.length);
    return { receivedBytes: await this.options.uploads.writeChunk(input.uploadId, who.userId, input.offset, bytes) };
  }

  async inspectUpload(who: ModelActor, uploadId: string): Promise<UploadSignature> {
    const { session, signature } = await this.options.uploads.verify(uploadId, who.userId);
    return { inputs: signature.inputs, outputs: signature.outputs, suggestedConfig: suggestConfig(session.modelName, signature) };
  }

  async abortUpload(who: ModelActor, uploadId: string): Promise<{ aborted: true }> {
    await this.options.uploads.abort(uploadId, who.userId);
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
    const { signature } = await this.options.uploads.verify(input.uploadId, who.userId);
    return this.options.uploads.withClaim(input.uploadId, who.userId, "the finish", (session) =>
      this.withLock(session.modelName, () => this.installUpload(who, session, signature, input.description, input.config)),
    );
  }

  private async installUpload(
    who: ModelActor,
    session: UploadSession,
    signature: ModelIoMetadata,
    description: string | undefined,
    rawConfig: Record<string, unknown> | undefined,
  ): Promise<{ name: string; version: number; state: GatewayModelState }> {
    const { modelName: name, version } = session;
    const { store, uploads } = this.options;
    const existing = await this.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: { versions: { select: { version: true } } } });
    // A row without versions is the usage sampler's record of a repository model that is gone now: the upload takes it over.
    const samplerRow = existing === null ? await this.prisma.model.findUnique({ where: { name }, select: { id: true } }) : null;
    if (existing === null) await this.assertNotRepositoryModel(name);
    if (existing?.versions.some((row) => row.version === version)) {
      await uploads.discard(session);
      throw new AppError("CONFLICT", `version ${version} of model '${name}' was stored by another upload meanwhile; this upload was discarded, start a new one`);
    }
    const signatures = await this.storedSignatures(name);
    signatures.set(version, signature);
    const prepared = prepareConfig(name, rawConfig, signatures, version);

    const { model, row } = await this.prisma.$transaction(async (tx) => {
      const model =
        existing ??
        (await tx.model.upsert({
          where: { name },
          create: { name, description: description ?? null, platform: ONNX_PLATFORM, ownerId: who.userId },
          update: { description: description ?? null, platform: ONNX_PLATFORM, ownerId: who.userId },
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
        await this.gateway.loadModel(name);
      } catch (error) {
        throw this.loadFailure(error, name, `version ${version} of model '${name}'`);
      }
      loaded = true;
      const view = await this.gatewayView();
      await this.prisma.$transaction(async (tx) => {
        await syncVersionStates(tx, model.id, name, view, version);
        if (existing !== null && description !== undefined) await tx.model.update({ where: { id: model.id }, data: { description } });
        await recordAudit(tx, who.actor, {
          action: "model.upload",
          targetType: "Model",
          targetId: name,
          after: { name, version, fileName: session.fileName, sizeBytes: session.sizeBytes, sha256: session.sha256, newModel: existing === null, config: prepared.config },
        });
      });
      this.removed.delete(name);
      return { name, version, state: versionState(view, name, version).state };
    } catch (error) {
      // Order matters: nothing may serve from files while they go, and a reload must see the restored ones.
      await this.undo(`the upload of version ${version} of '${name}'`, [
        async () => {
          // A new model: unload what may have loaded (an unreachable gateway may have loaded it all the same).
          if (existing === null && (loaded || isUnavailable(error))) await this.gateway.unloadModel(name);
        },
        async () => change?.undo(),
        async () => {
          if (loaded && existing !== null) await this.gateway.loadModel(name); // back to the previous versions
        },
        async () => {
          if (existing === null && samplerRow === null) await this.prisma.model.delete({ where: { id: model.id } });
          else await this.prisma.modelVersion.delete({ where: { id: row.id } });
        },
      ]);
      if (existing === null) this.removed.add(name);
      throw error;
    } finally {
      await uploads.discard(session);
    }
  }

  // ---- life cycle ------------------------------------------------------------

  async load(who: ModelActor, name: string): Promise<ModelStateResult> {
    return this.withLock(name, () => this.changeLoad(who, name, "load"));
  }

  async unload(who: ModelActor, name: string): Promise<ModelStateResult> {
    return this.withLock(name, () => this.changeLoad(who, name, "unload"));
  }

  private async changeLoad(who: ModelActor, name: string, action: "load" | "unload"): Promise<ModelStateResult> {
    const model = await this.prisma.model.findFirst({ where: { name, ...UPLOADED } });
    const before = await this.gatewayView();
    if (model === null) this.assertRepositoryModel(name, before);
    try {
      if (action === "load") await this.gateway.loadModel(name);
      else await this.gateway.unloadModel(name);
    } catch (error) {
      throw model !== null && action === "load" ? this.loadFailure(error, name, `model '${name}'`) : error;
    }
    const view = await this.gatewayView();
    const state = modelState(view, name);
    await this.prisma.$transaction(async (tx) => {
      if (model !== null) await syncVersionStates(tx, model.id, name, view);
      await recordAudit(tx, who.actor, {
        action: `model.${action}`,
        targetType: "Model",
        targetId: name,
        before: { state: modelState(before, name).state },
        after: { state: state.state, source: model !== null ? "uploaded" : "repository" },
      });
    });
    return { name, ...state };
  }

  /** Unloads an uploaded model, then removes its files and rows. Repository models are refused. */
  async delete(who: ModelActor, name: string): Promise<{ name: string; deleted: true }> {
    return this.withLock(name, async () => {
      const model = await this.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE });
      const view = await this.gatewayView();
      if (model === null) {
        this.assertRepositoryModel(name, view);
        throw repositoryModelError(name, "deleted");
      }
      const wasLoaded = modelState(view, name).state === "READY";
      await this.gateway.unloadModel(name).catch((error: unknown) => {
        // Never loaded, or the gateway does not see the store: nothing serves from the files.
        if (!(error instanceof AppError && error.code === "NOT_FOUND")) throw error;
      });
      const removal = await this.options.store.removeModel(name);
      try {
        await this.prisma.$transaction(async (tx) => {
          await tx.model.delete({ where: { id: model.id } });
          await recordAudit(tx, who.actor, {
            action: "model.delete",
            targetType: "Model",
            targetId: name,
            before: {
              name,
              description: model.description,
              versions: model.versions.map((row) => ({ version: row.version, sha256: row.sha256, sizeBytes: Number(row.sizeBytes) })),
            },
          });
        });
      } catch (error) {
        await this.undo(`the delete of '${name}'`, [() => removal.undo(), async () => (wasLoaded ? this.gateway.loadModel(name) : undefined)]);
        throw error;
      }
      this.removed.add(name);
      await removal.commit().catch((error: unknown) => this.options.logger.warn({ err: error, model: name }, "could not remove the files of a deleted model"));
      return { name, deleted: true as const };
    });
  }

  /**
   * Replaces an uploaded model's config and reloads it, so the gateway checks
   * it against the model. When the gateway refuses it, the previous config
   * file is restored (and reloaded when the model was serving) and the
   * gateway's message is returned. A model that was not loaded is unloaded
   * again once the new config has proved itself.
   */
  async updateConfig(who: ModelActor, name: string, raw: Record<string, unknown>): Promise<ModelStateResult & { config: ModelConfigJson }> {
    return this.withLock(name, async () => {
      const model = await this.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE });
      const before = await this.gatewayView();
      if (model === null) {
        this.assertRepositoryModel(name, before);
        throw repositoryModelError(name, "edited");
      }
      const signatures = await this.storedSignatures(name);
      if (signatures.size === 0) throw new AppError("CONFLICT", `model '${name}' has no version files in the model store; upload a version first`);
      const prepared = prepareConfig(name, raw, signatures);
      const previous = await this.storedConfig(model);
      const wasLoaded = modelState(before, name).state === "READY";
      const change = await this.options.store.replaceConfig(name, prepared.text);
      try {
        await this.gateway.loadModel(name);
      } catch (error) {
        let restored = "the previous config is restored";
        await change.undo();
        if (wasLoaded) {
          try {
            await this.gateway.loadModel(name);
            restored += " and serving";
          } catch (reloadError) {
            restored += `, but reloading it failed too: ${(reloadError as Error).message}`;
          }
        }
        const failure = this.loadFailure(error, name, `the new config of model '${name}'`);
        if (failure instanceof AppError) throw new AppError(failure.code, `${failure.message}; ${restored}`, { fieldErrors: failure.fieldErrors, cause: error });
        throw failure;
      }
      if (!wasLoaded) {
        await this.gateway.unloadModel(name).catch((error: unknown) => this.options.logger.warn({ err: error, model: name }, "could not unload a model after checking its new config"));
      }
      const view = await this.gatewayView();
      try {
        await this.prisma.$transaction(async (tx) => {
          await tx.modelVersion.updateMany({ where: { modelId: model.id }, data: { config: prepared.config as Prisma.InputJsonValue } });
          await syncVersionStates(tx, model.id, name, view);
          await recordAudit(tx, who.actor, { action: "model.updateConfig", targetType: "Model", targetId: name, before: { config: previous ?? null }, after: { config: prepared.config } });
        });
      } catch (error) {
        // Without its record (and audit event) the change does not stand: back to the previous config.
        await this.undo(`the config change of '${name}'`, [() => change.undo(), async () => (wasLoaded ? this.gateway.loadModel(name) : undefined)]);
        throw error;
      }
      return { name, ...modelState(view, name), config: prepared.config };
    });
  }

  /** One inference through the gateway's KServe v2 JSON endpoint (the console's try-it panel). */
  async infer(name: string, input: { version?: number | undefined; inputs: InferInput[]; outputs?: string[] | undefined }): Promise<InferResult> {
    input.inputs.forEach((tensor, index) => {
      const expected = tensor.shape.reduce((count, dim) => count * dim, 1);
      if (tensor.data.length !== expected) {
        throw new AppError("VALIDATION_FAILED", `input '${tensor.name}' has shape [${tensor.shape.join(", ")}], which holds ${expected} values, but ${tensor.data.length} were given`, {
          fieldErrors: [{ path: `inputs[${index}].data`, message: `expected ${expected} values` }],
        });
      }
    });
    const body = {
      inputs: input.inputs.map((tensor) => ({ name: tensor.name, datatype: tensor.datatype, shape: tensor.shape, data: tensor.data })),
      ...(input.outputs !== undefined ? { outputs: input.outputs.map((output) => ({ name: output })) } : {}),
    };
    const response = await this.gateway.infer(name, input.version?.toString(), body);
    const answer = response.body as { model_name?: string; model_version?: string; outputs?: InferResult["outputs"] };
    return {
      modelName: answer.model_name ?? name,
      modelVersion: answer.model_version ?? "",
      outputs: answer.outputs ?? [],
      latencyMs: Math.round(response.latencyMs * 1000) / 1000,
    };
  }

  // ---- helpers ---------------------------------------------------------------

  /** Runs fn after every earlier change of the same model has settled. */
  private withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(name, fn);
  }

  private async gatewayView(): Promise<GatewayView> {
    try {
      const rows = new Map<string, RepositoryIndexEntry[]>();
      for (const entry of await this.gateway.repositoryIndex()) rows.set(entry.name, [...(rows.get(entry.name) ?? []), entry]);
      return { error: null, rows };
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "GATEWAY_UNAVAILABLE") throw error;
      return { error: error.message, rows: new Map() };
    }
  }

  /** A name the gateway lists that is not an upload (see `removed`). */
  private isRepositoryModel(name: string, view: GatewayView): boolean {
    const rows = view.rows.get(name);
    if (rows === undefined) return false;
    return !this.removed.has(name) || rows.some((row) => row.state === "READY" || row.state === "LOADING");
  }

  /** For a name without rows: it must be a repository model, else NOT_FOUND (or GATEWAY_UNAVAILABLE when the gateway cannot tell). */
  private assertRepositoryModel(name: string, view: GatewayView): void {
    if (view.error !== null) throw new AppError("GATEWAY_UNAVAILABLE", `model '${name}' is not an upload, and the gateway cannot be asked about it: ${view.error}`);
    if (!this.isRepositoryModel(name, view)) throw notFoundModel(name);
  }

  private async assertNotRepositoryModel(name: string): Promise<void> {
    const view = await this.gatewayView();
    if (view.error !== null) throw new AppError("GATEWAY_UNAVAILABLE", `uploads need the gateway, and ${view.error}`);
    // A folder in the store without rows is a leftover of this store, not a repository model.
    if (this.isRepositoryModel(name, view) && !(await this.options.store.hasModel(name))) {
      throw new AppError(
        "CONFLICT",
        `a model named '${name}' is served from another of the gateway's model repository folders; uploads cannot add versions to it, so pick another name`,
        { fieldErrors: [{ path: "name", message: "taken by a repository model" }] },
      );
    }
  }

  /** Signatures of the versions in the store, read from their files (without loading the weights). */
  private async storedSignatures(name: string): Promise<Map<number, ModelIoMetadata>> {
    const signatures = new Map<number, ModelIoMetadata>();
    for (const version of await this.options.store.versionsOnDisk(name)) {
      try {
        signatures.set(version, await readOnnxSignatureFile(this.options.store.modelFile(name, version), `${name}/${version}/model.onnx`));
      } catch (error) {
        throw new AppError("INTERNAL", `the stored file of version ${version} of model '${name}' cannot be read: ${(error as Error).message}`, { cause: error });
      }
    }
    return signatures;
  }

  /** The config file in the store, or the newest version's recorded config when the file cannot be read. */
  private async storedConfig(model: { name: string; versions?: Array<{ config: Prisma.JsonValue | null }> }): Promise<ModelConfigJson | undefined> {
    try {
      const text = await this.options.store.readConfigText(model.name);
      if (text !== undefined) return parsePbtxt(text, `${model.name}/config.pbtxt`);
    } catch (error) {
      this.options.logger.warn({ err: error, model: model.name }, "the stored config.pbtxt cannot be read");
    }
    const recorded = model.versions?.at(-1)?.config;
    return recorded !== null && recorded !== undefined ? (recorded as ModelConfigJson) : undefined;
  }

  /**
   * What a failed gateway load means for the caller: a refusal of the model
   * (or config) becomes VALIDATION_FAILED with the gateway's reason; an
   * unreachable gateway, a refused control-plane key and a store the gateway
   * does not serve stay what they are.
   */
  private loadFailure(error: unknown, name: string, what: string): unknown {
    if (!(error instanceof AppError)) return error;
    if (error.code === "GATEWAY_UNAVAILABLE") return error;
    if (error.code === "NOT_FOUND") {
      return new AppError(
        "GATEWAY_ERROR",
        `the gateway found no folder for model '${name}': is the model store (${this.options.store.dir}) one of its --model-repository folders? (${error.message})`,
        { cause: error },
      );
    }
    // GATEWAY_ERROR without a gateway status is not about the model (e.g. the gateway refused the control plane's key).
    if (error.code === "GATEWAY_ERROR" && !error.internal?.startsWith("gateway status")) return error;
    // 501 UNSUPPORTED: the gateway does not take load requests (model control mode other than explicit).
    if (error.internal === "gateway status 501") return new AppError("GATEWAY_ERROR", `the gateway cannot load ${what} on request: ${error.message}`, { cause: error });
    // The store's location is the server's business; the file's place in it is what the person needs.
    const reason = error.message.replaceAll(`${this.options.store.dir}${sep}`, "").replaceAll(this.options.store.dir, "<model store>");
    return new AppError("VALIDATION_FAILED", `the gateway refused ${what}: ${reason}`, { cause: error });
  }

  /** Runs every undo step, logging (not throwing) the ones that fail: the original error is what the caller must see. */
  private async undo(what: string, steps: Array<() => Promise<unknown>>): Promise<void> {
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        this.options.logger.error({ err: error }, `could not fully undo ${what}; check the model store and the gateway`);
      }
    }
  }

  private summarize(name: string, model: DbModel | null, view: GatewayView, config: Record<string, unknown> | undefined, statistics: ModelStatistics[]): ModelSummary {
    const state = modelState(view, name);
    const served = state.state === "READY" ? (config as ModelConfigJson | undefined) : undefined;
    const gatewayVersions = (view.rows.get(name) ?? []).filter((row) => row.version !== undefined).map((row) => Number(row.version));
    const versions: ModelVersionSummary[] =
      model !== null
        ? model.versions.map((row) => ({
            version: row.version,
            ...versionState(view, name, row.version),
            sizeBytes: Number(row.sizeBytes),
            sha256: row.sha256,
            uploadedBy: row.uploadedBy?.email ?? null,
            createdAt: row.createdAt,
          }))
        : [...new Set(gatewayVersions)]
            .sort((a, b) => a - b)
            .map((version) => ({ version, ...versionState(view, name, version), sizeBytes: null, sha256: null, uploadedBy: null, createdAt: null }));
    return {
      name,
      description: model?.description ?? null,
      source: model !== null ? "uploaded" : "repository",
      platform: served?.platform || model?.platform || null,
      backend: served?.backend || (model !== null ? "onnxruntime" : null),
      ...state,
      versions,
      instanceCount: served === undefined ? 0 : (served.instance_group ?? []).reduce((sum, group) => sum + (group.count ?? 1), 0),
      inferenceCount: statistics.filter((stat) => stat.name === name).reduce((sum, stat) => sum + stat.inference_count, 0),
    };
  }
}

function notFoundModel(name: string): AppError {
  return new AppError("NOT_FOUND", `model '${name}' was not found: it is neither an upload nor in the gateway's model repositories`);
}

function repositoryModelError(name: string, verb: string): AppError {
  return new AppError(
    "CONFLICT",
    `model '${name}' lives in one of the gateway's model repository folders, not in the control plane's model store, so it cannot be ${verb} here; change it in that folder (it can still be loaded and unloaded)`,
  );
}

function isUnavailable(error: unknown): boolean {
  return error instanceof AppError && error.code === "GATEWAY_UNAVAILABLE";
}

/** A model's state from the gateway's repository index rows (Triton's: per version, plus a model row while none serves). */
function modelState(view: GatewayView, name: string): { state: GatewayModelState; reason: string } {
  if (view.error !== null) return { state: "UNKNOWN", reason: view.error };
  const rows = view.rows.get(name);
  if (rows === undefined) return { state: "UNAVAILABLE", reason: "the gateway does not list this model (is the model store one of its --model-repository folders?)" };
  const versioned = rows.filter((row) => row.version !== undefined);
  if (versioned.some((row) => row.state === "READY")) return { state: "READY", reason: "" };
  const modelRow = rows.find((row) => row.version === undefined && row.state !== undefined);
  const row = modelRow ?? versioned.find((candidate) => candidate.state !== undefined);
  if (row === undefined) return { state: "UNAVAILABLE", reason: "not loaded" };
  return { state: asState(row.state), reason: row.reason ?? "" };
}

function versionState(view: GatewayView, name: string, version: number): { state: GatewayModelState; reason: string } {
  if (view.error !== null) return { state: "UNKNOWN", reason: view.error };
  const row = view.rows.get(name)?.find((candidate) => candidate.version === String(version));
  if (row === undefined || row.state === undefined) return { state: "UNAVAILABLE", reason: "not loaded" };
  return { state: asState(row.state), reason: row.reason ?? "" };
}

function asState(state: string | undefined): GatewayModelState {
  return state === "READY" || state === "UNAVAILABLE" || state === "LOADING" || state === "UNLOADING" ? state : "UNKNOWN";
}

/**
 * Records the gateway's view in the version rows: READY -> LOADED, a failed
 * version -> FAILED with the reason, anything else -> UNLOADED. `loadedVersion`
 * is marked LOADED even when the gateway could not be asked (it just loaded).
 */
async function syncVersionStates(tx: Prisma.TransactionClient, modelId: string, name: string, view: GatewayView, loadedVersion?: number): Promise<void> {
  const rows = await tx.modelVersion.findMany({ where: { modelId }, select: { id: true, version: true } });
  for (const row of rows) {
    let data: { state: "LOADED" | "UNLOADED" | "FAILED"; stateMessage: string | null } | undefined;
    if (view.error === null) {
      const state = versionState(view, name, row.version);
      if (state.state === "READY") data = { state: "LOADED", stateMessage: null };
      else if (state.reason !== "" && state.reason !== "unloaded" && state.reason !== "not loaded") data = { state: "FAILED", stateMessage: state.reason };
      else data = { state: "UNLOADED", stateMessage: null };
    } else if (row.version === loadedVersion) {
      data = { state: "LOADED", stateMessage: null };
    }
    if (data !== undefined) await tx.modelVersion.update({ where: { id: row.id }, data });
  }
}

function tensorsOfMetadata(metadata: Record<string, unknown>): { inputs: TensorMetadata[]; outputs: TensorMetadata[] } {
  const read = (list: unknown): TensorMetadata[] =>
    Array.isArray(list)
      ? list.map((tensor: { name?: string; datatype?: string; shape?: number[] }) => ({ name: tensor.name ?? "", datatype: tensor.datatype ?? null, shape: tensor.shape ?? [] }))
      : [];
  return { inputs: read(metadata["inputs"]), outputs: read(metadata["outputs"]) };
}

/** The gateway's metadata view of a config (batch dimension -1 first when the model batches). */
function tensorsOfConfig(config: ModelConfigJson): { inputs: TensorMetadata[]; outputs: TensorMetadata[] } {
  const batching = (config.max_batch_size ?? 0) > 0;
  const read = (list: Array<{ name: string; data_type?: string; dims?: number[] }> | undefined): TensorMetadata[] =>
    (list ?? []).map((tensor) => ({
      name: tensor.name,
      datatype: fromConfigDataType(tensor.data_type ?? "TYPE_INVALID") ?? null,
      shape: batching ? [-1, ...(tensor.dims ?? [])] : [...(tensor.dims ?? [])],
    }));
  return { inputs: read(config.input), outputs: read(config.output) };
}

function summarizeStatistics(statistics: ModelStatistics[]): StatisticsSummary {
  const sum = (pick: (stat: ModelStatistics) => number): number => statistics.reduce((total, stat) => total + pick(stat), 0);
  const mean = (ns: number, count: number): number | null => (count > 0 ? Math.round(ns / count / 1e3) / 1e3 : null);
  const executions = sum((stat) => stat.execution_count);
  const successCount = sum((stat) => stat.inference_stats.success.count);
  const last = Math.max(0, ...statistics.map((stat) => stat.last_inference));
  return {
    inferenceCount: sum((stat) => stat.inference_count),
    executionCount: executions,
    successCount,
    failureCount: sum((stat) => stat.inference_stats.fail.count),
    averageLatencyMs: mean(sum((stat) => stat.inference_stats.success.ns), successCount),
    averageQueueMs: mean(sum((stat) => stat.inference_stats.queue.ns), sum((stat) => stat.inference_stats.queue.count)),
    averageComputeMs: mean(
      sum((stat) => stat.inference_stats.compute_input.ns + stat.inference_stats.compute_infer.ns + stat.inference_stats.compute_output.ns),
      sum((stat) => stat.inference_stats.compute_infer.count),
    ),
    lastInferenceAt: last > 0 ? new Date(last) : null,
  };
}

function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return `${bytes} bytes${mib >= 0.1 ? ` (${mib.toFixed(1)} MiB)` : ""}`;
}
