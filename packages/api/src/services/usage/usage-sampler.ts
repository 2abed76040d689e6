import type { WorkerInstanceInfo, WorkersResponse } from "@operon/protocol/admin";
import type { ModelStatistics } from "@operon/protocol/inference";
import type { Prisma, PrismaClient } from "@operon/db";
import { recordAudit, SYSTEM_ACTOR } from "../audit/audit-log.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { type ClusterGateway, gatewaysToSample } from "../cluster/cluster-gateways.js";
import { COMPACT_AFTER_MS, compactUsageSamples, type CompactionResult } from "./usage-compaction.js";
import { latencyQuantiles, modelVersionKey, parsePrometheusText, type LatencyQuantiles } from "./prometheus-text.js";
import type { Logger } from "@operon/protocol/logger";
import { isShadowModelName } from "../config-search/candidate-config.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";
import { gpuShareOf } from "./gpu-share.js";
import { userShareOf, usersPart } from "./user-share.js";
import { withoutPerfTraffic } from "@operon/protocol/perf-traffic";
import { operatorUsage, type OperatorCounters, type StepModelUsage } from "./operator-usage.js";
import { GatewayOutageLog, isKeyRefusal, KeyRefusalLog } from "./lasting-failure-log.js";

/**
 * Samples the gateway's usage into UsageSample rows, one per served model
 * version per interval: the source of the metrics router's charts and of
 * the cost model.
 *
 * Each sample reads the gateway's cumulative counters (GET /v2/models/stats),
 * its worker processes (GET /v2/operon/workers) and its metrics text (the
 * latency summaries), and stores the difference to the previous sample:
 *
 * - requests / errors: Δ(success + fail count) / Δ(fail count) of the statistics;
 * - inferences: Δ inference_count (a batched request of N items counts N; costs are per inference);
 * - latencyP50..P99Ms: the request summary's quantiles (a recent window the
 *   gateway keeps), null when the interval had no request;
 * - queueTimeMs: Δ queue ns / Δ queue count;
 * - cpuUtilization: Δ CPU seconds of the version's workers / (interval × host cores),
 *   the share of the host's CPU capacity the model used (a restarted or new
 *   worker counts all its CPU time: it started within the interval), times
 *   the users' share of its inferences (user-share.ts): perf runs' CPU is not a
 *   user's, so it is not in the model's cost either (issue 27 item 8);
 * - memoryBytes / instanceCount: the workers' resident memory and number at the end;
 * - gpuUtilization / gpuMemoryBytes (hosts whose gateway reads NVML): each
 *   GPU's utilization and used memory as the gateway last read them, split
 *   over the models with instances on that GPU by their instance count there
 *   (a GPU's time is not metered per process: this is the attributable
 *   share), utilization divided by the host's GPUs (the model's share of the
 *   host's GPU capacity, like cpuUtilization); 0 for a model without GPU
 *   instances on a host with GPUs, null on a host without GPU readings;
 *   utilization times the users' share, as for the CPU.
 *
 * The first sample after start only sets the baseline (the counters' start
 * is unknown). A counter that went down (the model reloaded) counts from 0.
 * Operators (registered DAGs and ensembles) get no UsageSample row: their
 * composing models are sampled, and counting both would count inferences and
 * CPU twice. Each operator with traffic gets an OperatorUsageSample row
 * instead: its requests and the share of its step models' CPU and GPU its
 * calls made (operator-usage.ts), which the costs list beside the models but
 * never add to them.
 * A gateway that is down has its sample skipped (the next one covers the
 * longer interval). That, and a gateway refusing the control plane's key
 * (revoked by hand), is said once when it starts, then as a reminder at most
 * every 15 minutes with the count of failed reads, and once when it is over
 * (lasting-failure-log.ts), not on every sample.
 *
 * On a cluster (issue 23) every gateway is read in each sample: the control
 * plane's own (rows with gatewayHost null) and each `--role gateway` on the
 * database (`clusterGateways`, rows with gatewayHost `<host>:<http port>`).
 * Each gateway has its own previous reading; all are read at the same moment
 * (one `takenAt` per sample), so their rows share the interval's start and
 * the readers sum them per start: requests, inferences and CPU add up over
 * the gateways, latencies are weighted by requests (usage-series.ts,
 * cost-model.ts). A gateway that is down is skipped and logged alone; one
 * that left the list loses its reading (when it comes back its first
 * reading is a baseline again).
 *
 * Upkeep, when sampling starts and then at most once an hour after a
 * sample: samples older than `retentionDays` are deleted (charts and costs
 * never read further back than the console's longest range), and samples
 * older than a day are merged into 5-minute samples (usage-compaction.ts).
 */
