import { DATATYPES, type DataType, elementByteSize } from "@operon/protocol/datatypes";
import { bfloat16BitsToNumber, float16BitsToNumber } from "@operon/protocol/half-float";
import { decodeBytesElements } from "@operon/protocol/tensor";
import { describe, expect, it } from "vitest";
import {
  RANDOM_INT_MAX,
  RANDOM_STRING_LENGTH,
  generateTensorData,
  parseShapeFlag,
  prepareInputSets,
  resolveInputSpecs,
} from "./input-data.js";

/** A seeded generator, so random data is reproducible in tests. */
function seeded(seed = 1): () => number {
  let state = seed;
  return () => {
    state = (state * 16807) % 2147483647;
    return (state - 1) / 2147483646;
  };
}

function values(datatype: DataType, data: Buffer): number[] {
  const out: number[] = [];
  const size = elementByteSize(datatype)!;
  for (let offset = 0; offset < data.length; offset += size) {
    switch (datatype) {
      case "BOOL":
      case "UINT8":
        out.push(data.readUInt8(offset));
        break;
      case "INT8":
        out.push(data.readInt8(offset));
        break;
      case "UINT16":
        out.push(data.readUInt16LE(offset));
        break;
      case "INT16":
        out.push(data.readInt16LE(offset));
        break;
      case "UINT32":
        out.push(data.readUInt32LE(offset));
        break;
      case "INT32":
        out.push(data.readInt32LE(offset));
        break;
      case "UINT64":
        out.push(Number(data.readBigUInt64LE(offset)));
        break;
      case "INT64":
        out.push(Number(data.readBigInt64LE(offset)));
        break;
      case "FP32":
        out.push(data.readFloatLE(offset));
        break;
      case "FP64":
        out.push(data.readDoubleLE(offset));
        break;
      case "FP16":
        out.push(float16BitsToNumber(data.readUInt16LE(offset)));
        break;
      case "BF16":
        out.push(bfloat16BitsToNumber(data.readUInt16LE(offset)));
        break;
    }
  }
  return out;
}

const FIXED_SIZE = DATATYPES.filter((datatype) => datatype !== "BYTES");
const INTEGERS: DataType[] = ["UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"];
const FLOATS: DataType[] = ["FP16", "BF16", "FP32", "FP64"];

describe("generated input data", () => {
  it.each(FIXED_SIZE)("%s: zero data is all zero bytes of the right size", (datatype) => {
    const data = generateTensorData(datatype, 12, "zero");
    expect(data.length).toBe(12 * elementByteSize(datatype)!);
    expect(data.every((byte) => byte === 0)).toBe(true);
  });

  it.each(INTEGERS)("%s: random integers lie in [0, RANDOM_INT_MAX] and vary", (datatype) => {
    const decoded = values(datatype, generateTensorData(datatype, 500, "random", seeded(3)));
    expect(decoded).toHaveLength(500);
    expect(decoded.every((v) => Number.isInteger(v) && v >= 0 && v <= RANDOM_INT_MAX)).toBe(true);
    expect(new Set(decoded).size).toBeGreaterThan(50);
  });

  it.each(FLOATS)("%s: random floats lie in [0, 1) and vary", (datatype) => {
    const decoded = values(datatype, generateTensorData(datatype, 500, "random", seeded(5)));
    expect(decoded).toHaveLength(500);
    expect(decoded.every((v) => Number.isFinite(v) && v >= 0 && v < 1)).toBe(true);
    expect(new Set(decoded).size).toBeGreaterThan(50);
  });

  it("BOOL: random bytes are 0 or 1, both present", () => {
    const decoded = values("BOOL", generateTensorData("BOOL", 200, "random", seeded(7)));
    expect(new Set(decoded)).toEqual(new Set([0, 1]));
  });

  it("BYTES: length-prefixed strings, random [a-z0-9] or '0' for zero", () => {
    const random = decodeBytesElements(generateTensorData("BYTES", 3, "random", seeded(9))).map(String);
    expect(random).toHaveLength(3);
    for (const text of random) expect(text).toMatch(new RegExp(`^[a-z0-9]{${RANDOM_STRING_LENGTH}}$`));
    expect(decodeBytesElements(generateTensorData("BYTES", 2, "zero")).map(String)).toEqual(["0", "0"]);
  });

  it("is reproducible with the same random source", () => {
    expect(generateTensorData("FP32", 16, "random", seeded(11))).toEqual(
      generateTensorData("FP32", 16, "random", seeded(11)),
    );
  });

  it("keeps random half and bfloat16 data below 1 (values near 1 would round up to it)", () => {
    const nearOne = () => 0.99999;
    expect(float16BitsToNumber(generateTensorData("FP16", 1, "random", nearOne).readUInt16LE(0))).toBeLessThan(1);
    expect(bfloat16BitsToNumber(generateTensorData("BF16", 1, "random", nearOne).readUInt16LE(0))).toBeLessThan(1);
    expect(float16BitsToNumber(generateTensorData("FP16", 1, "random", () => 0.5).readUInt16LE(0))).toBe(0.5);
  });
});

