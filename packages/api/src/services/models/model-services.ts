import { ModelCatalog } from "./model-catalog.js";
import { ModelConfigEdit } from "./model-config-edit.js";
import { ModelInferProxy } from "./model-infer-proxy.js";
import { ModelLifecycle } from "./model-lifecycle.js";
import { ModelUploads } from "./model-uploads.js";
import { ModelWorkspace, type ModelServicesOptions } from "./model-workspace.js";
import { CodeUploadPolicy, CustomSteps } from "./custom-steps.js";
import { StepModels } from "./step-models.js";

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
export interface ModelServices {
  /** The models list and one model's detail. */
  catalog: ModelCatalog;
  /** Upload sessions that end in a stored, loaded version. */
  uploads: ModelUploads;
  /** Load, unload, delete. */
  lifecycle: ModelLifecycle;
  /** Config edits of uploads. */
  configEdit: ModelConfigEdit;
  /** One inference through the gateway (the console's try-it panel). */
  inferProxy: ModelInferProxy;
  /** Models built from the built-in step library (no code): validated, stored, loaded. */
  steps: StepModels;
  /** TypeScript steps engineers upload, type-checked, stored, and run sandboxed. */
  customSteps: CustomSteps;
  /** Who may upload code (custom steps): an admin setting. */
  codeUploads: CodeUploadPolicy;
}

/**
 * Versions a crash left LOADING (between their rows and the gateway's
 * answer) are marked FAILED, with the reason, so that they show up instead
 * of passing for uploads in progress; delete the model or upload the
 * version again.
 */
export async function createModelServices(options: ModelServicesOptions): Promise<ModelServices> {
  const { count } = await options.prisma.modelVersion.updateMany({
    where: { state: "LOADING" },
    data: { state: "FAILED", stateMessage: "the upload was interrupted by a restart of the control plane" },
  });
  if (count > 0)
    options.logger.warn({ versions: count }, "model versions whose upload a restart interrupted were marked failed");
  const workspace = new ModelWorkspace(options);
  const codeUploads = new CodeUploadPolicy(options.prisma);
  return {
    catalog: new ModelCatalog(workspace),
    uploads: new ModelUploads(workspace),
    lifecycle: new ModelLifecycle(workspace),
    configEdit: new ModelConfigEdit(workspace),
    inferProxy: new ModelInferProxy(workspace),
    steps: new StepModels(workspace),
    customSteps: new CustomSteps(workspace, codeUploads),
    codeUploads,
  };
}
