import type { DataType } from "@operon/protocol/datatypes";

/**
 * Writes small ONNX models (a protobuf ModelProto) for tests, with no
 * dependency: only the handful of protobuf fields a graph of plain nodes
 * needs. Reused by the gateway's system tests, so keep the signatures stable.
 *
 * Field numbers (onnx.proto): ModelProto ir_version=1 graph=7 opset_import=8;
 * OperatorSetIdProto domain=1 version=2; GraphProto node=1 name=2
 * initializer=5 input=11 output=12; NodeProto input=1 output=2 name=3
 * op_type=4; ValueInfoProto name=1 type=2; TypeProto tensor_type=1;
 * TypeProto.Tensor elem_type=1 shape=2; TensorShapeProto dim=1;
 * Dimension dim_value=1 dim_param=2.
 */

/** ONNX TensorProto.DataType numbers for Operon datatypes (BF16 = 16). */
export const ONNX_ELEM_TYPE: Readonly<Record<DataType, number>> = {
  FP32: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  BYTES: 8,
  BOOL: 9,
  FP16: 10,
  FP64: 11,
  UINT32: 12,
  UINT64: 13,
  BF16: 16,
};

/** A dimension: a size, -1 (dynamic, unnamed) or a symbolic name. */
export type OnnxDim = number | string;

export interface OnnxValueInfo {
  name: string;
  datatype: DataType;
  shape: OnnxDim[];
}

export interface OnnxNode {
  opType: string;
  inputs: string[];
  outputs: string[];
  name?: string;
}

/** A constant tensor stored in the graph (weights), raw little-endian bytes. */
export interface OnnxInitializer {
  name: string;
  datatype: DataType;
  dims: number[];
  data: Buffer;
}

export interface OnnxGraph {
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  nodes: OnnxNode[];
  initializers?: OnnxInitializer[];
  name?: string;
  /** Default 13 (Identity, Add and Sub accept every tensor type they need there). */
  opsetVersion?: number;
}

/** Serializes a graph of plain nodes (no attributes) and optional initializers into ONNX model bytes. */
export function writeOnnxModel(graph: OnnxGraph): Buffer {
  const body = new ProtoWriter();
  for (const node of graph.nodes) body.message(1, nodeProto(node));
  body.string(2, graph.name ?? "operon_test_graph");
  // TensorProto: dims=1, data_type=2, name=8, raw_data=9.
  for (const init of graph.initializers ?? []) {
    const tensor = new ProtoWriter();
    for (const dim of init.dims) tensor.varint(1, dim);
    tensor.varint(2, ONNX_ELEM_TYPE[init.datatype]).string(8, init.name).bytes(9, init.data);
    body.message(5, tensor);
  }
  for (const input of graph.inputs) body.message(11, valueInfoProto(input));
  for (const output of graph.outputs) body.message(12, valueInfoProto(output));

  const opset = new ProtoWriter().string(1, "").varint(2, graph.opsetVersion ?? 13);
  return new ProtoWriter().varint(1, 8).message(7, body).message(8, opset).finish();
}

/** One input INPUT0 copied to one output OUTPUT0 (names overridable). */
export function writeIdentityModel(options: {
  datatype: DataType;
  shape: OnnxDim[];
  inputName?: string;
  outputName?: string;
}): Buffer {
  const input = options.inputName ?? "INPUT0";
  const output = options.outputName ?? "OUTPUT0";
  return writeOnnxModel({
    name: "identity",
    inputs: [{ name: input, datatype: options.datatype, shape: options.shape }],
    outputs: [{ name: output, datatype: options.datatype, shape: options.shape }],
    nodes: [{ opType: "Identity", inputs: [input], outputs: [output], name: "identity" }],
  });
}

