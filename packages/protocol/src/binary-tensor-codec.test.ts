import { describe, expect, it } from "vitest";
import {
  assignBinaryChunks,
  encodeInferResponseBody,
  parseInferenceHeaderLength,
  rawBinaryInput,
  splitBinaryBody,
} from "./binary-tensor-codec.js";
import { OperonError } from "./errors.js";
import type { InferResponse } from "./inference.js";
import { encodeBytesElements } from "./tensor.js";

function errorOf(fn: () => unknown): OperonError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return error as OperonError;
  }
  throw new Error("expected an OperonError");
}

const fp32 = (...values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);

describe("Inference-Header-Content-Length", () => {
  it("parses absent, zero and positive values", () => {
    expect(parseInferenceHeaderLength(undefined)).toBeUndefined();
    expect(parseInferenceHeaderLength("0")).toBe(0);
    expect(parseInferenceHeaderLength(" 125 ")).toBe(125);
  });

  it.each(["-1", "1.5", "abc", "", "99999999999999999999"])("rejects %j", (value) => {
    expect(errorOf(() => parseInferenceHeaderLength(value)).message).toContain(
      "Inference-Header-Content-Length must be a non-negative integer",
    );
  });

  it("splits a body into header and binary views", () => {
    const body = Buffer.from('{"a":1}\x01\x02', "latin1");
    const { header, binary } = splitBinaryBody(body, 7);
    expect(header.toString()).toBe('{"a":1}');
    expect([...binary]).toEqual([1, 2]);
    expect(binary.buffer).toBe(body.buffer);
  });

  it("rejects a header length past the body", () => {
    expect(errorOf(() => splitBinaryBody(Buffer.alloc(10), 11)).message).toBe(
      "Inference-Header-Content-Length 11 exceeds the request body length 10",
    );
  });
});

describe("assignBinaryChunks", () => {
  it("hands out slices in JSON order, skipping JSON-data inputs, without copying", () => {
    const binary = Buffer.from([1, 2, 3, 4, 5, 6]);
    const chunks = assignBinaryChunks(
      [
        { name: "a", binaryDataSize: 2 },
        { name: "json", binaryDataSize: undefined },
        { name: "empty", binaryDataSize: 0 },
        { name: "b", binaryDataSize: 4 },
      ],
      binary,
    );
    expect(chunks.map((chunk) => (chunk === undefined ? undefined : [...chunk]))).toEqual([
      [1, 2],
      undefined,
      [],
      [3, 4, 5, 6],
    ]);
    expect(chunks[3]!.buffer).toBe(binary.buffer);
  });

  it("names the input whose size runs past the data", () => {
    const error = errorOf(() =>
      assignBinaryChunks(
        [
          { name: "a", binaryDataSize: 4 },
          { name: "b", binaryDataSize: 8 },
        ],
        Buffer.alloc(10),
      ),
    );
    expect(error.message).toBe("input 'b': binary_data_size is 8 but only 6 bytes of binary data are left");
  });

  it("names the last binary input when bytes are left over", () => {
    expect(errorOf(() => assignBinaryChunks([{ name: "a", binaryDataSize: 4 }], Buffer.alloc(7))).message).toBe(
      "3 unexpected bytes of binary data after input 'a', the last input with binary_data_size",
    );
    expect(errorOf(() => assignBinaryChunks([{ name: "a", binaryDataSize: undefined }], Buffer.alloc(2))).message).toBe(
      "the request has 2 bytes of binary data but no input has a binary_data_size parameter",
    );
  });
});

describe("rawBinaryInput", () => {
  it("uses the given shape and checks the body size against it", () => {
    const body = fp32(1, 2, 3);
    expect(rawBinaryInput(body, { name: "in", datatype: "FP32", shape: [1, 3] })).toEqual({
      name: "in",
      datatype: "FP32",
      shape: [1, 3],
      data: body,
    });
    expect(errorOf(() => rawBinaryInput(fp32(1, 2), { name: "in", datatype: "FP32", shape: [1, 3] })).message).toBe(
      "input 'in': expected 12 bytes for shape [1,3] of FP32, got 8",
    );
  });

  it("resolves one variable dimension from the body size", () => {
    expect(rawBinaryInput(fp32(1, 2, 3, 4, 5, 6), { name: "in", datatype: "FP32", shape: [1, -1, 3] }).shape).toEqual([
      1, 2, 3,
    ]);
    expect(
      rawBinaryInput(encodeBytesElements(["a", "bc"]), { name: "s", datatype: "BYTES", shape: [1, -1] }).shape,
    ).toEqual([1, 2]);
    expect(rawBinaryInput(Buffer.alloc(0), { name: "in", datatype: "FP32", shape: [-1, 0] }).shape).toEqual([0, 0]);
  });

  it("rejects sizes that do not fit and shapes it cannot resolve", () => {
    expect(
      errorOf(() => rawBinaryInput(fp32(1, 2, 3, 4), { name: "in", datatype: "FP32", shape: [1, -1, 3] })).message,
    ).toBe("raw binary request: 4 elements do not fit shape [1,-1,3] of input 'in'");
    expect(errorOf(() => rawBinaryInput(Buffer.alloc(6), { name: "in", datatype: "FP32", shape: [-1] })).message).toBe(
      "raw binary request: 6 bytes is not a whole number of FP32 elements for input 'in'",
    );
    expect(
      errorOf(() => rawBinaryInput(Buffer.alloc(8), { name: "in", datatype: "FP32", shape: [-1, -1] })).message,
    ).toContain("has shape [-1,-1] with 2 variable dimensions; send a JSON header to give the shape");
  });
});