export interface UsageSampleResult {
  /** Start of the interval the rows cover. */
  at: Date | null;
  written: number;
  /** True when this sample only set the baseline. */
  baseline: boolean;
  /** Why nothing was sampled (every gateway down), when skipped. */
  skipped: string | null;
  /** Each gateway read: its rows, whether it only set its baseline, why it was skipped. */
  gateways: GatewaySampleResult[];
}

export interface GatewaySampleResult {
  /** null: the control plane's own gateway. */
  gatewayHost: string | null;
  written: number;
  baseline: boolean;
  skipped: string | null;
}

interface VersionCounters {
  model: string;
  version: string;
  requests: number;
  errors: number;
  inferences: number;
  /** Inferences perf runs included (the statistics' raw inference_count). */
  allInferences: number;
  queueNs: number;
  queueCount: number;
}

interface Snapshot {
  takenAt: number;
  versions: Map<string, VersionCounters>;
  /** Worker instance -> its process and CPU seconds; undefined when the workers could not be read. */
  workers: Map<string, { pid: number; cpuSeconds: number }> | undefined;
  /** Operator -> its counters and step calls; undefined when the gateway's scaling state could not be read. */
  operators: Map<string, OperatorCounters> | undefined;
}

export interface UsageSamplerSchedule {
  /** Seconds between samples; 0 = no background sampling (sampleNow still works). */
  intervalSecs: number;
  /** Days samples are kept; 0 = forever. */
  retentionDays: number;
}

const UPKEEP_EVERY_MS = 3_600_000;

/** One gateway's reading in one sample: its counters, and what the interval's rows need beside them. */
interface Reading {
  snapshot: Snapshot;
  stats: ModelStatistics[];
  operators: Set<string>;
  workers: WorkersResponse | undefined;
  quantiles: LatencyQuantiles;
}

type UsageRow = Omit<Prisma.UsageSampleCreateManyInput, "modelId"> & { model: string };
type OperatorRow = ReturnType<typeof operatorUsage>[number];

/** The key of the control plane's own gateway in `previous` (a cluster gateway's is its gatewayHost). */
const OWN_GATEWAY = "";

