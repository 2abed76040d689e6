import type { Logger } from "@operon/protocol/logger";
import { AppError } from "../../app-error.js";
import { GatewayError } from "../gateway/gateway-client.js";
import type { DuckSandbox } from "./duckdb-sandbox.js";
import type { GatewayLane } from "./gateway-lanes.js";
import type { PlannedInput } from "./input-mapping.js";
import { JobFiles, ROW_COLUMN, partName, type OutputColumn } from "./job-files.js";
import { chunksOf, missingRanges, type RowRange } from "./row-ranges.js";
import { joinRequests, splitOutputs } from "./row-batch.js";
import { RowError, rowRequest, type ImageAccess, type RowRequest } from "./row-request.js";

/**
 * Runs one job's missing rows through the gateways, chunk by chunk, with at
 * most each gateway lane's limit of requests in flight there
 * (gateway-lanes.ts). A chunk is checkpointed
 * (its part file written, then its range, part name and failed rows stored
 * in one transaction, by `commit`) once every row in it has a result or an
 * error; a stop (pause, cancel, shutdown) lets the requests in flight
 * finish, checkpoints the chunks they completed and drops the rest, whose
 * rows run again on resume. So every row ends with exactly one result or one
 * failure, however often the job stops.
 *
 * A row the gateway refuses as overloaded (429, 503) is not a failure: it
 * waits and goes again to the same gateway, and that lane's limiter backs
 * off. A row whose gateway could not be reached (refused connection,
 * connection cut mid-answer, no answer in time) is not a failure either:
 * the lane is marked away and the row is sent again, before any new row,
 * to another lane. Its result is kept only once (a row is stored with its
 * chunk's checkpoint, never from two answers), so a gateway that dies mid-job
 * costs requests, never rows.
 */
export interface ChunkOutcome {
  range: RowRange;
  part: string;
  succeeded: number;
  failures: Array<{ row: number; error: string }>;
  /** Rows of the chunk with a result, per gateway lane that answered them. */
  servedBy: Record<string, number>;
}

/** Where rows go: gateway-lanes.ts (one lane per gateway, each with its adaptive limit). */
export interface RowLanes {
  /** A lane with a free slot (taken), or undefined while all are full or away. */
  acquire(): GatewayLane | undefined;
  release(lane: GatewayLane): void;
  markAway(lane: GatewayLane, reason: string): void;
}

export interface JobRunnerDeps {
  files: JobFiles;
  sandbox: DuckSandbox;
  /** The gateways, each with a client that sends the job's own key (its tenant and lowest priority). */
  lanes: RowLanes;
  target: { name: string; version?: string | undefined };
  planned: readonly PlannedInput[];
  outputs: readonly OutputColumn[];
  /** The outputs to ask for (empty: all). */
  requestedOutputs: readonly string[];
  images: ImageAccess;
  logger: Logger;
  chunkRows: number;
  /** Rows one request carries (row-batch.ts: more than 1 only where the target batches). Default 1. */
  rowsPerRequest?: number;
  /** Stores a finished chunk (called one at a time, in completion order). */
  commit(outcome: ChunkOutcome): Promise<void>;
  /** True once the job should stop taking new rows. */
  stopping(): boolean;
  /** Each row that got a result or a failure (throughput). */
  onRowSettled?: () => void;
  /**
   * Each request the gateway answered (a result or an error; not a busy refusal that is retried): the job's
   * share of its target's requests, which the cost model charges it for. Rows joined into one request
   * (row-batch.ts) count one request, as the target's statistics count it.
   */
  onRequestAnswered?: () => void;
}

interface ChunkState {
  range: RowRange;
  rows: Array<Record<string, unknown>>;
  next: number;
  remaining: number;
  results: Array<Record<string, unknown>>;
  failures: Array<{ row: number; error: string }>;
  servedBy: Record<string, number>;
  /** A row of it was stopped before it had a result: the chunk is not checkpointed and runs again. */
  dropped?: boolean;
}

const RETRY_PAUSE_MS = 200;

interface RowItem {
  chunk: ChunkState;
  row: Record<string, unknown>;
}

type RowOutcome =
  | { kind: "ok"; values: Record<string, unknown>; sent: true }
  | { kind: "failed"; error: string; sent: boolean }
  | { kind: "away"; error: string }
  | { kind: "dropped" };

