import type { Logger } from "@operon/protocol/logger";
import { AppError } from "../../app-error.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { GatewayError } from "../gateway/gateway-client.js";
import type { AimdLimiter } from "./aimd.js";
import type { DuckSandbox } from "./duckdb-sandbox.js";
import type { PlannedInput } from "./input-mapping.js";
import { JobFiles, ROW_COLUMN, partName, type OutputColumn } from "./job-files.js";
import { chunksOf, missingRanges, type RowRange } from "./row-ranges.js";
import { RowError, rowRequest, type ImageAccess } from "./row-request.js";

/**
 * Runs one job's missing rows through the gateway, chunk by chunk, with at
 * most the limiter's limit of requests in flight. A chunk is checkpointed
 * (its part file written, then its range, part name and failed rows stored
 * in one transaction, by `commit`) once every row in it has a result or an
 * error; a stop (pause, cancel, shutdown) lets the requests in flight
 * finish, checkpoints the chunks they completed and drops the rest, whose
 * rows run again on resume. So every row ends with exactly one result or one
 * failure, however often the job stops.
 *
 * A row the gateway refuses as overloaded (429, 503, the gateway briefly
 * away) is not a failure: it waits and goes again, and the limiter backs off.
 */
export interface ChunkOutcome {
  range: RowRange;
  part: string;
  succeeded: number;
  failures: Array<{ row: number; error: string }>;
}

export interface JobRunnerDeps {
  files: JobFiles;
  sandbox: DuckSandbox;
  /** A gateway client that sends the job's own key (its tenant and lowest priority). */
  gateway: GatewayClient;
  target: { name: string; version?: string | undefined };
  planned: readonly PlannedInput[];
  outputs: readonly OutputColumn[];
  /** The outputs to ask for (empty: all). */
  requestedOutputs: readonly string[];
  images: ImageAccess;
  limiter: AimdLimiter;
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
    let nextChunk = 0;
    while (this.commitError === undefined) {
      if (this.deps.stopping()) break;
      // Keep two chunks open so the pipe stays full while one waits for its slowest row.
      while (open.length < 2 && nextChunk < chunks.length) {
        const range = chunks[nextChunk++] as RowRange;
        const rows = await this.deps.files.readRows(this.deps.sandbox, range);
        open.push({ range, rows, next: 0, remaining: rows.length, results: [], failures: [] });
        if (rows.length === 0) this.finishChunk(open, open[open.length - 1] as ChunkState);
      }
      const chunk = open.find((state) => state.next < state.rows.length);
      if (chunk === undefined) {
        if (open.length === 0 && nextChunk >= chunks.length) break;
        if (open.every((state) => state.dropped === true) && this.inFlight === 0) break;
        await this.waitForSlot();
        continue;
      }
      if (this.inFlight >= this.deps.limiter.limit) {
        await this.waitForSlot();
        continue;
      }
      const row = chunk.rows[chunk.next++] as Record<string, unknown>;
      this.inFlight += 1;
      void this.runRow(row).then((outcome) => {
        this.inFlight -= 1;
        const index = Number(row[ROW_COLUMN]);
        if (outcome.kind !== "dropped") this.deps.onRowSettled?.(outcome.sent);
        if (outcome.kind === "ok") chunk.results.push({ [ROW_COLUMN]: index, ...outcome.values });
        else if (outcome.kind === "failed") chunk.failures.push({ row: index, error: outcome.error });
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
        await this.deps.commit({ range: chunk.range, part, succeeded: chunk.results.length, failures: chunk.failures });
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

  /** One row: its result values, or its error; overloads are retried here until a stop. */
  private async runRow(
    row: Record<string, unknown>,
  ): Promise<
    | { kind: "ok"; values: Record<string, unknown>; sent: true }
    | { kind: "failed"; error: string; sent: boolean }
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
    for (;;) {
      const started = performance.now();
      try {
        const response =
          request.binaries.length > 0
            ? await this.deps.gateway.inferBinary(
                this.deps.target.name,
                this.deps.target.version,
                request.header,
                request.binaries,
              )
            : await this.deps.gateway.infer(this.deps.target.name, this.deps.target.version, request.header);
        this.deps.limiter.record(performance.now() - started);
        return { kind: "ok", values: valuesOf(response.body, this.deps.outputs), sent: true };
      } catch (error) {
        const overloaded = isOverload(error);
        this.deps.limiter.record(performance.now() - started, overloaded);
        if (!overloaded)
          return {
            kind: "failed",
            error: error instanceof Error ? error.message : String(error),
            sent: error instanceof GatewayError,
          };
        // The row has no result yet; on a stop it is dropped with its chunk and runs after the resume.
        if (this.deps.stopping()) return { kind: "dropped" };
        await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
      }
    }
  }
}

/** The gateway was busy or away: 429 (a tenant over its share, a key's quota), 503, unreachable. */
function isOverload(error: unknown): boolean {
  if (error instanceof GatewayError) return error.status === 429 || error.status === 503;
  return error instanceof AppError && error.code === "GATEWAY_UNAVAILABLE";
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
