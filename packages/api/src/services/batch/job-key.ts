import { announceChange, type PrismaClient } from "@operon/db";
import type { ApiKeyGrant } from "@operon/protocol/api-keys";

/**
 * A running batch job's key as every gateway of a cluster accepts it.
 *
 * The control plane makes the key in memory when the job starts; its own
 * gateway gets the grant directly (ApiKeyService.setJobGrant). The cluster's
 * other gateways (`--role gateway`) read their keys from the database, so the
 * key's SHA-256 is stored on the job (BatchJob.keyHash, never the key) and
 * "api-keys" is announced: each gateway then accepts it, at the job's tenant
 * and lowest priority, with its requests left out of online_latency. The
 * hash is cleared (and announced) when the job stops running; a job left
 * RUNNING by a crash gets a new key when it runs again, and its old hash
 * is replaced then.
 */
export const JOB_GRANT_PREFIX = "batch-job:";
/** A priority level below every model's lowest: the gateway caps it at the target's lowest level (key-priority.ts). */
export const BATCH_PRIORITY_LEVEL = 1_000_000;

/** The grant of a job's key; `tenant` only while traffic shares are on (as user keys). */
export function batchJobGrant(jobId: string, hash: string, sharesOn: boolean): ApiKeyGrant {
  return {
    id: `${JOB_GRANT_PREFIX}${jobId}`,
    hash,
    scopes: ["infer"],
    priorityLevel: BATCH_PRIORITY_LEVEL,
    qpsQuota: null,
    expiresAt: null,
    internal: true,
    batchJob: true,
    ...(sharesOn ? { tenant: { id: `batch:${jobId}`, share: 1, policy: "queue" as const } } : {}),
  };
}

/** Stores (or, with undefined, clears) the running job's key hash and tells the gateways. */
export async function storeJobKeyHash(prisma: PrismaClient, jobId: string, hash: string | undefined): Promise<void> {
  await prisma.batchJob.updateMany({ where: { id: jobId }, data: { keyHash: hash ?? null } });
  await announceChange(prisma, "api-keys");
}

/** The grants of the running jobs' keys, for a cluster gateway's key ring (apps/cli shared-parts.ts). */
export async function readBatchJobGrants(prisma: PrismaClient, sharesOn: boolean): Promise<ApiKeyGrant[]> {
  const rows = await prisma.batchJob.findMany({
    where: { state: "RUNNING", keyHash: { not: null } },
    select: { id: true, keyHash: true },
  });
  return rows.map((row) => batchJobGrant(row.id, row.keyHash as string, sharesOn));
}
