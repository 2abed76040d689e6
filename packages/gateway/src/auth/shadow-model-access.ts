import { OperonError } from "@operon/protocol/errors";
import { isShadowModelName, SHADOW_NAME_RESERVED } from "@operon/protocol/shadow-models";
import type { AccessNeed, Principal } from "./access-policy.js";

/**
 * Config-search shadow models (@operon/protocol/shadow-models) are the
 * control plane's alone: outside traffic would skew what the search
 * measures, and a model uploaded under such a name would be taken for a
 * shadow (skipped by the usage sampler and the costs). For any caller but
 * the control plane's internal key, a shadow does not exist (NOT_FOUND, the
 * engine's words for an unknown model) and the name cannot be loaded or
 * unloaded (INVALID_ARG). Cheap for other names: one regular expression.
 */
export function checkShadowModelAccess(principal: Principal | null, model: string | undefined, need: AccessNeed): void {
  if (model === undefined || principal?.internal === true || !isShadowModelName(model)) return;
  if (need === "admin") throw new OperonError("INVALID_ARG", `model '${model}': ${SHADOW_NAME_RESERVED}`);
  throw new OperonError("NOT_FOUND", `Request for unknown model: '${model}' is not found`);
}

/** Whether a listing (repository index, statistics) may name this model to the caller. */
export function listsModelTo(principal: Principal | null, model: string): boolean {
  return principal?.internal === true || !isShadowModelName(model);
}