export class UsageSampler {
  /** Each gateway's previous reading, by gatewayHost (OWN_GATEWAY for the control plane's own). */
  private readonly previous = new Map<string, Snapshot>();
  private lastUpkeepAt = Number.NEGATIVE_INFINITY;
  /** Where the last compaction ended: the next one starts there (after a restart, from the oldest sample). */
  private compactedBefore: Date | undefined;
  private readonly timer: PeriodicTask;
  /** The last queued database work (a sample or the upkeep): they run one at a time, and stop() waits for it. */
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private readonly refusals: KeyRefusalLog;
  private readonly outages: GatewayOutageLog;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly schedule: UsageSamplerSchedule,
    private readonly logger: Logger,
    /** The cluster's other gateways, listed again at each sample (clusterGateways); none on a single host. */
    private readonly clusterGateways: () => Promise<ClusterGateway[]> = () => Promise.resolve([]),
    /** How often a lasting key refusal or outage is said again (lasting-failure-log.ts); tests shorten it. */
    refusalLog: { reminderMs?: number; now?: () => number } = {},
  ) {
    this.refusals = new KeyRefusalLog(logger, refusalLog);
    this.outages = new GatewayOutageLog(logger, refusalLog);
    this.timer = new PeriodicTask(
      async () => {
        await this.sampleNow().catch((error: unknown) => this.logger.error({ err: error }, "usage sample failed"));
        await this.queue(() => this.upkeepIfDue());
      },
      {
        intervalMs: schedule.intervalSecs * 1000,
        runAtStart: true,
        onError: (error) => this.logger.error({ err: error }, "usage sample upkeep failed"),
      },
    );
  }

  /** Takes the baseline now and a sample every interval; a no-op when the interval is 0. */
  start(): void {
    if (!this.stopped) this.timer.start();
  }

  /** Deletes the samples that started before the retention window; returns how many. A no-op when retention is 0 (forever). */
  async prune(now: number = Date.now()): Promise<number> {
    if (this.schedule.retentionDays <= 0) return 0;
    const before = new Date(now - this.schedule.retentionDays * 86_400_000);
    const { count } = await this.prisma.usageSample.deleteMany({ where: { at: { lt: before } } });
    // Operators' rows are not compacted (one row per operator with traffic per interval): retention bounds them.
    await this.prisma.operatorUsageSample.deleteMany({ where: { at: { lt: before } } });
    if (count > 0)
      this.logger.info({ removed: count, before: before.toISOString() }, "usage samples past the retention removed");
    return count;
  }

  /** Merges the samples older than a day into 5-minute samples; returns what changed. */
  async compact(now: number = Date.now()): Promise<CompactionResult> {
    const { end, ...result } = await compactUsageSamples(
      this.prisma,
      new Date(now - COMPACT_AFTER_MS),
      this.compactedBefore,
    );
    this.compactedBefore = end;
    if (result.removed > 0)
      this.logger.info({ ...result }, "usage samples older than a day merged into 5-minute samples");
    return result;
  }

  private async upkeepIfDue(): Promise<void> {
    const now = Date.now();
    if (this.stopped || now - this.lastUpkeepAt < UPKEEP_EVERY_MS) return;
    this.lastUpkeepAt = now;
    await this.prune(now);
    await this.compact(now);
  }

  /** Stops the timer and waits for a sample in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.timer.stop();
    await this.running.catch(() => undefined);
  }

  /** One sample now (samples never overlap: a call waits for the one in progress). */
  sampleNow(): Promise<UsageSampleResult> {
    return this.queue(() => this.sample());
  }

  private queue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.running.catch(() => undefined).then(work);
    this.running = next;
    return next;
  }

  private async sample(): Promise<UsageSampleResult> {
    const takenAt = Date.now();
    const gateways = await gatewaysToSample(this.gateway, () => this.clusterGateways(), this.logger, "usage sample");
    const readings = await Promise.all(gateways.map((gateway) => this.read(gateway, takenAt)));
    const profile = await this.prisma.hardwareProfile.findFirst({ where: { isDefault: true }, select: { id: true } });

    const rows: UsageRow[] = [];
    const operatorRows: Array<OperatorRow & { at: Date; intervalSeconds: number; gatewayHost: string | null }> = [];
    const results: GatewaySampleResult[] = [];
    const next = new Map<string, Snapshot>();
    let earliest: Date | null = null;
    gateways.forEach((gateway, index) => {
      const reading = readings[index]!;
      const key = gateway.gatewayHost ?? OWN_GATEWAY;
      const previous = this.previous.get(key);
      if (typeof reading === "string") {
        // Skipped: its previous reading stays, so its next sample covers the longer interval.
        if (previous !== undefined) next.set(key, previous);
        results.push({ gatewayHost: gateway.gatewayHost, written: 0, baseline: false, skipped: reading });
        return;
      }
      next.set(key, reading.snapshot);
      if (previous === undefined) {
        results.push({ gatewayHost: gateway.gatewayHost, written: 0, baseline: true, skipped: null });
        return;
      }
      const interval = usageRows(previous, reading, profile?.id ?? null);
      rows.push(...interval.rows.map((row) => ({ ...row, gatewayHost: gateway.gatewayHost })));
      operatorRows.push(
        ...interval.operatorRows.map((row) => ({
          ...row,
          at: interval.at,
          intervalSeconds: interval.intervalSeconds,
          gatewayHost: gateway.gatewayHost,
        })),
      );
      if (earliest === null || interval.at < earliest) earliest = interval.at;
      results.push({ gatewayHost: gateway.gatewayHost, written: interval.rows.length, baseline: false, skipped: null });
    });

    if (rows.length > 0 || operatorRows.length > 0) await this.write(rows, operatorRows, profile?.id ?? null);
    // Gateways that left the list are forgotten: a gateway back later starts with a baseline.
    this.previous.clear();
    for (const [key, snapshot] of next) this.previous.set(key, snapshot);
    const skipped = results.every((result) => result.skipped !== null)
      ? results.map((result) => result.skipped).join("; ")
      : null;
    return {
      at: earliest,
      written: rows.length,
      baseline:
        results.every((result) => result.baseline || result.skipped !== null) && results.some((r) => r.baseline),
      skipped,
      gateways: results,
    };
  }

  /** One gateway's counters now, or why it could not be read (logged here, naming the gateway). */
  private async read(gateway: ClusterGateway, takenAt: number): Promise<Reading | string> {
    const client = gateway.client;
    const label = gateway.gatewayHost ?? "the control plane's gateway";
    let stats: ModelStatistics[];
    let operators: Set<string>;
    try {
      const [statistics, served] = await Promise.all([
        client.statistics(undefined, { raw: true }),
        client.listOperators(),
      ]);
      stats = statistics;
      operators = new Set(served.map((operator) => operator.name));
      this.readSucceeded(`statistics of ${label}`);
    } catch (error) {
      this.readFailed(
        `statistics of ${label}`,
        `usage sample skipped for ${label}: the gateway could not be read${refusedHint(error)}`,
        error,
      );
      return (error as Error).message;
    }
    const [workers, quantiles, scaling] = await Promise.all([
      this.readWorkers(client, label),
      this.readQuantiles(client, label),
      this.readOperatorCalls(client, label),
    ]);
    const snapshot: Snapshot = {
      takenAt,
      versions: new Map(),
      workers: undefined,
      operators: scaling === undefined ? undefined : operatorCounters(stats, operators, scaling),
    };
    for (const raw of stats) {
      if (operators.has(raw.name)) continue;
      // Users' traffic: tagged perf requests out of the counts (perf-traffic.ts).
      const entry = withoutPerfTraffic(raw);
      const inference = entry.inference_stats;
      snapshot.versions.set(modelVersionKey(entry.name, entry.version), {
        model: entry.name,
        version: entry.version,
        requests: inference.success.count + inference.fail.count,
        errors: inference.fail.count,
        inferences: entry.inference_count,
        allInferences: raw.inference_count,
        queueNs: inference.queue.ns,
        queueCount: inference.queue.count,
      });
    }
    if (workers !== undefined) {
      snapshot.workers = new Map();
      for (const worker of workers.workers) {
        if (worker.pid !== null && worker.cpuSeconds !== null) {
          const key = modelVersionKey(worker.model, worker.version);
          snapshot.workers.set(`${key}\u0000${worker.instance}`, { pid: worker.pid, cpuSeconds: worker.cpuSeconds });
        }
      }
    }
    return { snapshot, stats, operators, workers, quantiles };
  }

  /** Writes one sample's rows of every gateway in one transaction (with the Model rows they need). */
  private async write(
    rows: readonly UsageRow[],
    operatorRows: ReadonlyArray<OperatorRow & { at: Date; intervalSeconds: number; gatewayHost: string | null }>,
    profileId: string | null,
  ): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const modelIds = new Map<string, string>();
      for (const name of new Set(rows.map((row) => row.model))) {
        const existing = await tx.model.findUnique({ where: { name }, select: { id: true } });
        if (existing !== null) {
          modelIds.set(name, existing.id);
          continue;
        }
        // A repository model the control plane has not seen yet: UsageSample needs its row.
        const created = await tx.model.upsert({
          where: { name },
          create: { name },
          update: {},
          select: { id: true },
        });
        await recordAudit(tx, SYSTEM_ACTOR, {
          action: "model.discover",
          targetType: "Model",
          targetId: created.id,
          after: { name, source: "repository" },
        });
        modelIds.set(name, created.id);
      }
      await tx.usageSample.createMany({
        data: rows.map(({ model, ...row }) => ({ ...row, modelId: modelIds.get(model)! })),
      });
      await tx.operatorUsageSample.createMany({
        data: operatorRows.map((row) => ({ ...row, hardwareProfileId: profileId })),
      });
    });
  }

  private async readWorkers(client: GatewayClient, label: string): Promise<WorkersResponse | undefined> {
    try {
      const workers = await client.workers();
      this.readSucceeded(`workers of ${label}`);
      return workers;
    } catch (error) {
      this.readFailed(
        `workers of ${label}`,
        `usage sample without CPU and memory for ${label}: its workers could not be read${refusedHint(error)}`,
        error,
      );
      return undefined;
    }
  }

  /** Each operator's completed step calls (GET /v2/operon/scaling); undefined when the gateway cannot say. */
  private async readOperatorCalls(
    client: GatewayClient,
    label: string,
  ): Promise<Map<string, Readonly<Record<string, number>>> | undefined> {
    try {
      const { operators } = await client.scalingState();
      this.readSucceeded(`scaling state of ${label}`);
      return new Map(operators.map((entry) => [entry.operator, entry.modelCalls ?? {}]));
    } catch (error) {
      this.readFailed(
        `scaling state of ${label}`,
        `usage sample without operators for ${label}: its scaling state could not be read${refusedHint(error)}`,
        error,
      );
      return undefined;
    }
  }

  /**
   * A refused key, or a gateway that cannot be read, is said when it starts and then seldom (it fails every
   * sample until someone acts), and once when it is over (lasting-failure-log.ts).
   */
  private readFailed(source: string, message: string, error: unknown): void {
    if (isKeyRefusal(error)) this.refusals.refused(source, message, error);
    else this.outages.failed(source, message, error);
  }

  private readSucceeded(source: string): void {
    this.refusals.accepted(source);
    this.outages.succeeded(source);
  }

  private async readQuantiles(client: GatewayClient, label: string): Promise<LatencyQuantiles> {
    try {
      const text = await client.metricsText();
      this.readSucceeded(`metrics of ${label}`);
      return text === undefined ? new Map() : latencyQuantiles(parsePrometheusText(text));
    } catch (error) {
      this.readFailed(
        `metrics of ${label}`,
        `usage sample without latency quantiles for ${label}: its metrics could not be read`,
        error,
      );
      return new Map();
    }
  }
}

