import type { WorkersResponse } from "@operon/protocol/admin";
import type { ModelStatistics } from "@operon/protocol/inference";

/**
 * The resource scheduler's inputs per gateway and summed (issue 23): each
 * gateway's requests per second, queue time per request and busy worker CPU
 * over the period, from two of its readings (statistics and workers), and
 * their sums over the cluster's gateways. Pure; the runner keeps one previous
 * reading per gateway (resource-scheduler.ts).
 *
 * What each sum is for:
 * - a model's summed rate and the gateways' busy cores size the replica count
 *   (gateway-replicas.ts);
 * - a model's busiest gateway's rate sizes its instance count: each gateway
 *   applies the count on its own traffic, so the sum would over-scale every
 *   gateway N times (scheduler-decisions.ts sees that rate as the demand);
 * - queue time per request is weighted by requests (never summed).
 */
export interface GatewayReading {
  /** `<host>:<http port>`; null for the control plane's own gateway. */
  gatewayHost: string | null;
  at: number;
  /** Per model (all versions), the users' cumulative counts. */
  models: Map<string, { requests: number; queueNs: number; queueCount: number }>;
  /** Per worker instance, its process and CPU seconds; undefined when the workers could not be read. */
  workers: Map<string, { pid: number; cpuSeconds: number }> | undefined;
}

export interface GatewayDemand {
  gatewayHost: string | null;
  /** Requests/s and queue time per request per model over the period (0 and null at a first reading). */
  models: Map<string, { rps: number; queueTimeMs: number | null }>;
  requestsPerSecond: number;
  queueTimeMs: number | null;
  /** Cores its workers kept busy over the period; null when unknown. */
  busyCores: number | null;
}

export interface ClusterDemand {
  gateways: GatewayDemand[];
  /** Per model: summed rate, the busiest gateway's rate, queue time weighted by requests. */
  models: Map<string, { rps: number; busiestRps: number; queueTimeMs: number | null }>;
  requestsPerSecond: number;
  queueTimeMs: number | null;
  /** null when no gateway's CPU could be read. */
  busyCores: number | null;
}

/** One gateway's reading from what it answered: statistics (users' traffic) and workers. */
export function readingOf(
  gatewayHost: string | null,
  at: number,
  stats: readonly ModelStatistics[],
  workers: WorkersResponse | undefined,
): GatewayReading {
  const models = new Map<string, { requests: number; queueNs: number; queueCount: number }>();
  for (const entry of stats) {
    const counts = models.get(entry.name) ?? { requests: 0, queueNs: 0, queueCount: 0 };
    const inference = entry.inference_stats;
    counts.requests += inference.success.count + inference.fail.count;
    counts.queueNs += inference.queue.ns;
    counts.queueCount += inference.queue.count;
    models.set(entry.name, counts);
  }
  let cpu: GatewayReading["workers"];
  if (workers !== undefined) {
    cpu = new Map();
    // A thread instance has no process of its own: no CPU time to read (null).
    for (const worker of workers.workers)
      if (typeof worker.pid === "number" && typeof worker.cpuSeconds === "number")
        cpu.set(`${worker.model}\u0000${worker.version}\u0000${worker.instance}`, {
          pid: worker.pid,
          cpuSeconds: worker.cpuSeconds,
        });
  }
  return { gatewayHost, at, models, workers: cpu };
}

/**
 * One gateway's demand between two readings. A model first seen counts 0 (its
 * counters' start is unknown); a counter that went down (a reload) counts from 0.
 */
export function gatewayDemand(before: GatewayReading | undefined, after: GatewayReading): GatewayDemand {
  const intervalSecs = before === undefined ? 0 : (after.at - before.at) / 1000;
  const models = new Map<string, { rps: number; queueTimeMs: number | null }>();
  let requests = 0;
  let queueNs = 0;
  let queueCount = 0;
  for (const [model, now] of after.models) {
    const then = before?.models.get(model);
    const reset = then === undefined || now.requests < then.requests;
    const delta = (field: "requests" | "queueNs" | "queueCount"): number =>
      then === undefined ? 0 : reset ? now[field] : Math.max(0, now[field] - then[field]);
    const served = delta("requests");
    const queued = delta("queueCount");
    models.set(model, {
      rps: intervalSecs > 0 ? served / intervalSecs : 0,
      queueTimeMs: queued > 0 ? delta("queueNs") / queued / 1e6 : null,
    });
    requests += served;
    queueNs += delta("queueNs");
    queueCount += queued;
  }
  return {
    gatewayHost: after.gatewayHost,
    models,
    requestsPerSecond: intervalSecs > 0 ? requests / intervalSecs : 0,
    queueTimeMs: queueCount > 0 ? queueNs / queueCount / 1e6 : null,
    busyCores: busyCores(before, after, intervalSecs),
  };
}

/** The gateways' demand summed (rates, cores), queue times weighted by requests, and each model's busiest gateway. */
export function clusterDemand(gateways: readonly GatewayDemand[]): ClusterDemand {
  const models = new Map<string, { rps: number; busiestRps: number; queueTimeMs: number | null }>();
  const queueWeights = new Map<string, { weighted: number; weight: number }>();
  let weighted = 0;
  let weight = 0;
  let cores: number | null = null;
  for (const gateway of gateways) {
    for (const [model, demand] of gateway.models) {
      const entry = models.get(model) ?? { rps: 0, busiestRps: 0, queueTimeMs: null };
      entry.rps += demand.rps;
      entry.busiestRps = Math.max(entry.busiestRps, demand.rps);
      models.set(model, entry);
      if (demand.queueTimeMs !== null && demand.rps > 0) {
        const queue = queueWeights.get(model) ?? { weighted: 0, weight: 0 };
        queue.weighted += demand.queueTimeMs * demand.rps;
        queue.weight += demand.rps;
        queueWeights.set(model, queue);
      }
    }
    if (gateway.queueTimeMs !== null && gateway.requestsPerSecond > 0) {
      weighted += gateway.queueTimeMs * gateway.requestsPerSecond;
      weight += gateway.requestsPerSecond;
    }
    if (gateway.busyCores !== null) cores = (cores ?? 0) + gateway.busyCores;
  }
  for (const [model, queue] of queueWeights) models.get(model)!.queueTimeMs = queue.weighted / queue.weight;
  return {
    gateways: [...gateways],
    models,
    requestsPerSecond: gateways.reduce((sum, gateway) => sum + gateway.requestsPerSecond, 0),
    queueTimeMs: weight > 0 ? weighted / weight : null,
    busyCores: cores,
  };
}

/** Σ Δ CPU seconds of the workers / interval; a restarted or new worker counts all its CPU time. */
function busyCores(before: GatewayReading | undefined, after: GatewayReading, intervalSecs: number): number | null {
  if (before?.workers === undefined || after.workers === undefined || after.workers.size === 0 || intervalSecs <= 0)
    return null;
  let seconds = 0;
  for (const [key, now] of after.workers) {
    const then = before.workers.get(key);
    seconds +=
      then !== undefined && then.pid === now.pid ? Math.max(0, now.cpuSeconds - then.cpuSeconds) : now.cpuSeconds;
  }
  return seconds / intervalSecs;
}
