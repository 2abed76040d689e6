import { describe, expect, it } from "vitest";
import { numericFileValues } from "./numeric-file";

/** A .npy file as NumPy's np.save writes one (format 1.0, header padded to 64 bytes). */
function npy(descr: string, shape: number[], data: Uint8Array, fortran = false): Uint8Array {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': ${fortran ? "True" : "False"}, 'shape': ${shapeText}, }`;
  header += " ".repeat(63 - ((10 + header.length) % 64)) + "\n";
  const head = new Uint8Array(10 + header.length);
  head.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(head.buffer).setUint16(8, header.length, true);
  head.set(new TextEncoder().encode(header), 10);
  const file = new Uint8Array(head.length + data.length);
  file.set(head);
  file.set(data, head.length);
  return file;
}

const bytesOf = (array: ArrayBufferView) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

describe("numericFileValues", () => {
  it("reads a .npy file's values and shape", () => {
    const result = numericFileValues(
      npy("<f4", [2, 3], bytesOf(new Float32Array([0.5, 1, 2, 3, 4, -1.25]))),
      "x.npy",
      "FP32",
    );
    expect(result).toEqual({ ok: true, value: { values: [0.5, 1, 2, 3, 4, -1.25], shape: [2, 3] } });
    const ints = numericFileValues(npy("<i8", [3], bytesOf(new BigInt64Array([1n, -2n, 3n]))), "ids.npy", "INT64");
    expect(ints).toEqual({ ok: true, value: { values: [1, -2, 3], shape: [3] } });
    // float16: 1.0 is 0x3c00, -2.0 is 0xc000.
    const half = numericFileValues(npy("<f2", [2], bytesOf(new Uint16Array([0x3c00, 0xc000]))), "h.npy", "FP16");
    expect(half).toEqual({ ok: true, value: { values: [1, -2], shape: [2] } });
  });

  it("refuses a .npy file it cannot read, naming why", () => {
    const fortran = numericFileValues(npy("<f4", [2], bytesOf(new Float32Array(2)), true), "f.npy", "FP32");
    expect(fortran).toEqual({ ok: false, message: expect.stringMatching(/Fortran \(column-major\) order/) });
    const bigEndian = numericFileValues(npy(">f4", [2], bytesOf(new Float32Array(2))), "b.npy", "FP32");
    expect(bigEndian).toEqual({ ok: false, message: expect.stringMatching(/holds dtype '>f4'/) });
    const short = numericFileValues(npy("<f4", [4], bytesOf(new Float32Array(3))), "s.npy", "FP32");
    expect(short).toEqual({ ok: false, message: "s.npy: its shape [4] holds 4 values, the file 3" });
  });

  it("reads raw little-endian values of the input's datatype, and refuses a size that is not whole values", () => {
    expect(numericFileValues(bytesOf(new Float32Array([1.5, 2.5])), "x.bin", "FP32")).toEqual({
      ok: true,
      value: { values: [1.5, 2.5] },
    });
    expect(numericFileValues(new Uint8Array([1, 0, 2]), "x.raw", "UINT8")).toEqual({
      ok: true,
      value: { values: [1, 0, 2] },
    });
    expect(numericFileValues(new Uint8Array(6), "x.bin", "FP32")).toEqual({
      ok: false,
      message: expect.stringMatching(/x\.bin is 6 bytes, not a whole number of FP32 values \(4 bytes each\)/),
    });
  });

  it("reads a JSON array, nested arrays giving the shape, and refuses ragged or non-numeric ones", () => {
    const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    expect(
      numericFileValues(
        json([
          [1, 2, 3],
          [4, 5, 6],
        ]),
        "x.json",
        "INT32",
      ),
    ).toEqual({
      ok: true,
      value: { values: [1, 2, 3, 4, 5, 6], shape: [2, 3] },
    });
    expect(numericFileValues(json([[1, 2], [3]]), "r.json", "INT32")).toEqual({
      ok: false,
      message: "r.json: the nested arrays are ragged (rows of different lengths)",
    });
    expect(numericFileValues(json(["a"]), "t.json", "INT32")).toEqual({
      ok: false,
      message: "t.json: every element must be a number or true/false",
    });
    expect(numericFileValues(new TextEncoder().encode("[1,"), "bad.json", "FP32")).toMatchObject({ ok: false });
  });
});
