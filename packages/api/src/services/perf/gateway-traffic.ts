import type { WorkersResponse } from "@operon/protocol/admin";
import type { ModelStatistics } from "@operon/protocol/inference";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { REAL_GATE_CLOCK, type GateClock, type TrafficProbe } from "./headroom-gate.js";

/**
 * The gateway's request counters (its statistics API, every model and
 * version): the headroom gate's probe, and the measure of how much other
 * traffic shared the host during a run.
 */

/** Successful plus failed requests the gateway counted, over the entries `counts` accepts. */
export function requestTotal(
  stats: readonly ModelStatistics[],
  counts: (entry: ModelStatistics) => boolean = () => true,
): number {
  let total = 0;
  for (const entry of stats) {
    if (counts(entry))
      total += (entry.inference_stats?.success?.count ?? 0) + (entry.inference_stats?.fail?.count ?? 0);
  }
  return total;
}

/** CPU seconds of the gateway process and of each worker process (thread instances are inside the gateway's). */
function cpuSecondsByPid(workers: WorkersResponse): Map<number, number> {
  const byPid = new Map<number, number>([[workers.gateway.pid, workers.gateway.cpuSeconds]]);
  for (const worker of workers.workers) {
    if (worker.isolation === "process" && worker.pid !== null && worker.cpuSeconds !== null)
      byPid.set(worker.pid, worker.cpuSeconds);
  }
  return byPid;
}

/** Requests per second over a window of `windowMs`: two reads of the statistics. */
export class GatewayTrafficProbe implements TrafficProbe {
  constructor(
    private readonly gateway: GatewayClient,
    private readonly windowMs = 1000,
    private readonly clock: GateClock = REAL_GATE_CLOCK,
  ) {}

  /** Users' requests (perf traffic is left out by GatewayClient.statistics) to the models `counts` accepts. */
  async requestsPerSec(signal: AbortSignal, counts?: (model: string) => boolean): Promise<number> {
    const accept = counts === undefined ? undefined : (entry: ModelStatistics) => counts(entry.name);
    const first = requestTotal(await this.gateway.statistics(), accept);
    const started = this.clock.now();
    await this.clock.sleep(this.windowMs, signal);
    const second = requestTotal(await this.gateway.statistics(), accept);
    const seconds = Math.max(0.001, (this.clock.now() - started) / 1000);
    return Math.max(0, second - first) / seconds;
  }

  /**
   * The host's cores less what the gateway used over the window: its own
   * process (thread instances included) and its worker processes. Other
   * programs on the host are not counted: they are not Operon's to judge.
   */
  async idleCores(signal: AbortSignal): Promise<number | undefined> {
    const first = await this.gateway.workers();
    const started = this.clock.now();
    await this.clock.sleep(this.windowMs, signal);
    const second = await this.gateway.workers();
    const seconds = Math.max(0.001, (this.clock.now() - started) / 1000);
    const before = cpuSecondsByPid(first);
    let used = 0;
    // Per process: one that (re)started within the window counts all its CPU time.
    for (const [pid, cpu] of cpuSecondsByPid(second)) used += Math.max(0, cpu - Math.min(cpu, before.get(pid) ?? 0));
    return Math.max(0, second.hostCpuCores - used / seconds);
  }
}