export class JobRunner {
  private inFlight = 0;
  private commitChain: Promise<void> = Promise.resolve();
  private commitError: unknown;
  private wake: (() => void) | undefined;

  private readonly rowsPerRequest: number;

  constructor(private readonly deps: JobRunnerDeps) {
    this.rowsPerRequest = Math.max(1, Math.floor(deps.rowsPerRequest ?? 1));
  }

  /** Runs until every missing row is checkpointed (true) or a stop (false). */
  async run(done: readonly RowRange[], totalRows: number): Promise<boolean> {
    const chunks = chunksOf(missingRanges(done, totalRows), this.deps.chunkRows);
    const open: ChunkState[] = [];
    /** Rows whose gateway went away mid-request: they go again, to another lane, before any new row. */
    const resend: RowItem[] = [];
    let nextChunk = 0;
    while (this.commitError === undefined) {
      if (this.deps.stopping()) break;
      // Keep two chunks open so the pipe stays full while one waits for its slowest row.
      while (open.length < 2 && nextChunk < chunks.length) {
        const range = chunks[nextChunk++] as RowRange;
        const rows = await this.deps.files.readRows(this.deps.sandbox, range);
        open.push({ range, rows, next: 0, remaining: rows.length, results: [], failures: [], servedBy: {} });
        if (rows.length === 0) this.finishChunk(open, open[open.length - 1] as ChunkState);
      }
      const next = () => open.find((state) => state.next < state.rows.length);
      if (resend.length === 0 && next() === undefined) {
        if (open.length === 0 && nextChunk >= chunks.length) break;
        if (open.every((state) => state.dropped === true) && this.inFlight === 0) break;
        await this.waitForSlot();
        continue;
      }
      const lane = this.deps.lanes.acquire();
      if (lane === undefined) {
        await this.waitForSlot();
        continue;
      }
      // Rows to resend first, then the open chunks' next rows, up to one request's worth.
      const items: RowItem[] = resend.splice(0, this.rowsPerRequest);
      for (let chunk = next(); items.length < this.rowsPerRequest && chunk !== undefined; chunk = next())
        items.push({ chunk, row: chunk.rows[chunk.next++] as Record<string, unknown> });
      this.inFlight += 1;
      void this.runRows(items, lane).then((outcomes) => {
        this.deps.lanes.release(lane);
        this.inFlight -= 1;
        for (const [i, outcome] of outcomes.entries()) {
          const { chunk, row } = items[i] as RowItem;
          if (outcome.kind === "away") {
            resend.push({ chunk, row });
            continue;
          }
          const index = Number(row[ROW_COLUMN]);
          if (outcome.kind !== "dropped") this.deps.onRowSettled?.();
          if (outcome.kind === "ok") {
            chunk.results.push({ [ROW_COLUMN]: index, ...outcome.values });
            chunk.servedBy[lane.id] = (chunk.servedBy[lane.id] ?? 0) + 1;
          } else if (outcome.kind === "failed") chunk.failures.push({ row: index, error: outcome.error });
          else chunk.dropped = true;
          chunk.remaining -= 1;
          if (chunk.remaining === 0 && !chunk.dropped) this.finishChunk(open, chunk);
        }
        const away = outcomes.find((outcome) => outcome.kind === "away");
        if (away !== undefined) this.deps.lanes.markAway(lane, away.error);
        this.wake?.();
      });
    }
    while (this.inFlight > 0) await this.waitForSlot();
    await this.commitChain;
    if (this.commitError !== undefined) throw this.commitError;
    return nextChunk >= chunks.length && open.length === 0;
  }

  private finishChunk(open: ChunkState[], chunk: ChunkState): void {
    open.splice(open.indexOf(chunk), 1);
    const part = partName(chunk.range);
    this.commitChain = this.commitChain.then(async () => {
      if (this.commitError !== undefined) return;
      try {
        chunk.results.sort((a, b) => Number(a[ROW_COLUMN]) - Number(b[ROW_COLUMN]));
        await this.deps.files.writePart(this.deps.sandbox, part, this.deps.outputs, chunk.results);
        await this.deps.commit({
          range: chunk.range,
          part,
          succeeded: chunk.results.length,
          failures: chunk.failures,
          servedBy: chunk.servedBy,
        });
      } catch (error) {
        this.commitError = error;
      }
      this.wake?.();
    });
  }

