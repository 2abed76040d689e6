import type { z } from "zod";
import { AppError } from "../app-error.js";

/** Which JSON column of which row a value was read from, for the error when it does not parse. */
export interface JsonColumnRef {
  /** The Prisma model, e.g. "PerfReport". */
  table: string;
  column: string;
  /** The row's id. */
  id: string;
}

/**
 * A database JSON column read back, checked against the schema of what its
 * writer stores (the schema lives beside that writer) instead of cast: a row
 * that holds something else (written by an older version, edited by hand)
 * is an INTERNAL error naming the column, the row and the first mismatch,
 * never a value of the wrong shape passed on.
 */
export function parseJsonColumn<S extends z.ZodType>(schema: S, value: unknown, ref: JsonColumnRef): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = issue !== undefined && issue.path.length > 0 ? ` at ${issue.path.map(String).join(".")}` : "";
  throw new AppError(
    "INTERNAL",
    `${ref.table}.${ref.column} of row ${ref.id} does not hold what Operon stores there${at}: ${issue?.message ?? "invalid"}`,
  );
}
