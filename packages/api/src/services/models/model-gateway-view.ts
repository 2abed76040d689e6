import type { RepositoryIndexEntry } from "@operon/protocol/inference";
import type { ModelGetPayload, Prisma } from "@operon/db";
import { AppError } from "../../app-error.js";
import type { GatewayModelState } from "./model-types.js";

/**
 * The gateway's repository index as the model services read it, and how it
 * maps onto model and version states and the ModelVersion rows.
 */
export interface GatewayView {
  /** null when the gateway answered. */
  error: string | null;
  rows: Map<string, RepositoryIndexEntry[]>;
}

export type DbModel = ModelGetPayload<{
  include: { versions: { include: { uploadedBy: { select: { email: true } } } } };
}>;

/**
 * A Model row is an upload when it has stored versions. Rows without any
 * are the usage sampler's records of repository models (their samples need
 * a model row) and must not make those models look uploaded.
 */
export const UPLOADED = { versions: { some: {} } } satisfies Prisma.ModelWhereInput;

export const DB_MODEL_INCLUDE = {
  versions: { include: { uploadedBy: { select: { email: true } } }, orderBy: { version: "asc" } },
} as const;

export function notFoundModel(name: string): AppError {
  return new AppError(
    "NOT_FOUND",
    `model '${name}' was not found: it is neither an upload nor in the gateway's model repositories`,
  );
}

export function repositoryModelError(name: string, verb: string): AppError {
  return new AppError(
    "CONFLICT",
    `model '${name}' lives in one of the gateway's model repository folders, not in the control plane's model store, so it cannot be ${verb} here; change it in that folder (it can still be loaded and unloaded)`,
  );
}

export function isUnavailable(error: unknown): boolean {
  return error instanceof AppError && error.code === "GATEWAY_UNAVAILABLE";
}

/** A model's state from the gateway's repository index rows (Triton's: per version, plus a model row while none serves). */
export function modelState(view: GatewayView, name: string): { state: GatewayModelState; reason: string } {
  if (view.error !== null) return { state: "UNKNOWN", reason: view.error };
  const rows = view.rows.get(name);
  if (rows === undefined)
    return {
      state: "UNAVAILABLE",
      reason: "the gateway does not list this model (is the model store one of its --model-repository folders?)",
    };
  const versioned = rows.filter((row) => row.version !== undefined);
  if (versioned.some((row) => row.state === "READY")) return { state: "READY", reason: "" };
  const modelRow = rows.find((row) => row.version === undefined && row.state !== undefined);
  const row = modelRow ?? versioned.find((candidate) => candidate.state !== undefined);
  if (row === undefined) return { state: "UNAVAILABLE", reason: "not loaded" };
  return { state: asState(row.state), reason: row.reason ?? "" };
}

export function versionState(
  view: GatewayView,
  name: string,
  version: number,
): { state: GatewayModelState; reason: string } {
  if (view.error !== null) return { state: "UNKNOWN", reason: view.error };
  const row = view.rows.get(name)?.find((candidate) => candidate.version === String(version));
  if (row === undefined || row.state === undefined) return { state: "UNAVAILABLE", reason: "not loaded" };
  return { state: asState(row.state), reason: row.reason ?? "" };
}

function asState(state: string | undefined): GatewayModelState {
  return state === "READY" || state === "UNAVAILABLE" || state === "LOADING" || state === "UNLOADING"
    ? state
    : "UNKNOWN";
}

/**
 * Records the gateway's view in the version rows: READY -> LOADED, a failed
 * version -> FAILED with the reason, anything else -> UNLOADED. `loadedVersion`
 * is marked LOADED even when the gateway could not be asked (it just loaded).
 */
export async function syncVersionStates(
  tx: Prisma.TransactionClient,
  modelId: string,
  name: string,
  view: GatewayView,
  loadedVersion?: number,
): Promise<void> {
  const rows = await tx.modelVersion.findMany({ where: { modelId }, select: { id: true, version: true } });
  for (const row of rows) {
    let data: { state: "LOADED" | "UNLOADED" | "FAILED"; stateMessage: string | null } | undefined;
    if (view.error === null) {
      const state = versionState(view, name, row.version);
      if (state.state === "READY") data = { state: "LOADED", stateMessage: null };
      else if (state.reason !== "" && state.reason !== "unloaded" && state.reason !== "not loaded")
        data = { state: "FAILED", stateMessage: state.reason };
      else data = { state: "UNLOADED", stateMessage: null };
    } else if (row.version === loadedVersion) {
      data = { state: "LOADED", stateMessage: null };
    }
    if (data !== undefined) await tx.modelVersion.update({ where: { id: row.id }, data });
  }
}
