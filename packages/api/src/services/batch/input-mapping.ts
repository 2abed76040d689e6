import { z } from "zod";
import { AppError } from "../../app-error.js";
import type { DatasetColumn } from "./dataset-query.js";

/**
 * How a job fills its target's inputs from a dataset row, and the type
 * checks made before a job starts: numeric columns (or one numeric list
 * column) into a numeric tensor, a text column into a BYTES element, an
 * image column of file paths or of bytes into a BYTES element.
 */
export const columnMappingSchema = z.discriminatedUnion("kind", [
  z.object({
    input: z.string().min(1),
    kind: z.literal("tensor"),
    columns: z.array(z.string().min(1)).min(1).max(4096),
  }),
  z.object({ input: z.string().min(1), kind: z.literal("text"), column: z.string().min(1) }),
  z.object({ input: z.string().min(1), kind: z.literal("image-path"), column: z.string().min(1) }),
  z.object({ input: z.string().min(1), kind: z.literal("image-bytes"), column: z.string().min(1) }),
]);
export const inputMappingSchema = z.array(columnMappingSchema).min(1).max(64);

export type ColumnMapping = z.infer<typeof columnMappingSchema>;

/** A tensor as the target's metadata describes it (KServe v2 model metadata). */
export interface TensorSpec {
  name: string;
  datatype: string;
  shape: number[];
}

export interface TargetSignature {
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  /** 0: the shapes carry no batch dimension. */
  maxBatchSize: number;
  /** Instances serving it (instance_group counts of the served config); undefined: the config did not say. */
  instances?: number | undefined;
}

/** What a checked mapping sends for one input: the per-row shape, with the batch dimension when the target batches. */
export interface PlannedInput {
  mapping: ColumnMapping;
  datatype: string;
  /** The request's shape for one row; a -1 left in it is filled per row (list columns of varying length). */
  shape: number[];
  /** For a tensor from one list column: its element type is checked, its length per row. */
  listColumn: boolean;
}

const NUMERIC_DATATYPES = new Set([
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP16",
  "FP32",
  "FP64",
  "BF16",
]);
const NUMERIC_COLUMN =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL(\(\d+,\s*\d+\))?|BOOLEAN)$/;
const LIST_COLUMN = /^(.+?)\[(\d*)\]$/;

export function isNumericColumnType(type: string): boolean {
  return NUMERIC_COLUMN.test(type);
}

