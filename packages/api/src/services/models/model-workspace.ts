import { sep } from "node:path";
import type { ModelIoMetadata } from "@operon/model-config/auto-complete";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { readOnnxSignatureFile } from "@operon/model-config/onnx-signature";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import type { RepositoryIndexEntry } from "@operon/protocol/inference";
import type { AdvisoryLocks, Prisma, PrismaClient } from "@operon/db";
import { AppError } from "../../app-error.js";
import { GatewayError, type GatewayClient } from "../gateway/gateway-client.js";
import { KeyedLock } from "../keyed-lock.js";
import type { ModelStore } from "./model-store.js";
import type { UploadSessions } from "./upload-sessions.js";
import { notFoundModel, type GatewayView } from "./model-gateway-view.js";
import type { Logger } from "@operon/protocol/logger";
import type { TargetChangeListener } from "../target-changes.js";

/** What the model services are built from (createModelServices in model-services.ts). */
export interface ModelServicesOptions {
  prisma: PrismaClient;
  /** The database's locks: changes of one model wait for each other in every control plane on it. */
  locks: AdvisoryLocks;
  gateway: GatewayClient;
  store: ModelStore;
  uploads: UploadSessions;
  maxUploadBytes: number;
  logger: Logger;
  /** Told of each stored upload and config change (automatic perf reports); optional. */
  onChange?: TargetChangeListener | undefined;
}

/**
 * What the model services share: their options, the per-name lock that
 * serializes changes of one model, the names this control plane removed,
 * and the checks and undo steps every change uses.
 */
export class ModelWorkspace {
  private readonly locks: KeyedLock;
  /**
   * Names this control plane removed from the store (deleted, or a refused
   * first upload). The gateway keeps listing a model it once knew in explicit
   * mode, as UNAVAILABLE, even after its folder is gone; such entries are not
   * repository models and are hidden unless something serves under the name.
   */
  readonly removed = new Set<string>();

  constructor(readonly options: ModelServicesOptions) {
    this.locks = new KeyedLock(options.locks, "model");
  }

  get prisma(): PrismaClient {
    return this.options.prisma;
  }

  get gateway(): GatewayClient {
    return this.options.gateway;
  }

  /** Runs fn after every earlier change of the same model has settled. */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(name, fn);
  }

  async gatewayView(): Promise<GatewayView> {
    try {
      const rows = new Map<string, RepositoryIndexEntry[]>();
      for (const entry of await this.gateway.repositoryIndex())
        rows.set(entry.name, [...(rows.get(entry.name) ?? []), entry]);
      return { error: null, rows };
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "GATEWAY_UNAVAILABLE") throw error;
      return { error: error.message, rows: new Map() };
    }
  }

  /** A name the gateway lists that is not an upload (see `removed`). */
  isRepositoryModel(name: string, view: GatewayView): boolean {
    const rows = view.rows.get(name);
    if (rows === undefined) return false;
    return !this.removed.has(name) || rows.some((row) => row.state === "READY" || row.state === "LOADING");
  }

  /** For a name without rows: it must be a repository model, else NOT_FOUND (or GATEWAY_UNAVAILABLE when the gateway cannot tell). */
  assertRepositoryModel(name: string, view: GatewayView): void {
    if (view.error !== null)
      throw new AppError(
        "GATEWAY_UNAVAILABLE",
        `model '${name}' is not an upload, and the gateway cannot be asked about it: ${view.error}`,
      );
    if (!this.isRepositoryModel(name, view)) throw notFoundModel(name);
  }

  async assertNotRepositoryModel(name: string): Promise<void> {
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
  async storedSignatures(name: string): Promise<Map<number, ModelIoMetadata>> {
    const signatures = new Map<number, ModelIoMetadata>();
    for (const version of await this.options.store.versionsOnDisk(name)) {
      try {
        signatures.set(
          version,
          await readOnnxSignatureFile(this.options.store.modelFile(name, version), `${name}/${version}/model.onnx`),
        );
      } catch (error) {
        throw new AppError(
          "INTERNAL",
          `the stored file of version ${version} of model '${name}' cannot be read: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    return signatures;
  }

  /** The config file in the store, or the newest version's recorded config when the file cannot be read. */
  async storedConfig(model: {
    name: string;
    versions?: Array<{ config: Prisma.JsonValue | null }>;
  }): Promise<ModelConfigJson | undefined> {
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
   * What a failed gateway load means for the caller, by the gateway's error
   * kind: a refusal of the model (or config) becomes VALIDATION_FAILED with
   * the gateway's reason; a model folder the gateway cannot find means the
   * store is not one of its repositories; UNSUPPORTED means it takes no load
   * requests (model control mode other than explicit). An unreachable or
   * unavailable gateway, a refused control-plane key and anything that is
   * not a gateway answer stay what they are.
   */
  loadFailure(error: unknown, name: string, what: string): unknown {
    if (!(error instanceof GatewayError)) return error;
    switch (error.kind) {
      case undefined:
      case "UNAVAILABLE":
      case "UNAUTHENTICATED":
      case "PERMISSION_DENIED":
        return error;
      case "NOT_FOUND":
        return new AppError(
          "GATEWAY_ERROR",
          `the gateway found no folder for model '${name}': is the model store (${this.options.store.dir}) one of its --model-repository folders? (${error.message})`,
          { cause: error },
        );
      case "UNSUPPORTED":
        return new AppError("GATEWAY_ERROR", `the gateway cannot load ${what} on request: ${error.message}`, {
          cause: error,
        });
      default: {
        // The store's location is the server's business; the file's place in it is what the person needs.
        const reason = error.message
          .replaceAll(`${this.options.store.dir}${sep}`, "")
          .replaceAll(this.options.store.dir, "<model store>");
        return new AppError("VALIDATION_FAILED", `the gateway refused ${what}: ${reason}`, { cause: error });
      }
    }
  }

  /** Runs every undo step, logging (not throwing) the ones that fail: the original error is what the caller must see. */
  async undo(what: string, steps: Array<() => Promise<unknown>>): Promise<void> {
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        this.options.logger.error(
          { err: error },
          `could not fully undo ${what}; check the model store and the gateway`,
        );
      }
    }
  }
}
