import type { Logger } from "@operon/protocol/logger";
import { AppError } from "../../app-error.js";
import { GatewayError } from "../gateway/gateway-client.js";
import type { DuckSandbox } from "./duckdb-sandbox.js";
import type { GatewayLane } from "./gateway-lanes.js";
import type { PlannedInput } from "./input-mapping.js";
import { JobFiles, ROW_COLUMN, partName, type OutputColumn } from "./job-files.js";
import { chunksOf, missingRanges, type RowRange } from "./row-ranges.js";
import { RowError, rowRequest, type ImageAccess } from "./row-request.js";

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
  /** Stores a finished chunk (called one at a time, in completion order). */
  commit(outcome: ChunkOutcome): Promise<void>;
  /** True once the job should stop taking new rows. */
  stopping(): boolean;
  /** Each row that got a result or a failure; `sent`: the gateway answered a request for it (throughput, cost). */
  onRowSettled?: (sent: boolean) => void;
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

export class JobRunner {
  private inFlight = 0;
  private commitChain: Promise<void> = Promise.resolve();
  private commitError: unknown;
  private wake: (() => void) | undefined;

  constructor(private readonly deps: JobRunnerDeps) {}

  /** Runs until every missing row is checkpointed (true) or a stop (false). */
  async run(done: readonly RowRange[], totalRows: number): Promise<boolean> {
    const chunks = chunksOf(missingRanges(done, totalRows), this.deps.chunkRows);
    const open: ChunkState[] = [];
    /** Rows whose gateway went away mid-request: they go again, to another lane, before any new row. */
    const resend: Array<{ chunk: ChunkState; row: Record<string, unknown> }> = [];
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
      const chunk = resend[0]?.chunk ?? open.find((state) => state.next < state.rows.length);
      if (chunk === undefined) {
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
      const row =
        resend.length > 0
          ? (resend.shift() as { row: Record<string, unknown> }).row
          : (chunk.rows[chunk.next++] as Record<string, unknown>);
      this.inFlight += 1;
      void this.runRow(row, lane).then((outcome) => {
        this.deps.lanes.release(lane);
        this.inFlight -= 1;
        if (outcome.kind === "away") {
          this.deps.lanes.markAway(lane, outcome.error);
          resend.push({ chunk, row });
          this.wake?.();
          return;
        }
        const index = Number(row[ROW_COLUMN]);
        if (outcome.kind !== "dropped") this.deps.onRowSettled?.(outcome.sent);
        if (outcome.kind === "ok") {
          chunk.results.push({ [ROW_COLUMN]: index, ...outcome.values });
          chunk.servedBy[lane.id] = (chunk.servedBy[lane.id] ?? 0) + 1;
        } else if (outcome.kind === "failed") chunk.failures.push({ row: index, error: outcome.error });
        else chunk.dropped = true;
        chunk.remaining -= 1;
        if (chunk.remaining === 0 && !chunk.dropped) this.finishChunk(open, chunk);
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
   * One row on one lane: its result values, or its error; overloads are retried on the lane until a stop;
   * "away": the lane's gateway could not be reached (the caller sends the row to another lane).
   */
  private async runRow(
    row: Record<string, unknown>,
    lane: GatewayLane,
  ): Promise<
    | { kind: "ok"; values: Record<string, unknown>; sent: true }
    | { kind: "failed"; error: string; sent: boolean }
    | { kind: "away"; error: string }
    | { kind: "dropped" }
  > {
    let request: Awaited<ReturnType<typeof rowRequest>>;
    try {
      request = await rowRequest(this.deps.planned, row, this.deps.images, this.deps.requestedOutputs);
    } catch (error) {
      if (!(error instanceof RowError))
        this.deps.logger.warn({ err: (error as Error).message }, "batch row could not be read");
      return { kind: "failed", error: error instanceof Error ? error.message : String(error), sent: false };
    }
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
        if (!overloaded) return { kind: "failed", error: message, sent: error instanceof GatewayError };
        // The row has no result yet; on a stop it is dropped with its chunk and runs after the resume.
        if (this.deps.stopping()) return { kind: "dropped" };
        await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
        continue;
      }
      lane.limiter.record(performance.now() - started);
      return { kind: "ok", values: valuesOf(response.body, this.deps.outputs), sent: true };
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

/** The outputs' values for the results: a scalar for one element, else the flat list. */
function valuesOf(body: Record<string, unknown>, outputs: readonly OutputColumn[]): Record<string, unknown> {
  const got = (body["outputs"] ?? []) as Array<{ name?: string; data?: unknown[] }>;
  const values: Record<string, unknown> = {};
  for (const output of outputs) {
    const data = got.find((tensor) => tensor.name === output.name)?.data;
    if (data === undefined) continue;
    values[output.name] = output.type.endsWith("[]") ? data : (data[0] ?? null);
  }
  return values;
}