const ADD_SUB = [
  { name: "INPUT0", datatype: "FP32", shape: [-1, 16] },
  { name: "INPUT1", datatype: "FP32", shape: [-1, 16] },
];

describe("input specs from model metadata", () => {
  it("splits off the batch dimension of a batching model and applies --batch-size", () => {
    const specs = resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 4, shapes: {} });
    expect(specs).toEqual([
      { name: "INPUT0", datatype: "FP32", dims: [16], batched: true },
      { name: "INPUT1", datatype: "FP32", dims: [16], batched: true },
    ]);
    const [set] = prepareInputSets(specs, 4, { kind: "zero" });
    expect(set!.map((input) => [input.name, input.shape, input.data.length])).toEqual([
      ["INPUT0", [4, 16], 256],
      ["INPUT1", [4, 16], 256],
    ]);
  });

  it("keeps every dim of a non-batching model and fills variable dims from --shape", () => {
    const silero = [
      { name: "input", datatype: "FP32", shape: [-1, -1] },
      { name: "state", datatype: "FP32", shape: [2, -1, 128] },
      { name: "sr", datatype: "INT64", shape: [] },
    ];
    const specs = resolveInputSpecs(silero, {
      maxBatchSize: 0,
      batchSize: 1,
      shapes: { input: [1, 512], state: [2, 1, 128] },
    });
    const [set] = prepareInputSets(specs, 1, { kind: "random" }, seeded());
    expect(set!.map((input) => [input.name, input.datatype, input.shape, input.data.length])).toEqual([
      ["input", "FP32", [1, 512], 2048],
      ["state", "FP32", [2, 1, 128], 1024],
      ["sr", "INT64", [], 8],
    ]);
  });

  it("refuses what does not fit the model, naming the input and the fix", () => {
    const bytes = [{ name: "INPUT0", datatype: "BYTES", shape: [-1, -1] }];
    const specs = resolveInputSpecs(bytes, { maxBatchSize: 4, batchSize: 1, shapes: {} });
    expect(() => prepareInputSets(specs, 1, { kind: "random" })).toThrow(
      /input 'INPUT0' has variable shape \[-1\].*--shape INPUT0:N/,
    );
    expect(() => resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 9, shapes: {} })).toThrow(
      /exceeds the model's max_batch_size 8/,
    );
    expect(() => resolveInputSpecs(ADD_SUB, { maxBatchSize: 0, batchSize: 2, shapes: {} })).toThrow(/does not batch/);
    expect(() => resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 1, shapes: { NOPE: [1] } })).toThrow(
      /input 'NOPE', which the model does not have \(inputs: INPUT0, INPUT1\)/,
    );
    expect(() => resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 1, shapes: { INPUT0: [8] } })).toThrow(
      /conflicts with the input's fixed shape/,
    );
    expect(() => resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 1, shapes: { INPUT0: [1, 16] } })).toThrow(
      /has 2 dims/,
    );
    expect(() =>
      resolveInputSpecs([{ name: "x", datatype: "FP8", shape: [1] }], { maxBatchSize: 0, batchSize: 1, shapes: {} }),
    ).toThrow(/datatype 'FP8'/);
  });
});

