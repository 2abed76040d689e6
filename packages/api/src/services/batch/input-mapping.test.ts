import { describe, expect, it } from "vitest";
import { fitShape, planInputs, type TargetSignature } from "./input-mapping.js";

const columns = [
  { name: "a", type: "BIGINT" },
  { name: "b", type: "DOUBLE" },
  { name: "text", type: "VARCHAR" },
  { name: "image", type: "BLOB" },
  { name: "embedding", type: "FLOAT[]" },
  { name: "tags", type: "VARCHAR[]" },
];

const signature = (inputs: TargetSignature["inputs"], maxBatchSize = 0): TargetSignature => ({
  inputs,
  outputs: [],
  maxBatchSize,
});

describe("column mapping checks", () => {
  it("plans numeric columns into a tensor, with the batch dimension when the target batches", () => {
    const planned = planInputs(
      [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
      signature([{ name: "X", datatype: "FP32", shape: [-1, 2] }], 8),
      columns,
    );
    expect(planned).toEqual([expect.objectContaining({ datatype: "FP32", shape: [1, 2], listColumn: false })]);
  });

  it("fills a variable dimension from the column count, and takes a numeric list column", () => {
    expect(
      planInputs(
        [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
        signature([{ name: "X", datatype: "FP32", shape: [-1] }]),
        columns,
      )[0]!.shape,
    ).toEqual([2]);
    expect(
      planInputs(
        [{ input: "X", kind: "tensor", columns: ["embedding"] }],
        signature([{ name: "X", datatype: "FP32", shape: [-1] }]),
        columns,
      )[0],
    ).toMatchObject({ listColumn: true, shape: [-1] });
  });

  it("names every problem at its field", () => {
    const bytes = signature([
      { name: "T", datatype: "BYTES", shape: [1] },
      { name: "X", datatype: "FP32", shape: [3] },
      { name: "Z", datatype: "INT64", shape: [1] },
    ]);
    let error: { fieldErrors?: Array<{ path: string; message: string }> } | undefined;
    try {
      planInputs(
        [
          { input: "T", kind: "image-bytes", column: "text" },
          { input: "X", kind: "tensor", columns: ["a", "b"] },
          { input: "Q", kind: "text", column: "text" },
        ],
        bytes,
        columns,
      );
    } catch (caught) {
      error = caught as typeof error;
    }
    expect(error?.fieldErrors).toEqual([
      { path: "mapping.0.column", message: "column 'text' is VARCHAR; a image-bytes column must be BLOB" },
      { path: "mapping.1.columns", message: "input 'X' of shape [3] does not take 2 value(s) a row" },
      { path: "mapping.2.input", message: "the target has no input 'Q' (inputs: T, X, Z)" },
      { path: "mapping", message: "input 'Z' (INT64) has no column mapped" },
    ]);
  });

  it("refuses text into numbers, numbers into BYTES, lists of text, missing columns", () => {
    const fp = signature([{ name: "X", datatype: "FP32", shape: [1] }]);
    expect(() => planInputs([{ input: "X", kind: "text", column: "text" }], fp, columns)).toThrow(
      /FP32: text columns go into BYTES/,
    );
    expect(() => planInputs([{ input: "X", kind: "tensor", columns: ["text"] }], fp, columns)).toThrow(
      /'text' \(VARCHAR\) is not numeric/,
    );
    expect(() => planInputs([{ input: "X", kind: "tensor", columns: ["tags"] }], fp, columns)).toThrow(
      /not a list of numbers/,
    );
    expect(() => planInputs([{ input: "X", kind: "tensor", columns: ["nope"] }], fp, columns)).toThrow(
      /no column 'nope'/,
    );
    const text = signature([{ name: "X", datatype: "BYTES", shape: [1] }]);
    expect(() => planInputs([{ input: "X", kind: "tensor", columns: ["a"] }], text, columns)).toThrow(
      /BYTES: numeric columns go into numeric inputs/,
    );
    expect(planInputs([{ input: "X", kind: "image-path", column: "text" }], text, columns)[0]!.datatype).toBe("BYTES");
  });

  it("fits shapes", () => {
    expect(fitShape([2, 3], 6)).toEqual([2, 3]);
    expect(fitShape([-1, 3], 6)).toEqual([2, 3]);
    expect(fitShape([-1, 4], 6)).toBeUndefined();
    expect(fitShape([-1, -1], 6)).toBeUndefined();
    expect(fitShape([4], -1)).toEqual([4]);
  });
});
