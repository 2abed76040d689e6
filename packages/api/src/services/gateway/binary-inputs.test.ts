import { describe, expect, it } from "vitest";
import { gatewayInputsOf, MAX_TRY_BYTES } from "./binary-inputs.js";

describe("gatewayInputsOf", () => {
  it("keeps JSON tensors as they are and lays base64 ones out as Triton binary data", () => {
    const { inputs, binaries } = gatewayInputsOf([
      { name: "x", datatype: "FP32", shape: [2], data: [1, 2] },
      { name: "image", datatype: "BYTES", shape: [2], data: ["AAEC", ""], encoding: "base64" },
    ]);
    expect(inputs).toEqual([
      { name: "x", datatype: "FP32", shape: [2], data: [1, 2] },
      { name: "image", datatype: "BYTES", shape: [2], parameters: { binary_data_size: 11 } },
    ]);
    expect([...binaries[0]!]).toEqual([3, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0]);
  });

  it("refuses a count the shape does not hold, and files past the cap before decoding them", () => {
    expect(() =>
      gatewayInputsOf([{ name: "image", datatype: "BYTES", shape: [1, 2], data: ["AAEC"], encoding: "base64" }]),
    ).toThrow("input 'image': shape [1, 2] holds 2 elements, but 1 were given");
    const big = "A".repeat(((MAX_TRY_BYTES / 2 + 3) / 3) * 4 + 4);
    expect(() =>
      gatewayInputsOf([
        { name: "a", datatype: "BYTES", shape: [1], data: [big], encoding: "base64" },
        { name: "b", datatype: "BYTES", shape: [1], data: [big], encoding: "base64" },
      ]),
    ).toThrow("input 'b': the files add up to more than 6 MiB");
  });
});
