import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { controlPlaneGrant, generateApiKey, type ApiKeyGrant } from "@operon/protocol/api-keys";

/**
 * What `operon serve` prepares for the control plane on the gateway's
 * thread before starting it: its folders and its key. Apart from
 * control-plane-runtime.ts (the control plane's thread), so that the
 * gateway's thread never loads @operon/api: the gateway's heap is walked by
 * every major GC of the request path, and the control plane's modules
 * (Prisma, tRPC, DuckDB, TypeScript) would triple it.
 */
export interface ControlPlaneDirs {
  /** The model repository uploads are stored in; the gateway serves it too. */
  modelStoreDir: string;
  uploadStagingDir: string;
  /** Batch jobs' files: uploaded datasets, snapshots, results. */
  batchDir: string;
  /** The default folder admins may make datasets of (--batch-data-root). */
  datasetsDir: string;
}

/** The control plane's folders under --data-dir; the model store is --model-store when given (a shared volume on a cluster). */
export function controlPlaneDirs(dataDir: string, modelStore?: string): ControlPlaneDirs {
  const dirs = {
    modelStoreDir: resolve(modelStore ?? join(dataDir, "models")),
    uploadStagingDir: resolve(join(dataDir, "upload-staging")),
    batchDir: resolve(join(dataDir, "batch")),
    datasetsDir: resolve(join(dataDir, "datasets")),
  };
  mkdirSync(dirs.modelStoreDir, { recursive: true });
  mkdirSync(dirs.uploadStagingDir, { recursive: true });
  mkdirSync(dirs.batchDir, { recursive: true });
  mkdirSync(dirs.datasetsDir, { recursive: true });
  return dirs;
}

/**
 * The control plane's own admin key: made fresh at every start, the secret
 * kept only in memory, given to its gateway as an internal grant (it does not
 * count as a configured key; see ApiKeyGrant.internal). startControlPlane
 * stores its hash for the cluster's other gateways (@operon/api's
 * control-plane-key.ts).
 */
export function makeInternalKey(): { key: string; grant: ApiKeyGrant } {
  const generated = generateApiKey();
  return { key: generated.key, grant: controlPlaneGrant(generated.hash) };
}