describe("encodeInferResponseBody", () => {
  const response: InferResponse = {
    modelName: "m",
    modelVersion: "1",
    id: "req-7",
    outputs: [
      { name: "sum", datatype: "FP32", shape: [2], data: fp32(1.5, 2) },
      { name: "label", datatype: "BYTES", shape: [1], data: encodeBytesElements(["cat"]) },
    ],
  };

  it("writes pure JSON by default", () => {
    const encoded = encodeInferResponseBody(response);
    expect(encoded.headerLength).toBeUndefined();
    expect(JSON.parse(encoded.body as string)).toEqual({
      model_name: "m",
      model_version: "1",
      id: "req-7",
      outputs: [
        { name: "sum", datatype: "FP32", shape: [2], data: [1.5, 2] },
        { name: "label", datatype: "BYTES", shape: [1], data: ["cat"] },
      ],
    });
  });

  it("sends every output as binary with binary_data_output, the bytes themselves following the JSON", () => {
    const encoded = encodeInferResponseBody(response, { binaryDataOutput: true });
    const [json, ...chunks] = encoded.body as Buffer[];
    expect(encoded.headerLength).toBe(json!.length);
    expect(JSON.parse(json!.toString()).outputs).toEqual([
      { name: "sum", datatype: "FP32", shape: [2], parameters: { binary_data_size: 8 } },
      { name: "label", datatype: "BYTES", shape: [1], parameters: { binary_data_size: 7 } },
    ]);
    expect(chunks[0]).toBe(response.outputs[0]!.data);
    expect(chunks[1]).toBe(response.outputs[1]!.data);
  });

  it("lets per-output binary_data override the request default, both ways", () => {
    const mixed = encodeInferResponseBody(response, {
      binaryDataOutput: true,
      outputs: [{ name: "sum", parameters: { binary_data: false } }, { name: "label" }],
    });
    const [json, ...chunks] = mixed.body as Buffer[];
    const outputs = JSON.parse(json!.toString()).outputs;
    expect(outputs[0]).toEqual({ name: "sum", datatype: "FP32", shape: [2], data: [1.5, 2] });
    expect(outputs[1].parameters).toEqual({ binary_data_size: 7 });
    expect(chunks).toHaveLength(1);

    const one = encodeInferResponseBody(response, {
      outputs: [{ name: "label", parameters: { binary_data: true } }, { name: "sum" }],
    });
    expect(one.headerLength).toBeDefined();
    expect((one.body as Buffer[]).slice(1)).toEqual([response.outputs[1]!.data]);
  });

  it("sends only the requested outputs when some are named", () => {
    const encoded = encodeInferResponseBody(response, { outputs: [{ name: "label" }] });
    expect(JSON.parse(encoded.body as string).outputs.map((o: { name: string }) => o.name)).toEqual(["label"]);
  });

  it("writes 64-bit integers and bigint parameters without losing digits", () => {
    const data = Buffer.alloc(8);
    data.writeBigInt64LE(-(2n ** 63n));
    const encoded = encodeInferResponseBody({
      modelName: "m",
      modelVersion: "2",
      parameters: { sequence_id: 2n ** 60n, small: 3n, flag: true },
      outputs: [{ name: "big", datatype: "INT64", shape: [1], data }],
    });
    const text = encoded.body as string;
    expect(text).toContain('"data":[-9223372036854775808]');
    expect(JSON.parse(text).parameters).toEqual({ sequence_id: "1152921504606846976", small: 3, flag: true });
    expect(JSON.parse(text)).not.toHaveProperty("id");
  });
});