  private waitForSlot(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, 50);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /**
   * Rows on one lane, in one request where they join (row-batch.ts): each row's outcome, in order. A row
   * that cannot be read fails alone; rows whose joined request failed (not as busy, not away) go again one
   * by one, so each gets its own result or its own error.
   */
  private async runRows(items: readonly RowItem[], lane: GatewayLane): Promise<RowOutcome[]> {
    const outcomes: RowOutcome[] = new Array(items.length);
    const built: Array<{ at: number; request: RowRequest }> = [];
    for (const [at, item] of items.entries()) {
      try {
        built.push({
          at,
          request: await rowRequest(this.deps.planned, item.row, this.deps.images, this.deps.requestedOutputs),
        });
      } catch (error) {
        if (!(error instanceof RowError))
          this.deps.logger.warn({ err: (error as Error).message }, "batch row could not be read");
        outcomes[at] = { kind: "failed", error: error instanceof Error ? error.message : String(error), sent: false };
      }
    }
    const joined = built.length > 1 ? joinRequests(built.map((entry) => entry.request)) : undefined;
    if (joined !== undefined) {
      const outcome = await this.send(joined, lane);
      let values: Array<Record<string, unknown>> | undefined;
      if (outcome.kind === "ok") {
        try {
          values = splitOutputs(outcome.body, this.deps.outputs, built.length);
        } catch {
          values = undefined;
        }
      }
      if (values !== undefined || outcome.kind === "away" || outcome.kind === "dropped") {
        for (const [i, entry] of built.entries())
          outcomes[entry.at] =
            values !== undefined
              ? { kind: "ok", values: values[i] as Record<string, unknown>, sent: true }
              : (outcome as RowOutcome);
        return outcomes;
      }
    }
    for (const [i, entry] of built.entries()) {
      const outcome = await this.send(entry.request, lane);
      if (outcome.kind === "away" || outcome.kind === "dropped") {
        // The gateway is gone, or the job stops: the rest of the rows go the same way, unsent.
        for (const rest of built.slice(i)) outcomes[rest.at] = outcome;
        break;
      }
      outcomes[entry.at] =
        outcome.kind === "ok"
          ? {
              kind: "ok",
              values: splitOutputs(outcome.body, this.deps.outputs, 1)[0] as Record<string, unknown>,
              sent: true,
            }
          : outcome;
    }
    return outcomes;
  }

  /**
   * One request on one lane: its answer, or its error; overloads are retried on the lane until a stop;
   * "away": the lane's gateway could not be reached (the caller sends the rows to another lane).
   */
  private async send(
    request: RowRequest,
    lane: GatewayLane,
  ): Promise<
    | { kind: "ok"; body: Record<string, unknown> }
    | { kind: "failed"; error: string; sent: boolean }
    | { kind: "away"; error: string }
    | { kind: "dropped" }
  > {
    const { name, version } = this.deps.target;
    for (;;) {
      const started = performance.now();
      let response: Awaited<ReturnType<GatewayLane["client"]["infer"]>>;
      try {
        response =
          request.binaries.length > 0
            ? await lane.client.inferBinary(name, version, request.header, request.binaries)
            : await lane.client.infer(name, version, request.header);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (isAway(error)) return { kind: "away", error: message };
        const overloaded = isOverload(error);
        lane.limiter.record(performance.now() - started, overloaded);
        if (!overloaded) {
          const sent = error instanceof GatewayError;
          if (sent) this.deps.onRequestAnswered?.();
          return { kind: "failed", error: message, sent };
        }
        // The rows have no result yet; on a stop they are dropped with their chunk and run after the resume.
        if (this.deps.stopping()) return { kind: "dropped" };
        await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
        continue;
      }
      lane.limiter.record(performance.now() - started);
      this.deps.onRequestAnswered?.();
      return { kind: "ok", body: response.body };
    }
  }
}

/**
 * The gateway could not be reached: no connection, no answer in time, or the connection cut before the
 * answer was read (fetch's TypeError, not the client's AppError). A 503 the gateway answers is an overload.
 */
function isAway(error: unknown): boolean {
  if (error instanceof GatewayError) return false;
  return !(error instanceof AppError) || error.code === "GATEWAY_UNAVAILABLE";
}

/** The gateway was busy: 429 (a tenant over its share, a key's quota), 503. */
function isOverload(error: unknown): boolean {
  return error instanceof GatewayError && (error.status === 429 || error.status === 503);
}
