import { CUSTOM_STEP_PLATFORM } from "./custom-steps.js";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { Prisma } from "@operon/db";
import { AppError } from "../../app-error.js";
import { recordAudit } from "../audit/audit-log.js";
import {
  DB_MODEL_INCLUDE,
  modelState,
  repositoryModelError,
  syncVersionStates,
  UPLOADED,
} from "./model-gateway-view.js";
import type { ModelActor, ModelStateResult } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";
import { prepareConfig } from "./uploaded-model-config.js";

/** Config edits of uploaded models, checked by the gateway through a reload. */
export class ModelConfigEdit {
  constructor(private readonly ws: ModelWorkspace) {}

  /**
   * Replaces an uploaded model's config and reloads it, so the gateway checks
   * it against the model. When the gateway refuses it, the previous config
   * file is restored (and reloaded when the model was serving) and the
   * gateway's message is returned. A model that was not loaded is unloaded
   * again once the new config has proved itself. `source`, when given, is
   * written into the audit event: where the config came from (a config
   * search and its candidate).
   */
  async updateConfig(
    who: ModelActor,
    name: string,
    raw: Record<string, unknown>,
    source?: Record<string, unknown>,
  ): Promise<ModelStateResult & { config: ModelConfigJson }> {
    return this.ws.withLock(name, async () => {
      const model = await this.ws.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE });
      const before = await this.ws.gatewayView();
      if (model === null) {
        this.ws.assertRepositoryModel(name, before);
        throw repositoryModelError(name, "edited");
      }
      // A custom step's config carries its sandbox (operon_sandbox): no edit may take it off.
      if (model.platform === CUSTOM_STEP_PLATFORM)
        throw new AppError(
          "CONFLICT",
          `model '${name}' is a custom step: its config is set when it is uploaded (it always runs sandboxed)`,
        );
      const signatures = await this.ws.storedSignatures(name);
      if (signatures.size === 0)
        throw new AppError(
          "CONFLICT",
          `model '${name}' has no version files in the model store; upload a version first`,
        );
      const prepared = prepareConfig(name, raw, signatures);
      const previous = await this.ws.storedConfig(model);
      const wasLoaded = modelState(before, name).state === "READY";
      const change = await this.ws.options.store.replaceConfig(name, prepared.text);
      try {
        await this.ws.gateway.loadModel(name);
      } catch (error) {
        let restored = "the previous config is restored";
        await change.undo();
        if (wasLoaded) {
          try {
            await this.ws.gateway.loadModel(name);
            restored += " and serving";
          } catch (reloadError) {
            restored += `, but reloading it failed too: ${(reloadError as Error).message}`;
          }
        }
        const failure = this.ws.loadFailure(error, name, `the new config of model '${name}'`);
        if (failure instanceof AppError)
          throw new AppError(failure.code, `${failure.message}; ${restored}`, {
            fieldErrors: failure.fieldErrors,
            cause: error,
          });
        throw failure;
      }
      if (!wasLoaded) {
        await this.ws.gateway
          .unloadModel(name)
          .catch((error: unknown) =>
            this.ws.options.logger.warn(
              { err: error, model: name },
              "could not unload a model after checking its new config",
            ),
          );
      }
      const view = await this.ws.gatewayView();
      try {
        await this.ws.prisma.$transaction(async (tx) => {
          await tx.modelVersion.updateMany({
            where: { modelId: model.id },
            data: { config: prepared.config as Prisma.InputJsonValue },
          });
          await syncVersionStates(tx, model.id, name, view);
          await recordAudit(tx, who.actor, {
            action: "model.updateConfig",
            targetType: "Model",
            targetId: name,
            before: { config: previous ?? null },
            after: { config: prepared.config, ...(source !== undefined ? { source } : {}) },
          });
        });
      } catch (error) {
        // Without its record (and audit event) the change does not stand: back to the previous config.
        await this.ws.undo(`the config change of '${name}'`, [
          () => change.undo(),
          async () => (wasLoaded ? this.ws.gateway.loadModel(name) : undefined),
        ]);
        throw error;
      }
      // Measured only while it serves (a model that was not loaded is not measured).
      if (wasLoaded) this.ws.options.onChange?.({ kind: "MODEL", name, action: "model.updateConfig" });
      return { name, ...modelState(view, name), config: prepared.config };
    });
  }
}
