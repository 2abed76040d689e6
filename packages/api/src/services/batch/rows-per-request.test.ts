import { describe, expect, it } from "vitest";
import { checkRowsPerRequest, defaultRowsPerRequest, jobRowsPerRequest } from "./rows-per-request.js";

const tokenizer = { kind: "MODEL" as const, name: "tokenizer_ts", maxBatchSize: 8 };
const unbatched = { kind: "MODEL" as const, name: "simple", maxBatchSize: 0 };
const operator = { kind: "OPERATOR" as const, name: "rank", maxBatchSize: 8 };

describe("rows a job's request carries", () => {
  it("is half the model's max_batch_size by default, 1 to 8, so online requests still fit in each execution", () => {
    expect(defaultRowsPerRequest(0)).toBe(1);
    expect(defaultRowsPerRequest(1)).toBe(1);
    expect(defaultRowsPerRequest(2)).toBe(1);
    expect(defaultRowsPerRequest(4)).toBe(2);
    expect(defaultRowsPerRequest(9)).toBe(4);
    expect(defaultRowsPerRequest(16)).toBe(8);
    expect(defaultRowsPerRequest(256)).toBe(8);
    expect(jobRowsPerRequest(tokenizer, undefined, undefined)).toBe(4);
    expect(jobRowsPerRequest({ ...tokenizer, maxBatchSize: 64 }, null, undefined)).toBe(8);
  });

  it("is the job's own ask, else the server's default, else the default; at most the model's batch", () => {
    expect(jobRowsPerRequest(tokenizer, null, 2)).toBe(2);
    expect(jobRowsPerRequest(tokenizer, null, 32)).toBe(8);
    expect(jobRowsPerRequest(tokenizer, 1, 6)).toBe(1);
    expect(jobRowsPerRequest(tokenizer, 8, undefined)).toBe(8);
    // Checked against a model that batched 8; the one served now batches 4.
    expect(jobRowsPerRequest({ ...tokenizer, maxBatchSize: 4 }, 8, undefined)).toBe(4);
  });

  it("is one row for a model that does not batch and for an operator, whatever the server's default", () => {
    expect(jobRowsPerRequest(unbatched, null, 4)).toBe(1);
    expect(jobRowsPerRequest(operator, null, 4)).toBe(1);
    expect(jobRowsPerRequest(operator, undefined, undefined)).toBe(1);
  });

  it("accepts 1 to the model's max_batch_size and refuses anything else, naming the model and the range", () => {
    expect(() => checkRowsPerRequest(1, tokenizer)).not.toThrow();
    expect(() => checkRowsPerRequest(8, tokenizer)).not.toThrow();
    expect(() => checkRowsPerRequest(9, tokenizer)).toThrow(
      "rows per request 9: model 'tokenizer_ts' batches at most 8 rows (max_batch_size); give 1 to 8",
    );
    expect(() => checkRowsPerRequest(0, tokenizer)).toThrow("give 1 to 8");
    expect(() => checkRowsPerRequest(2.5, tokenizer)).toThrow("rows per request 2.5");
    expect(() => checkRowsPerRequest(2, unbatched)).toThrow(
      "rows per request 2: model 'simple' does not batch (max_batch_size 0); give 1",
    );
    expect(() => checkRowsPerRequest(1, operator)).not.toThrow();
    expect(() => checkRowsPerRequest(2, operator)).toThrow("operator 'rank' takes one row a request");
  });

  it("gives the field its own message with the range and why it ends there (a form shows it under the field)", () => {
    const fieldOf = (asked: number, target: Parameters<typeof checkRowsPerRequest>[1]) => {
      try {
        checkRowsPerRequest(asked, target);
      } catch (error) {
        return (error as { fieldErrors?: unknown }).fieldErrors;
      }
      return undefined;
    };
    expect(fieldOf(9, tokenizer)).toEqual([
      { path: "rowsPerRequest", message: "1 to 8: the model's max_batch_size is 8" },
    ]);
    expect(fieldOf(2, unbatched)).toEqual([{ path: "rowsPerRequest", message: "1: the model does not batch" }]);
    expect(fieldOf(2, operator)).toEqual([
      { path: "rowsPerRequest", message: "1: an operator takes one row a request" },
    ]);
  });
});
