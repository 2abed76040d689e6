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

/** Requests per second over a window of `windowMs`: two reads of the statistics. */
export class GatewayTrafficProbe implements TrafficProbe {
  constructor(
    private readonly gateway: GatewayClient,
    private readonly windowMs = 1000,
    private readonly clock: GateClock = REAL_GATE_CLOCK,
  ) {}

  async requestsPerSec(signal: AbortSignal): Promise<number> {
    const first = requestTotal(await this.gateway.statistics());
    const started = this.clock.now();
    await this.clock.sleep(this.windowMs, signal);
    const second = requestTotal(await this.gateway.statistics());
    const seconds = Math.max(0.001, (this.clock.now() - started) / 1000);
    return Math.max(0, second - first) / seconds;
  }
}
