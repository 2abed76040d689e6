import { specModels } from "@operon/operator-spec/spec-summary";
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

/** Life cycle: load and unload any model the gateway lists; delete uploads. */
export class ModelLifecycle {
  constructor(private readonly ws: ModelWorkspace) {}

  /** The registered operators whose steps call this model, by name. */
  async operatorsUsing(model: string): Promise<string[]> {
    const operators = await this.ws.prisma.operator.findMany({
      select: { name: true, spec: true },
      orderBy: { name: "asc" },
    });
    return operators.filter((operator) => specModels(operator.spec).includes(model)).map((operator) => operator.name);
  }

  async load(who: ModelActor, name: string): Promise<ModelStateResult> {
    return this.ws.withLock(name, () => this.changeLoad(who, name, "load"));
  }

  async unload(who: ModelActor, name: string): Promise<ModelStateResult> {
    return this.ws.withLock(name, () => this.changeLoad(who, name, "unload"));
  }

  private async changeLoad(who: ModelActor, name: string, action: "load" | "unload"): Promise<ModelStateResult> {
    const model = await this.ws.prisma.model.findFirst({ where: { name, ...UPLOADED } });
    if (
      model === null &&
      (await this.ws.prisma.operator.findUnique({ where: { name }, select: { id: true } })) !== null
    ) {
      // The gateway lists registered operators as models; loading or unloading one here would bypass the registry.
      throw new AppError(
        "CONFLICT",
        `'${name}' is an operator, not a model: change or delete it on its Operators page (/operators/${encodeURIComponent(name)})`,
      );
    }
    const before = await this.ws.gatewayView();
    if (model === null) this.ws.assertRepositoryModel(name, before);
    try {
      if (action === "load") await this.ws.gateway.loadModel(name);
      else await this.ws.gateway.unloadModel(name);
    } catch (error) {
      throw model !== null && action === "load" ? this.ws.loadFailure(error, name, `model '${name}'`) : error;
    }
    const view = await this.ws.gatewayView();
    const state = modelState(view, name);
    await this.ws.prisma.$transaction(async (tx) => {
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
    return this.ws.withLock(name, async () => {
      const model = await this.ws.prisma.model.findFirst({ where: { name, ...UPLOADED }, include: DB_MODEL_INCLUDE });
      const view = await this.ws.gatewayView();
      if (model === null) {
        this.ws.assertRepositoryModel(name, view);
        throw repositoryModelError(name, "deleted");
      }
      const users = await this.operatorsUsing(name);
      if (users.length > 0) {
        // Deleting it would leave those operators pointing at nothing (Degraded); say so and refuse (issue 27, item 4).
        throw new AppError(
          "CONFLICT",
          `model '${name}' is used by operator${users.length === 1 ? "" : "s"} ${users.map((user) => `'${user}'`).join(", ")}: change ${users.length === 1 ? "it" : "them"} to use another model, or delete ${users.length === 1 ? "it" : "them"}, first`,
        );
      }
      const wasLoaded = modelState(view, name).state === "READY";
      await this.ws.gateway.unloadModel(name).catch((error: unknown) => {
        // Never loaded, or the gateway does not see the store: nothing serves from the files.
        if (!(error instanceof AppError && error.code === "NOT_FOUND")) throw error;
      });
      const removal = await this.ws.options.store.removeModel(name);
      try {
        await this.ws.prisma.$transaction(async (tx) => {
          await tx.model.delete({ where: { id: model.id } });
          await recordAudit(tx, who.actor, {
            action: "model.delete",
            targetType: "Model",
            targetId: name,
            before: {
              name,
              description: model.description,
              versions: model.versions.map((row) => ({
                version: row.version,
                sha256: row.sha256,
                sizeBytes: Number(row.sizeBytes),
              })),
            },
          });
        });
      } catch (error) {
        await this.ws.undo(`the delete of '${name}'`, [
          () => removal.undo(),
          async () => (wasLoaded ? this.ws.gateway.loadModel(name) : undefined),
        ]);
        throw error;
      }
      this.ws.removed.add(name);
      this.ws.options.onChange?.({ kind: "MODEL", name, action: "model.delete" });
      await removal
        .commit()
        .catch((error: unknown) =>
          this.ws.options.logger.warn({ err: error, model: name }, "could not remove the files of a deleted model"),
        );
      return { name, deleted: true as const };
    });
  }
}
