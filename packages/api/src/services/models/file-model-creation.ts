import { createHash } from "node:crypto";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { Prisma } from "@operon/db";
import { AppError, type FieldError } from "../../app-error.js";
import { recordAudit } from "../audit/audit-log.js";
import type { StoreChange } from "./model-store.js";
import { isUnavailable, syncVersionStates, versionState } from "./model-gateway-view.js";
import type { ModelActor } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";

/**
 * Creating a model from files the API received in one request (step models,
 * custom steps): the checks of the uploaded files, then rows (state
 * LOADING), the files in the model store and the gateway's load, as uploads
 * do; a failure anywhere undoes all of it, so nothing is half-written. The
 * audit event lists every file with its SHA-256.
 */

/** Relative, no `..` segment, no leading dot: a file of the version folder. */
const FILE_PATH = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127}$/;

export interface UploadedFileLimits {
  maxFiles: number;
  maxFileBytes: number;
  /** Why a valid path is still refused (a reserved name, code where data is expected), or undefined. */
  refusePath?: (path: string) => string | undefined;
}

/**
 * The base64 files by path. Problems are appended to `fieldErrors` (one per
 * bad file, named by its index), so the caller reports them with its own.
 * An oversized file is refused on its text, before it is decoded.
 */
export function decodeUploadedFiles(
  input: ReadonlyArray<{ path: string; data: string }>,
  limits: UploadedFileLimits,
  fieldErrors: FieldError[],
): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  input.forEach((file, index) => {
    if (!FILE_PATH.test(file.path)) {
      fieldErrors.push({
        path: `files.${index}.path`,
        message: `'${file.path}' must be a relative path of letters, digits, '_', '.', '-' and '/', without '..'`,
      });
      return;
    }
    const refused = limits.refusePath?.(file.path);
    if (refused !== undefined) {
      fieldErrors.push({ path: `files.${index}.path`, message: refused });
      return;
    }
    if (files.has(file.path))
      fieldErrors.push({ path: `files.${index}.path`, message: `'${file.path}' is given twice` });
    if (file.data.length > Math.ceil(limits.maxFileBytes / 3) * 4) {
      fieldErrors.push({ path: `files.${index}.data`, message: `at most ${limits.maxFileBytes} bytes` });
      return;
    }
    if (file.data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(file.data)) {
      fieldErrors.push({ path: `files.${index}.data`, message: "not base64 (standard alphabet, with padding)" });
      return;
    }
    files.set(file.path, Buffer.from(file.data, "base64"));
  });
  if (input.length > limits.maxFiles) fieldErrors.push({ path: "files", message: `at most ${limits.maxFiles} files` });
  return files;
}

export interface FileModelSpec {
  name: string;
  description: string | null;
  platform: string;
  /** The file the backend loads first (artifactUri points at it). */
  entryFile: string;
  /** What the messages call it: "step model", "custom step". */
  kind: string;
  /** Every file of version 1, the entry file included. */
  files: ReadonlyArray<[string, Buffer]>;
  config: ModelConfigJson;
  configText: string;
  /** The version's SHA-256 (of its entry file). */
  sha256: string;
  /** The audit event: its action, fields of its own, and the files it lists (default: every file). */
  audit: { action: string; after: Record<string, unknown>; files?: ReadonlyArray<[string, Buffer]> };
}

/** Stores and loads version 1 of a new model; CONFLICT when the name is taken. */
export async function createFileModel(
  ws: ModelWorkspace,
  who: ModelActor,
  spec: FileModelSpec,
): Promise<{ name: string; version: number; state: string; sha256: string }> {
  const { name, kind } = spec;
  const version = 1;
  const sizeBytes = spec.files.reduce((sum, [, data]) => sum + data.length, 0);
  return ws.withLock(name, async () => {
    const existing = await ws.prisma.model.findUnique({ where: { name }, include: { versions: true } });
    if ((existing !== null && existing.versions.length > 0) || (await ws.options.store.hasModel(name))) {
      throw new AppError("CONFLICT", `a model named '${name}' exists; ${kind}s are created under a new name`, {
        fieldErrors: [{ path: "name", message: "taken" }],
      });
    }
    await ws.assertNotRepositoryModel(name);
    const { model, row } = await ws.prisma.$transaction(async (tx) => {
      const model = await tx.model.upsert({
        where: { name },
        create: { name, description: spec.description, platform: spec.platform, ownerId: who.userId },
        update: { description: spec.description, platform: spec.platform },
      });
      const row = await tx.modelVersion.create({
        data: {
          modelId: model.id,
          version,
          artifactUri: `${name}/${version}/${spec.entryFile}`,
          sizeBytes: BigInt(sizeBytes),
          sha256: spec.sha256,
          config: spec.config as Prisma.InputJsonValue,
          state: "LOADING",
          uploadedById: who.userId,
        },
      });
      return { model, row };
    });
    let change: StoreChange | undefined;
    let loaded = false;
    try {
      change = await ws.options.store.addModelFromFiles(name, version, [...spec.files], spec.configText);
      try {
        await ws.gateway.loadModel(name);
      } catch (error) {
        throw ws.loadFailure(error, name, `${kind} '${name}'`);
      }
      loaded = true;
      const view = await ws.gatewayView();
      await ws.prisma.$transaction(async (tx) => {
        await syncVersionStates(tx, model.id, name, view, version);
        await recordAudit(tx, who.actor, {
          action: spec.audit.action,
          targetType: "Model",
          targetId: name,
          after: {
            name,
            version,
            sha256: spec.sha256,
            ...spec.audit.after,
            files: (spec.audit.files ?? spec.files).map(([path, data]) => ({
              path,
              sizeBytes: data.length,
              sha256: createHash("sha256").update(data).digest("hex"),
            })),
            config: spec.config,
          },
        });
      });
      ws.removed.delete(name);
      ws.options.onChange?.({ kind: "MODEL", name, version: String(version), action: "model.upload" });
      return { name, version, state: versionState(view, name, version).state, sha256: spec.sha256 };
    } catch (error) {
      await ws.undo(`the creation of ${kind} '${name}'`, [
        async () => {
          if (loaded || isUnavailable(error)) await ws.gateway.unloadModel(name);
        },
        async () => change?.undo(),
        async () => {
          if (existing === null) await ws.prisma.model.delete({ where: { id: model.id } });
          else await ws.prisma.modelVersion.delete({ where: { id: row.id } });
        },
      ]);
      ws.removed.add(name);
      throw error;
    }
  });
}
