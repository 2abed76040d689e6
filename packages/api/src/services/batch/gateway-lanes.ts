import type { Logger } from "@operon/protocol/logger";
import { z } from "zod";
import { AppError } from "../../app-error.js";
import { GatewayClient } from "../gateway/gateway-client.js";
import { AimdLimiter, type AimdOptions, type AimdReason } from "./aimd.js";
import { OnlineLatencyMonitor } from "./online-latency-monitor.js";

/**
 * The gateways one running job sends its rows to, one lane each: every
 * gateway of the cluster that accepts the job's key and serves its target,
 * each with its own adaptive concurrency (aimd.ts), fed by that gateway's
 * own online p99 (online-latency-monitor.ts), so a gateway busy with online
 * traffic backs the job off there while an idle one fills its valley.
 *
 * Lanes follow the cluster: every `refreshMs` the gateways are listed again
 * (`discover`); a new one joins once a request with the job's key reaches
 * its target (until then it would answer 401 or 404, which are no row's
 * fault), one that left the list is dropped. A lane whose gateway could
 * not be reached is marked away at once (`markAway`) and takes no rows
 * until a later refresh reaches it again; the rows it had in flight go to
 * another lane (job-runner.ts), so a gateway that dies loses no row, and
 * since a row is stored only with the chunk's checkpoint, none gets two
 * results either.
 */
export interface DiscoveredGateway {
  /** `<host>:<http port>`, or LOCAL_GATEWAY for the control plane's own gateway. */
  id: string;
  httpUrl: string;
  /** A client with the control plane's key, to read the gateway's online latency (the job's key may only infer). */
  reader: GatewayClient;
}

/** The control plane's own gateway's id in BatchJob.gatewayRows: it is used when the cluster has no other gateway. */
export const LOCAL_GATEWAY = "control-plane";
export const DEFAULT_LANE_REFRESH_MS = 5_000;

/** BatchJob.gatewayRows as job-execution.ts writes it: rows with a result per gateway id. */
export const gatewayRowsSchema = z.record(z.string(), z.number().int().nonnegative());
export type GatewayRows = z.infer<typeof gatewayRowsSchema>;

/** Why a running job has the concurrency it has now (on one gateway; jobs.get). */
export interface JobControl {
  limit: number;
  reason: AimdReason;
  /** Online p99 over the last span (ms); undefined with too little online traffic to judge. */
  onlineP99Ms?: number | undefined;
  onlineBudgetMs: number;
  /** Online p99 without the job, from its last probe; undefined while none saw online traffic. */
  baselineMs?: number | undefined;
}

export interface GatewayLane {
  readonly id: string;
  /** Sends with the job's key. */
  readonly client: GatewayClient;
  readonly limiter: AimdLimiter;
  inFlight: number;
  away: boolean;
  control?: JobControl;
}

export interface GatewayLanesOptions {
  discover: () => Promise<DiscoveredGateway[]>;
  target: { name: string; version?: string | undefined };
  jobKey: string;
  limiter: AimdOptions;
  logger: Logger;
  jobId: string;
  windowMs?: number | undefined;
  refreshMs?: number | undefined;
}

interface LaneEntry {
  lane: GatewayLane;
  monitor: OnlineLatencyMonitor;
}

export class GatewayLanes {
  private readonly lanes = new Map<string, LaneEntry>();
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<unknown> = Promise.resolve();

  private constructor(private readonly options: GatewayLanesOptions) {}