describe("--input-data files (perf_analyzer's JSON format)", () => {
  const specs = resolveInputSpecs(ADD_SUB, { maxBatchSize: 8, batchSize: 2, shapes: {} });
  const row = (start: number) => Array.from({ length: 16 }, (_, i) => start + i);

  it("builds one request per entry from arrays, {content, shape} and {b64}, repeating data across the batch", () => {
    const b64 = Buffer.from(new Float32Array(row(100)).buffer).toString("base64");
    const sets = prepareInputSets(specs, 2, {
      kind: "file",
      path: "data.json",
      json: {
        data: [
          { INPUT0: row(0), INPUT1: { content: [row(16)], shape: [16] } },
          { INPUT0: { b64 }, INPUT1: row(32) },
        ],
      },
    });
    expect(sets).toHaveLength(2);
    const [first, second] = sets;
    expect(first![0]!.shape).toEqual([2, 16]);
    expect(values("FP32", first![0]!.data)).toEqual([...row(0), ...row(0)]);
    expect(values("FP32", first![1]!.data)).toEqual([...row(16), ...row(16)]);
    expect(values("FP32", second![0]!.data)).toEqual([...row(100), ...row(100)]);
  });

  it("takes variable dims from the entry's shape and BYTES from strings", () => {
    const bytesSpecs = resolveInputSpecs([{ name: "TEXT", datatype: "BYTES", shape: [-1, -1] }], {
      maxBatchSize: 4,
      batchSize: 1,
      shapes: {},
    });
    const [set] = prepareInputSets(bytesSpecs, 1, {
      kind: "file",
      path: "f",
      json: { data: [{ TEXT: { content: ["hi", "there"], shape: [2] } }] },
    });
    expect(set![0]!.shape).toEqual([1, 2]);
    expect(decodeBytesElements(set![0]!.data).map(String)).toEqual(["hi", "there"]);
  });

  it("reads a BYTES input's b64 as one element (an encoded image), as perf_analyzer does", () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2]);
    const imageSpecs = resolveInputSpecs([{ name: "image", datatype: "BYTES", shape: [-1, 1] }], {
      maxBatchSize: 8,
      batchSize: 2,
      shapes: {},
    });
    const [set] = prepareInputSets(imageSpecs, 2, {
      kind: "file",
      path: "photo.png",
      json: { data: [{ image: { b64: png.toString("base64") } }] },
    });
    expect(set![0]!.shape).toEqual([2, 1]);
    expect(decodeBytesElements(set![0]!.data)).toEqual([png, png]);
  });

  it("names the entry and input when the file does not fit", () => {
    const file = (json: unknown) => () => prepareInputSets(specs, 1, { kind: "file", path: "f.json", json });
    expect(file({})).toThrow(/expected \{"data": \[/);
    expect(file({ data: [{ INPUT0: row(0) }] })).toThrow(/data\[0\]\.INPUT1 is missing/);
    expect(file({ data: [{ INPUT0: [1, 2], INPUT1: row(0) }] })).toThrow(/data\[0\]\.INPUT0: .*expected 16 elements/);
    expect(file({ data: [{ INPUT0: { b64: "AAAA" }, INPUT1: row(0) }] })).toThrow(/b64 data is 3 bytes/);
    expect(file({ data: [[{ INPUT0: row(0) }]] })).toThrow(/sequence streams are not supported/);
  });
});

describe("variable dims without --shape", () => {
  const OCR = [{ name: "x", datatype: "FP32", shape: [-1, 3, 48, -1] }];

  it("fail with the flag to give when nothing fills them (the CLI, as perf_analyzer)", () => {
    const specs = resolveInputSpecs(OCR, { maxBatchSize: 8, batchSize: 1, shapes: {} });
    expect(() => prepareInputSets(specs, 1, { kind: "zero" })).toThrow(/--shape x:3,48,N/);
  });

  it("get suggested sizes with fillVariableDims; a given --shape still wins", () => {
    const filled = resolveInputSpecs(OCR, { maxBatchSize: 8, batchSize: 1, shapes: {}, fillVariableDims: true });
    expect(filled[0]).toMatchObject({ dims: [3, 48, 320], suggested: true });
    expect(prepareInputSets(filled, 1, { kind: "zero" })[0]![0]!.shape).toEqual([1, 3, 48, 320]);
    const given = resolveInputSpecs(OCR, {
      maxBatchSize: 8,
      batchSize: 1,
      shapes: { x: [3, 48, 100] },
      fillVariableDims: true,
    });
    expect(given[0]).toEqual({ name: "x", datatype: "FP32", dims: [3, 48, 100], batched: true });
  });
});

describe("--shape values", () => {
  it("parses NAME:dims, a scalar and names holding ':'", () => {
    expect(parseShapeFlag("INPUT0:1,16")).toEqual({ name: "INPUT0", dims: [1, 16] });
    expect(parseShapeFlag("sr:")).toEqual({ name: "sr", dims: [] });
    expect(parseShapeFlag("ns:x:3")).toEqual({ name: "ns:x", dims: [3] });
  });

  it.each(["INPUT0", ":1,2", "INPUT0:1,-1", "INPUT0:1,,2", "INPUT0:a"])("refuses %j", (text) => {
    expect(() => parseShapeFlag(text)).toThrow(/--shape/);
  });
});
