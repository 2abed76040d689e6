import type { PerfTargetKind } from "@operon/db";
import { AppError } from "../../app-error.js";

/**
 * How many rows one of a job's requests carries (row-batch.ts joins them).
 *
 * - A job may ask for a number (jobs.create's `rowsPerRequest`, `operon job run --rows-per-request`): 1 to its
 *   model's max_batch_size, checked when the job is created; 1 for an operator or a model that does not batch.
 * - Else the server's `--batch-rows-per-request`, at most the model's max_batch_size.
 * - Else one row a request. Half the model's max_batch_size (rowsPerRequestFor: a job request then still leaves
 *   room in each execution for online requests) is what bench:batch measures, but it is not the default yet: with
 *   it the job-throughput-and-cost browser spec reads a fast job's rows/s as 0 at its end in some runs, not yet
 *   explained (issue 24's closing note).
 *
 * Operators get one row a request: their steps batch as their models do, and only a model's own
 * max_batch_size says what a request to it may hold.
 */
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
    fieldErrors: [{ path: "rowsPerRequest", message: `1 to ${most}` }],
  });
}

/** The rows a running job's request carries: its ask, else the server's default, else half the batch. */
export function jobRowsPerRequest(
  target: RowsPerRequestTarget,
  asked: number | null | undefined,
  serverDefault: number | undefined,
): number {
  const most = mostRowsPerRequest(target);
  // The model served now may batch less than the one the job was checked against (another version loaded).
  if (asked !== null && asked !== undefined) return Math.min(asked, most);
  if (target.kind !== "MODEL") return 1;
  return Math.min(serverDefault ?? 1, most);
}