  /**
   * Lists the gateways and opens a lane to each that serves the job; later refreshes run in the background.
   * The job's key reaches the gateways as a change notice, so the first lanes are awaited: until every listed
   * gateway has one, or at least one has and `settleMs` passed (a listed gateway that is dying must not hold
   * the job); with none after `startTimeoutMs`, the job cannot run (GATEWAY_UNAVAILABLE).
   */
  static async start(
    options: GatewayLanesOptions,
    wait: { settleMs: number; startTimeoutMs: number } = { settleMs: 2_000, startTimeoutMs: 15_000 },
  ): Promise<GatewayLanes> {
    const lanes = new GatewayLanes(options);
    const started = Date.now();
    for (;;) {
      const listed = await lanes.refresh();
      const open = lanes.list().filter((lane) => !lane.away).length;
      const waited = Date.now() - started;
      if (open > 0 && (open >= listed || waited >= wait.settleMs)) break;
      if (waited >= wait.startTimeoutMs) {
        await lanes.stop();
        throw new AppError(
          "GATEWAY_UNAVAILABLE",
          `no gateway accepted the job's key and served '${options.target.name}' within ${wait.startTimeoutMs} ms (gateways listed: ${listed})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    lanes.schedule();
    return lanes;
  }

  /** The lane with the most free slots, or undefined while every lane is full or away. */
  acquire(): GatewayLane | undefined {
    let best: GatewayLane | undefined;
    let bestFree = 0;
    for (const { lane } of this.lanes.values()) {
      if (lane.away) continue;
      const free = lane.limiter.limit - lane.inFlight;
      if (free > bestFree) {
        best = lane;
        bestFree = free;
      }
    }
    if (best !== undefined) best.inFlight += 1;
    return best;
  }

  release(lane: GatewayLane): void {
    lane.inFlight -= 1;
  }

  /** The lane's gateway did not answer: no rows go there until a refresh reaches it again. */
  markAway(lane: GatewayLane, reason: string): void {
    if (lane.away) return;
    lane.away = true;
    this.options.logger.warn(
      { job: this.options.jobId, gateway: lane.id, err: reason },
      "batch job: a gateway is away; its rows go to the others",
    );
    // Look again soon rather than at the next regular refresh: it may have been a blip.
    this.schedule(Math.min(1_000, this.options.refreshMs ?? DEFAULT_LANE_REFRESH_MS));
  }

  /** Requests in flight allowed now, over every lane that is not away. */
  get limit(): number {
    let sum = 0;
    for (const { lane } of this.lanes.values()) if (!lane.away) sum += lane.limiter.limit;
    return sum;
  }

  /** Each lane as jobs.get shows it. */
  list(): GatewayLane[] {
    return [...this.lanes.values()].map((entry) => entry.lane);
  }

  /** Idempotent: no refresh after it; the lanes' monitors stop. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.refreshing;
    await Promise.all([...this.lanes.values()].map((entry) => entry.monitor.stop()));
  }

  private schedule(delayMs = this.options.refreshMs ?? DEFAULT_LANE_REFRESH_MS): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refreshing = this.refresh()
        .catch((error: unknown) =>
          this.options.logger.warn(
            { job: this.options.jobId, err: (error as Error).message },
            "batch job: could not list the gateways; keeping the lanes it has",
          ),
        )
        .finally(() => this.schedule());
    }, delayMs);
  }

  /** One look at the cluster; returns how many gateways were listed. */
  private async refresh(): Promise<number> {
    const found = await this.options.discover();
    if (this.stopped) return found.length;
    const ids = new Set(found.map((gateway) => gateway.id));
    for (const [id, entry] of this.lanes) {
      if (ids.has(id)) continue;
      // Left the cluster: rows in flight there fail over when their requests fail (job-runner.ts).
      entry.lane.away = true;
      await entry.monitor.stop();
      this.lanes.delete(id);
      this.options.logger.info({ job: this.options.jobId, gateway: id }, "batch job: a gateway left the cluster");
    }
    await Promise.all(
      found.map(async (gateway) => {
        const entry = this.lanes.get(gateway.id);
        if (entry !== undefined && !entry.lane.away) return;
        const client =
          entry?.lane.client ??
          new GatewayClient({ httpUrl: gateway.httpUrl, adminKey: this.options.jobKey, timeoutMs: 30_000 });
        if (!(await this.serves(client))) return;
        if (this.stopped) return;
        if (entry !== undefined) {
          entry.lane.away = false;
          this.options.logger.info({ job: this.options.jobId, gateway: gateway.id }, "batch job: a gateway is back");
          return;
        }
        this.open(gateway, client);
      }),
    );
    return found.length;
  }

  /** Whether the gateway accepts the job's key and knows its target (a short call: a hung gateway must not hold the others). */
  private async serves(client: GatewayClient): Promise<boolean> {
    try {
      const probe = new GatewayClient({ httpUrl: client.httpUrl, adminKey: this.options.jobKey, timeoutMs: 2_000 });
      await probe.modelMetadata(this.options.target.name);
      return true;
    } catch {
      return false;
    }
  }

  private open(gateway: DiscoveredGateway, client: GatewayClient): void {
    const limiter = new AimdLimiter(this.options.limiter);
    const lane: GatewayLane = { id: gateway.id, client, limiter, inFlight: 0, away: false };
    const monitor = OnlineLatencyMonitor.start({
      gateway: gateway.reader,
      target: this.options.target,
      limiter,
      logger: this.options.logger,
      windowMs: this.options.windowMs,
      onDecision: (decision) => {
        lane.control = { ...decision, baselineMs: limiter.baselineMs };
      },
    });
    this.lanes.set(gateway.id, { lane, monitor });
    this.options.logger.info({ job: this.options.jobId, gateway: gateway.id }, "batch job: sending rows to a gateway");
  }
}