/** Checks the mapping against the target's inputs and the dataset's columns; every problem is named at its field. */
export function planInputs(
  mapping: readonly ColumnMapping[],
  signature: TargetSignature,
  columns: readonly DatasetColumn[],
): PlannedInput[] {
  const problems: Array<{ path: string; message: string }> = [];
  const columnType = new Map(columns.map((column) => [column.name, column.type]));
  const seen = new Set<string>();
  const planned: PlannedInput[] = [];
  for (const [index, entry] of mapping.entries()) {
    const at = (field: string) => `mapping.${index}.${field}`;
    const input = signature.inputs.find((spec) => spec.name === entry.input);
    if (input === undefined) {
      problems.push({
        path: at("input"),
        message: `the target has no input '${entry.input}' (inputs: ${signature.inputs.map((spec) => spec.name).join(", ")})`,
      });
      continue;
    }
    if (seen.has(entry.input)) {
      problems.push({ path: at("input"), message: `input '${entry.input}' is mapped twice` });
      continue;
    }
    seen.add(entry.input);
    const dims = signature.maxBatchSize > 0 ? input.shape.slice(1) : input.shape;
    const batch = signature.maxBatchSize > 0 ? [1] : [];
    const names = entry.kind === "tensor" ? entry.columns : [entry.column];
    const missing = names.filter((name) => !columnType.has(name));
    if (missing.length > 0) {
      problems.push({
        path: at(entry.kind === "tensor" ? "columns" : "column"),
        message: `no column ${missing.map((name) => `'${name}'`).join(", ")} in the dataset (columns: ${columns.map((column) => column.name).join(", ")})`,
      });
      continue;
    }
    if (entry.kind === "tensor") {
      if (!NUMERIC_DATATYPES.has(input.datatype)) {
        problems.push({
          path: at("kind"),
          message: `input '${input.name}' is ${input.datatype}: numeric columns go into numeric inputs (use kind text or image-* for BYTES)`,
        });
        continue;
      }
      const types = names.map((name) => columnType.get(name) ?? "");
      const list = names.length === 1 ? LIST_COLUMN.exec(types[0] ?? "") : null;
      if (list !== null) {
        if (!isNumericColumnType(list[1] ?? "")) {
          problems.push({ path: at("columns"), message: `column '${names[0]}' is ${types[0]}, not a list of numbers` });
          continue;
        }
        const length = list[2] !== "" ? Number(list[2]) : -1;
        const shape = fitShape(dims, length);
        if (shape === undefined) {
          problems.push({
            path: at("columns"),
            message: `column '${names[0]}' (${types[0]}) does not fit input '${input.name}' of shape [${dims.join(", ")}]`,
          });
          continue;
        }
        planned.push({ mapping: entry, datatype: input.datatype, shape: [...batch, ...shape], listColumn: true });
        continue;
      }
      const wrong = names.filter((_, position) => !isNumericColumnType(types[position] ?? ""));
      if (wrong.length > 0) {
        problems.push({
          path: at("columns"),
          message: `column ${wrong.map((name) => `'${name}' (${columnType.get(name)})`).join(", ")} is not numeric`,
        });
        continue;
      }
      const shape = fitShape(dims, names.length);
      if (shape === undefined) {
        problems.push({
          path: at("columns"),
          message: `input '${input.name}' of shape [${dims.join(", ")}] does not take ${names.length} value(s) a row`,
        });
        continue;
      }
      planned.push({ mapping: entry, datatype: input.datatype, shape: [...batch, ...shape], listColumn: false });
      continue;
    }
    const type = columnType.get(entry.column) ?? "";
    const wantColumn = entry.kind === "image-bytes" ? "BLOB" : "VARCHAR";
    if (input.datatype !== "BYTES") {
      problems.push({
        path: at("kind"),
        message: `input '${input.name}' is ${input.datatype}: ${entry.kind} columns go into BYTES inputs`,
      });
      continue;
    }
    if (type !== wantColumn) {
      problems.push({
        path: at("column"),
        message: `column '${entry.column}' is ${type}; a ${entry.kind} column must be ${wantColumn}`,
      });
      continue;
    }
    const shape = fitShape(dims, 1);
    if (shape === undefined) {
      problems.push({
        path: at("input"),
        message: `input '${input.name}' of shape [${dims.join(", ")}] takes more than one element a row`,
      });
      continue;
    }
    planned.push({ mapping: entry, datatype: "BYTES", shape: [...batch, ...shape], listColumn: false });
  }
  for (const input of signature.inputs) {
    if (!seen.has(input.name) && !mapping.some((entry) => entry.input === input.name))
      problems.push({ path: "mapping", message: `input '${input.name}' (${input.datatype}) has no column mapped` });
  }
  if (problems.length > 0) {
    throw new AppError(
      "VALIDATION_FAILED",
      `the column mapping does not fit: ${problems.map((p) => p.message).join("; ")}`,
      {
        fieldErrors: problems,
      },
    );
  }
  return planned;
}

/**
 * The shape one row's `count` elements take in `dims` (-1 = variable): the
 * dims themselves when they hold exactly `count`; with one -1, that dim set
 * to what is left. `count` -1 (a list of varying length) leaves one -1 for
 * the row. Undefined when they do not fit.
 */
export function fitShape(dims: readonly number[], count: number): number[] | undefined {
  const variable = dims.filter((dim) => dim < 0).length;
  const fixed = dims.filter((dim) => dim >= 0).reduce((product, dim) => product * dim, 1);
  if (variable === 0) return count === -1 || fixed === count ? [...dims] : undefined;
  if (variable > 1) return undefined;
  if (count === -1) return [...dims];
  if (fixed === 0 || count % fixed !== 0) return undefined;
  return dims.map((dim) => (dim < 0 ? count / fixed : dim));
}