/**
 * Why a gateway refused the control plane (its internal key revoked by hand, or not yet read by that gateway):
 * said in the log so a revoked key does not fail silently (control-plane-key.ts).
 */
function refusedHint(error: unknown): string {
  return isKeyRefusal(error)
    ? " (the gateway refused the control plane's internal key: it was revoked, or the gateway has not read it yet;" +
        " restarting the control plane makes a new one)"
    : "";
}

/** One gateway's rows for the interval from its previous reading to this one. */
function usageRows(
  previous: Snapshot,
  reading: Reading,
  profileId: string | null,
): { at: Date; intervalSeconds: number; rows: UsageRow[]; operatorRows: OperatorRow[] } {
  const current = reading.snapshot;
  const { workers, quantiles } = reading;
  const workersByVersion = new Map<string, WorkerInstanceInfo[]>();
  for (const worker of workers?.workers ?? []) {
    const key = modelVersionKey(worker.model, worker.version);
    workersByVersion.set(key, [...(workersByVersion.get(key) ?? []), worker]);
  }
  const intervalMs = Math.max(1, current.takenAt - previous.takenAt);
  const intervalSeconds = Math.max(1, Math.round(intervalMs / 1000));
  const at = new Date(previous.takenAt);
  const rows: UsageRow[] = [];
  for (const [key, now] of current.versions) {
    // A config search's shadow model is measurement load, not serving: no usage, no cost, no Model row.
    if (isShadowModelName(now.model)) continue;
    const before = previous.versions.get(key);
    const delta = (
      field: "requests" | "errors" | "inferences" | "allInferences" | "queueNs" | "queueCount",
    ): number => {
      const base = before !== undefined && before.requests <= now.requests ? before[field] : 0;
      return Math.max(0, now[field] - base);
    };
    const requests = delta("requests");
    const queueCount = delta("queueCount");
    const request = quantiles.get(key)?.request;
    const quantileMs = (q: number): number | null => {
      if (requests === 0 || request === undefined) return null;
      const found = Object.entries(request).find(([label]) => Number(label) === q);
      return found === undefined ? null : found[1] / 1000;
    };
    const versionWorkers = workersByVersion.get(key) ?? [];
    const share = userShareOf(delta("inferences"), delta("allInferences"));
    const gpu = gpuShareOf(versionWorkers, workers);
    rows.push({
      model: now.model,
      modelVersion: /^\d+$/.test(now.version) ? Number(now.version) : null,
      hardwareProfileId: profileId,
      at,
      intervalSeconds,
      requests,
      errors: delta("errors"),
      inferences: delta("inferences"),
      latencyP50Ms: quantileMs(0.5),
      latencyP90Ms: quantileMs(0.9),
      latencyP95Ms: quantileMs(0.95),
      latencyP99Ms: quantileMs(0.99),
      queueTimeMs: queueCount > 0 ? delta("queueNs") / queueCount / 1e6 : null,
      instanceCount: versionWorkers.length,
      cpuUtilization: usersPart(
        cpuUtilization(key, versionWorkers, previous.workers, current.workers, intervalMs, workers?.hostCpuCores),
        share,
      ),
      memoryBytes: memoryOf(versionWorkers),
      gpuUtilization: usersPart(gpu.gpuUtilization, share),
      gpuMemoryBytes: gpu.gpuMemoryBytes,
    });
  }
  const operatorRows =
    current.operators === undefined || previous.operators === undefined
      ? []
      : operatorUsage(previous.operators, current.operators, stepModelUsage(rows));
  return { at, intervalSeconds, rows, operatorRows };
}

