"use client";

import { DeleteModelButton } from "./delete-model-button";
import { LoadModelButton } from "./load-model-button";
import type { ModelSummary } from "./model-state";
import { UnloadModelButton } from "./unload-model-button";

/** What an engineer can do with a model now: load or unload it, and delete it when it is an upload. */
export function ModelActions({
  model,
  onDeleted,
}: {
  model: Pick<ModelSummary, "name" | "state" | "source" | "usedBy">;
  onDeleted?: () => void;
}) {
  // An operator is changed on its own page; the API refuses loading or unloading it as a model.
  if (model.source === "operator") return null;
  const busy = model.state === "LOADING" || model.state === "UNLOADING";
  return (
    <div className="model-actions">
      {busy ? null : model.state === "READY" ? (
        <UnloadModelButton name={model.name} />
      ) : (
        <LoadModelButton name={model.name} />
      )}
      {model.source === "uploaded" ? (
        <DeleteModelButton name={model.name} usedBy={model.usedBy} {...(onDeleted ? { onDeleted } : {})} />
      ) : null}
    </div>
  );
}
