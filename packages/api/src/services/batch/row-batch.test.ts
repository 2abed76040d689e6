import { describe, expect, it } from "vitest";
import { joinRequests, splitOutputs } from "./row-batch.js";
import type { RowRequest } from "./row-request.js";

const tensorRow = (a: number, b: number, shape = [1, 2]): RowRequest => ({
  header: { inputs: [{ name: "X", datatype: "FP32", shape, data: [a, b] }], outputs: [{ name: "Y" }] },
  binaries: [],
});

/** A BYTES element as the binary tensor extension sends it: its length (u32 LE), then its bytes. */
const element = (text: string): Buffer => {
  const length = Buffer.alloc(4);
  length.writeUInt32LE(Buffer.byteLength(text));
  return Buffer.concat([length, Buffer.from(text)]);
};

const textRow = (text: string): RowRequest => ({
  header: {
    inputs: [{ name: "T", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: element(text).length } }],
  },
  binaries: [element(text)],
});

describe("several rows in one request", () => {
  it("joins numeric rows along the batch dimension, in order", () => {
    const joined = joinRequests([tensorRow(1, 2), tensorRow(3, 4), tensorRow(5, 6)]);
    expect(joined?.header).toEqual({
      inputs: [{ name: "X", datatype: "FP32", shape: [3, 2], data: [1, 2, 3, 4, 5, 6] }],
      outputs: [{ name: "Y" }],
    });
    expect(joined?.binaries).toEqual([]);
  });

  it("joins BYTES rows into one binary tensor of their elements, with its size", () => {
    const joined = joinRequests([textRow("ab"), textRow("cde")]);
    expect(joined?.header.inputs[0]).toEqual({
      name: "T",
      datatype: "BYTES",
      shape: [2, 1],
      parameters: { binary_data_size: 4 + 2 + 4 + 3 },
    });
    expect(joined?.binaries).toEqual([Buffer.concat([element("ab"), element("cde")])]);
  });

  it("does not join rows whose shapes differ (a list column of varying length), nor a request without a batch dimension", () => {
    expect(joinRequests([tensorRow(1, 2, [1, 2]), tensorRow(3, 4, [1, 3])])).toBeUndefined();
    expect(joinRequests([tensorRow(1, 2, [2]), tensorRow(3, 4, [2])])).toBeUndefined();
    expect(joinRequests([])).toBeUndefined();
    const one = tensorRow(1, 2);
    expect(joinRequests([one])).toBe(one);
  });

  it("splits the outputs back per row: a scalar for one element a row, else the row's list", () => {
    const body = {
      outputs: [
        { name: "Y", data: [10, 20] },
        { name: "Z", data: [1, 2, 3, 4, 5, 6] },
      ],
    };
    const outputs = [
      { name: "Y", type: "FLOAT" },
      { name: "Z", type: "FLOAT[]" },
    ];
    expect(splitOutputs(body, outputs, 2)).toEqual([
      { Y: 10, Z: [1, 2, 3] },
      { Y: 20, Z: [4, 5, 6] },
    ]);
    expect(splitOutputs(body, outputs.slice(0, 1), 1)).toEqual([{ Y: 10 }]);
  });

  it("refuses an answer whose element count is not a multiple of the rows sent", () => {
    expect(() =>
      splitOutputs({ outputs: [{ name: "Y", data: [1, 2, 3] }] }, [{ name: "Y", type: "FLOAT" }], 2),
    ).toThrow(/output 'Y' has 3 element\(s\), not a multiple of the 2 rows sent/);
  });
});