/** Σ Δ CPU seconds of the version's workers / (interval × host cores); null when either end lacks the workers' CPU times. */
function cpuUtilization(
  versionKey: string,
  workers: readonly WorkerInstanceInfo[],
  before: Snapshot["workers"],
  after: Snapshot["workers"],
  intervalMs: number,
  hostCpuCores: number | undefined,
): number | null {
  if (before === undefined || after === undefined || hostCpuCores === undefined || hostCpuCores <= 0) return null;
  let cpuSeconds = 0;
  let known = 0;
  for (const worker of workers) {
    const key = `${versionKey}\u0000${worker.instance}`;
    const now = after.get(key);
    if (now === undefined) continue;
    known += 1;
    const then = before.get(key);
    cpuSeconds +=
      then !== undefined && then.pid === now.pid ? Math.max(0, now.cpuSeconds - then.cpuSeconds) : now.cpuSeconds;
  }
  if (known === 0) return workers.length === 0 ? 0 : null;
  return Math.min(1, cpuSeconds / ((intervalMs / 1000) * hostCpuCores));
}

function memoryOf(workers: readonly WorkerInstanceInfo[]): bigint | null {
  const known = workers.filter((worker) => worker.rssBytes !== null);
  return known.length === 0 ? null : BigInt(Math.round(known.reduce((sum, worker) => sum + worker.rssBytes!, 0)));
}