/** Triton's "simple" model: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (numeric datatypes). */
export function writeAddSubModel(options: { datatype: DataType; shape: OnnxDim[] }): Buffer {
  const value = (name: string): OnnxValueInfo => ({ name, datatype: options.datatype, shape: options.shape });
  return writeOnnxModel({
    name: "add_sub",
    inputs: [value("INPUT0"), value("INPUT1")],
    outputs: [value("OUTPUT0"), value("OUTPUT1")],
    nodes: [
      { opType: "Add", inputs: ["INPUT0", "INPUT1"], outputs: ["OUTPUT0"], name: "add" },
      { opType: "Sub", inputs: ["INPUT0", "INPUT1"], outputs: ["OUTPUT1"], name: "sub" },
    ],
  });
}

/**
 * A multi-layer perceptron `input` FP32 [N, sizes[0]] → `output` FP32
 * [N, sizes.at(-1)]: MatMul + Add per layer, Relu between layers. Weights are
 * deterministic pseudo-random values from `seed`, so the bytes are stable.
 */
export function writeMlpModel(options: { sizes: number[]; seed?: number }): Buffer {
  const { sizes } = options;
  let state = options.seed ?? 1;
  const random = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
  const floats = (count: number, scale: number): Buffer => {
    const values = new Float32Array(count);
    for (let i = 0; i < count; i += 1) values[i] = random() * scale;
    return Buffer.from(values.buffer);
  };
  const nodes: OnnxNode[] = [];
  const initializers: OnnxInitializer[] = [];
  let current = "input";
  for (let layer = 0; layer + 1 < sizes.length; layer += 1) {
    const [inSize, outSize] = [sizes[layer]!, sizes[layer + 1]!];
    initializers.push({
      name: `w${layer}`,
      datatype: "FP32",
      dims: [inSize, outSize],
      data: floats(inSize * outSize, 2 / Math.sqrt(inSize)),
    });
    initializers.push({ name: `b${layer}`, datatype: "FP32", dims: [outSize], data: floats(outSize, 0.1) });
    const last = layer + 2 === sizes.length;
    nodes.push({ opType: "MatMul", inputs: [current, `w${layer}`], outputs: [`mm${layer}`], name: `matmul${layer}` });
    nodes.push({
      opType: "Add",
      inputs: [`mm${layer}`, `b${layer}`],
      outputs: [last ? "output" : `add${layer}`],
      name: `add${layer}`,
    });
    if (!last) nodes.push({ opType: "Relu", inputs: [`add${layer}`], outputs: [`relu${layer}`], name: `relu${layer}` });
    current = last ? "output" : `relu${layer}`;
  }
  return writeOnnxModel({
    name: "mlp",
    inputs: [{ name: "input", datatype: "FP32", shape: ["batch", sizes[0]!] }],
    outputs: [{ name: "output", datatype: "FP32", shape: ["batch", sizes[sizes.length - 1]!] }],
    nodes,
    initializers,
  });
}

function nodeProto(node: OnnxNode): ProtoWriter {
  const writer = new ProtoWriter();
  for (const input of node.inputs) writer.string(1, input);
  for (const output of node.outputs) writer.string(2, output);
  if (node.name !== undefined) writer.string(3, node.name);
  return writer.string(4, node.opType);
}

function valueInfoProto(value: OnnxValueInfo): ProtoWriter {
  const shape = new ProtoWriter();
  for (const dim of value.shape) {
    const dimension = new ProtoWriter();
    if (typeof dim === "string") dimension.string(2, dim);
    else if (dim >= 0) dimension.varint(1, dim);
    // -1: a Dimension with neither field set is an unknown (dynamic) size.
    shape.message(1, dimension);
  }
  const tensorType = new ProtoWriter().varint(1, ONNX_ELEM_TYPE[value.datatype]).message(2, shape);
  const type = new ProtoWriter().message(1, tensorType);
  return new ProtoWriter().string(1, value.name).message(2, type);
}

/** Minimal protobuf encoder: varint and length-delimited fields only. */
class ProtoWriter {
  private readonly parts: Buffer[] = [];

  varint(field: number, value: number): this {
    this.parts.push(encodeVarint(field * 8), encodeVarint(value));
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value, "utf8"));
  }

  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  bytes(field: number, value: Buffer): this {
    this.parts.push(encodeVarint(field * 8 + 2), encodeVarint(value.length), value);
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function encodeVarint(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint out of range: ${value}`);
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
