import type { PrismaClient } from "@operon/db";

/**
 * Merges old usage samples into one sample per model version, hardware
 * profile, gateway (gatewayHost: a cluster's gateways stay apart) and 5-minute window, so that a 30-day chart reads ~300 rows per
 * model instead of ~170,000.
 *
 * The merged sample starts at its window's start and covers the seconds its
 * samples covered (Σ intervalSeconds). Every figure the charts and the cost
 * model read stays the same sum:
 *
 * - requests, errors, inferences: Σ;
 * - latencies and queue time: weighted by requests (Σ value × requests / Σ
 *   requests over the samples that had a value);
 * - CPU, GPU, memory, instances: Σ value × intervalSeconds / the merged
 *   interval, so value × interval is unchanged (a sample without a value
 *   counts as 0, as the charts count it; null only when none had one).
 *
 * Two things change: a chart bucket that does not start on a 5-minute
 * boundary gets the window's samples whole, and the instance count (an
 * integer column) is rounded. Windows with one sample are left alone, so
 * running again is a no-op. One transaction per day of samples.
 * Old samples are never written again, so the sampler passes the previous
 * run's end as `since` and each hourly run reads only the hour it adds.
 */
export const COMPACTION_WINDOW_SECS = 300;

/** Samples younger than this stay as sampled (the 15-minute to 6-hour charts read them). */
export const COMPACT_AFTER_MS = 24 * 3_600_000;

/** The advisory lock compaction holds ("usage" as a number); any constant works, it only has to be the same everywhere. */
const COMPACTION_LOCK_KEY = 0x7573616765;

export interface CompactionResult {
  /** Samples merged away (removed and replaced). */
  removed: number;
  /** Merged samples written. */
  written: number;
}

/**
 * Compacts the samples that started in [since, before), both rounded down to
 * a window boundary; without `since`, from the oldest sample. Days without
 * samples are skipped.
 */
export async function compactUsageSamples(
  prisma: PrismaClient,
  before: Date,
  since?: Date,
): Promise<CompactionResult & { end: Date }> {
  const windowMs = COMPACTION_WINDOW_SECS * 1000;
  const dayMs = 86_400_000;
  const end = new Date(Math.floor(before.getTime() / windowMs) * windowMs);
  const total = { removed: 0, written: 0, end };
  let cursor = since !== undefined ? new Date(Math.floor(since.getTime() / windowMs) * windowMs) : new Date(0);
  for (;;) {
    const next = await prisma.usageSample.findFirst({
      where: { at: { gte: cursor, lt: end } },
      orderBy: { at: "asc" },
      select: { at: true },
    });
    if (next === null) return total;
    // Whole days (a multiple of the window) from the next sample's day, so no window straddles two transactions.
    const from = new Date(Math.max(cursor.getTime(), Math.floor(next.at.getTime() / dayMs) * dayMs));
    const to = new Date(Math.min(Math.floor(next.at.getTime() / dayMs) * dayMs + dayMs, end.getTime()));
    const result = await compactRange(prisma, from, to);
    total.removed += result.removed;
    total.written += result.written;
    cursor = to;
  }
}

async function compactRange(prisma: PrismaClient, from: Date, to: Date): Promise<CompactionResult> {
  return prisma.$transaction(async (tx) => {
    // Control planes sharing one PostgreSQL compact one at a time (two would merge the same samples twice).
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${COMPACTION_LOCK_KEY})`;
    // The windows of [from, to) that hold more than one sample of a version on a profile.
    await tx.$executeRaw`
      CREATE TEMP TABLE usage_compaction ON COMMIT DROP AS
      SELECT "id",
        "modelId" AS model_id,
        "modelVersion" AS model_version,
        "hardwareProfileId" AS profile_id,
        "gatewayHost" AS gateway_host,
        to_timestamp(floor(extract(epoch FROM "at") / ${COMPACTION_WINDOW_SECS}) * ${COMPACTION_WINDOW_SECS}) AT TIME ZONE 'UTC' AS window_start
      FROM "UsageSample"
      WHERE "at" >= ${from} AND "at" < ${to}`;
    await tx.$executeRaw`
      DELETE FROM usage_compaction c
      USING (
        SELECT model_id, model_version, profile_id, gateway_host, window_start
        FROM usage_compaction
        GROUP BY 1, 2, 3, 4, 5
        HAVING count(*) = 1
      ) single
      WHERE c.model_id = single.model_id
        AND c.model_version IS NOT DISTINCT FROM single.model_version
        AND c.profile_id IS NOT DISTINCT FROM single.profile_id
        AND c.gateway_host IS NOT DISTINCT FROM single.gateway_host
        AND c.window_start = single.window_start`;
    const written = await tx.$executeRaw`
      INSERT INTO "UsageSample" ("modelId", "modelVersion", "hardwareProfileId", "gatewayHost", "at", "intervalSeconds", "requests", "errors", "inferences",
        "latencyP50Ms", "latencyP90Ms", "latencyP95Ms", "latencyP99Ms", "queueTimeMs",
        "instanceCount", "cpuUtilization", "gpuUtilization", "memoryBytes", "gpuMemoryBytes")
      SELECT c.model_id, c.model_version, c.profile_id, c.gateway_host, c.window_start,
        sum(s."intervalSeconds"),
        sum(s."requests"),
        sum(s."errors"),
        sum(s."inferences"),
        sum(s."latencyP50Ms" * s."requests") / nullif(sum(s."requests") FILTER (WHERE s."latencyP50Ms" IS NOT NULL), 0),
        sum(s."latencyP90Ms" * s."requests") / nullif(sum(s."requests") FILTER (WHERE s."latencyP90Ms" IS NOT NULL), 0),
        sum(s."latencyP95Ms" * s."requests") / nullif(sum(s."requests") FILTER (WHERE s."latencyP95Ms" IS NOT NULL), 0),
        sum(s."latencyP99Ms" * s."requests") / nullif(sum(s."requests") FILTER (WHERE s."latencyP99Ms" IS NOT NULL), 0),
        sum(s."queueTimeMs" * s."requests") / nullif(sum(s."requests") FILTER (WHERE s."queueTimeMs" IS NOT NULL), 0),
        round(sum(s."instanceCount" * s."intervalSeconds")::numeric / sum(s."intervalSeconds"))::int,
        sum(s."cpuUtilization" * s."intervalSeconds") / sum(s."intervalSeconds"),
        sum(s."gpuUtilization" * s."intervalSeconds") / sum(s."intervalSeconds"),
        round(sum(s."memoryBytes"::numeric * s."intervalSeconds") / sum(s."intervalSeconds"))::bigint,
        round(sum(s."gpuMemoryBytes"::numeric * s."intervalSeconds") / sum(s."intervalSeconds"))::bigint
      FROM usage_compaction c
      JOIN "UsageSample" s ON s."id" = c."id"
      GROUP BY c.model_id, c.model_version, c.profile_id, c.gateway_host, c.window_start`;
    const removed = await tx.$executeRaw`DELETE FROM "UsageSample" WHERE "id" IN (SELECT "id" FROM usage_compaction)`;
    return { removed, written };
  });
}
