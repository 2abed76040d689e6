import type { PerfTargetKind } from "@operon/db";
import { AppError } from "../../app-error.js";

/**
 * How many rows one of a job's requests carries (row-batch.ts joins them).
 *
 * - A job may ask for a number (jobs.create's `rowsPerRequest`, `operon job run --rows-per-request`): 1 to its
 *   model's max_batch_size, checked when the job is created; 1 for an operator or a model that does not batch.
 * - Else the server's `--batch-rows-per-request`, at most the model's max_batch_size.
 * - Else half the model's max_batch_size, at most 8 (`defaultRowsPerRequest`): 2 rows for a batch of 4, 4 for 8,
 *   8 for 16 or more; one for a model that batches 2 or less.
 *
 * Why rows are joined by default: each request costs the gateway's host CPU (HTTP, JSON, scheduling) whatever
 * its size, and on a small host the job's requests compete for it with online ones. Why half the batch, not all
 * of it: the dynamic batcher fills an execution in priority order and stops at the first request that does not
 * fit (request-scheduler.ts), so a job request as large as the batch never shares an execution with an online
 * request, while one of half the batch fills the room online requests leave. Why at most 8: past 8 rows a
 * request, the per-request cost is already an eighth or less of the per-row one, while a joined request that
 * fails goes again row by row (up to that many extra requests) and the job's concurrency, counted in requests,
 * moves in coarser steps.
 *
 * Operators get one row a request: their steps batch as their models do, and only a model's own
 * max_batch_size says what a request to it may hold.
 */
/** The most rows a job joins into one request by default. */
export const MAX_DEFAULT_ROWS_PER_REQUEST = 8;

export interface RowsPerRequestTarget {
  kind: PerfTargetKind;
  name: string;
  /** The model's max_batch_size (0: it does not batch). */
  maxBatchSize: number;
}

/** The most rows a request to the target may carry. */
export function mostRowsPerRequest(target: RowsPerRequestTarget): number {
  return target.kind === "MODEL" ? Math.max(1, target.maxBatchSize) : 1;
}

/** A job's own ask, refused with a message naming the target and the range it allows. */
export function checkRowsPerRequest(asked: number, target: RowsPerRequestTarget): void {
  const most = mostRowsPerRequest(target);
  if (Number.isInteger(asked) && asked >= 1 && asked <= most) return;
  const what =
    target.kind === "OPERATOR"
      ? `operator '${target.name}' takes one row a request (its steps batch as their models do)`
      : target.maxBatchSize > 0
        ? `model '${target.name}' batches at most ${target.maxBatchSize} rows (max_batch_size); give 1 to ${most}`
        : `model '${target.name}' does not batch (max_batch_size 0); give 1`;
  throw new AppError("VALIDATION_FAILED", `rows per request ${asked}: ${what}`, {
    // The field's own message (a form shows it under the field): the range and why it ends there.
    fieldErrors: [{ path: "rowsPerRequest", message: fieldMessage(target, most) }],
  });
}

function fieldMessage(target: RowsPerRequestTarget, most: number): string {
  if (target.kind === "OPERATOR") return "1: an operator takes one row a request";
  if (target.maxBatchSize > 0) return `1 to ${most}: the model's max_batch_size is ${target.maxBatchSize}`;
  return "1: the model does not batch";
}

/** Rows a request carries when neither the job nor the server says: half the model's max_batch_size, 1 to 8. */
export function defaultRowsPerRequest(maxBatchSize: number): number {
  return Math.min(MAX_DEFAULT_ROWS_PER_REQUEST, Math.max(1, Math.floor(maxBatchSize / 2)));
}

/** The rows a running job's request carries: its ask, else the server's default, else half the batch (up to 8). */
export function jobRowsPerRequest(
  target: RowsPerRequestTarget,
  asked: number | null | undefined,
  serverDefault: number | undefined,
): number {
  const most = mostRowsPerRequest(target);
  // The model served now may batch less than the one the job was checked against (another version loaded).
  if (asked !== null && asked !== undefined) return Math.min(asked, most);
  if (target.kind !== "MODEL") return 1;
  return Math.min(serverDefault ?? defaultRowsPerRequest(target.maxBatchSize), most);
}