/** Each served operator's counters, summed over its versions (users' counts: perf traffic out). */
function operatorCounters(
  stats: readonly ModelStatistics[],
  operators: ReadonlySet<string>,
  calls: ReadonlyMap<string, Readonly<Record<string, number>>>,
): Map<string, OperatorCounters> {
  const counters = new Map<string, OperatorCounters>();
  for (const raw of stats) {
    if (!operators.has(raw.name)) continue;
    const users = withoutPerfTraffic(raw).inference_stats;
    const all = raw.inference_stats;
    const entry = counters.get(raw.name) ?? {
      requests: 0,
      allRequests: 0,
      inferences: 0,
      modelCalls: calls.get(raw.name) ?? {},
    };
    entry.requests += users.success.count + users.fail.count;
    entry.allRequests += all.success.count + all.fail.count;
    entry.inferences += withoutPerfTraffic(raw).inference_count;
    counters.set(raw.name, entry);
  }
  return counters;
}

/** The interval's rows summed per model name (an operator's step calls name the model, not its version). */
function stepModelUsage(
  rows: ReadonlyArray<{
    model: string;
    requests?: number;
    cpuUtilization?: number | null;
    gpuUtilization?: number | null;
  }>,
): Map<string, StepModelUsage> {
  const usage = new Map<string, StepModelUsage>();
  const add = (total: number | null, value: number | null | undefined): number | null =>
    value === null || value === undefined ? total : (total ?? 0) + value;
  for (const row of rows) {
    const entry = usage.get(row.model) ?? { requests: 0, cpuUtilization: null, gpuUtilization: null };
    entry.requests += row.requests ?? 0;
    entry.cpuUtilization = add(entry.cpuUtilization, row.cpuUtilization);
    entry.gpuUtilization = add(entry.gpuUtilization, row.gpuUtilization);
    usage.set(row.model, entry);
  }
  return usage;
}
