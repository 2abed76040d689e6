/**
 * Reads an ONNX model's signature (graph inputs and outputs: names, element
 * types, shapes) without loading the model: what the control plane needs to
 * check an uploaded file and suggest its config before any backend runs it.
 *
 * The schema is the needed part of onnx.proto, reflected with protobufjs (the
 * field numbers below are onnx.proto's). The outer levels (ModelProto,
 * GraphProto, initializers) are walked on the wire through positional reads,
 * so the weights are skipped, never read into memory: a 500 MB model costs a
 * few kilobytes of reads. Each ValueInfoProto is small and decoded by the
 * reflection.
 *
 * What counts as an input is what ONNX Runtime serves: graph inputs that are
 * not also initializers (ONNX IR >= 4 lets initializers appear among the
 * inputs as overridable defaults). Dynamic dimensions (dim_param, or neither
 * field set) read as -1; a tensor without a shape reads as shape [] (unknown
 * rank), as ONNX Runtime reports it.
 *
 * Errors: OperonError INVALID_ARG "<source>: not a valid ONNX model: ..."
 * naming what is wrong and the byte offset where it was found.
 */
import { open } from "node:fs/promises";
// protobufjs is CommonJS: only its default export exists at runtime under ESM.
import protobuf from "protobufjs";
import type { DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { IoInfo, ModelIoMetadata } from "./auto-complete.js";

/** One graph input or output. `datatype` is undefined when the ONNX type has no KServe equivalent. */
export interface OnnxTensorInfo extends IoInfo {
  /** The ONNX type as ONNX Runtime names it, e.g. "tensor(float)", "sequence", "tensor(complex64)". */
  onnxType: string;
}

export interface OnnxSignature extends ModelIoMetadata {
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
}

/** Random access to the model's bytes (a file, or a buffer in tests). */
export interface ByteSource {
  readonly size: number;
  /** Exactly `length` bytes from `position` (callers stay within `size`). */
  read(position: number, length: number): Promise<Uint8Array>;
}

// The needed part of onnx.proto (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto).
// Non-tensor value types are declared as empty messages: only their presence matters.
const ONNX_SUBSET = `
syntax = "proto2";
package onnx;
message ModelProto { optional GraphProto graph = 7; }
message GraphProto {
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated SparseTensorProto sparse_initializer = 15;
}
message TensorProto { optional string name = 8; }
message SparseTensorProto { optional TensorProto values = 1; }
message ValueInfoProto { optional string name = 1; optional TypeProto type = 2; }
message TypeProto {
  message Tensor { optional int32 elem_type = 1; optional TensorShapeProto shape = 2; }
  message Opaque {}
  oneof value {
    Tensor tensor_type = 1;
    Opaque sequence_type = 4;
    Opaque map_type = 5;
    Opaque sparse_tensor_type = 8;
    Opaque optional_type = 9;
  }
}
message TensorShapeProto {
  message Dimension {
    oneof value { int64 dim_value = 1; string dim_param = 2; }
  }
  repeated Dimension dim = 1;
}
`;

interface OnnxSchema {
  model: protobuf.Type;
  graph: protobuf.Type;
  tensor: protobuf.Type;
  sparseTensor: protobuf.Type;
  valueInfo: protobuf.Type;
}

let schema: OnnxSchema | undefined;

function onnxSchema(): OnnxSchema {
  if (schema === undefined) {
    const root = protobuf.parse(ONNX_SUBSET, { keepCase: true }).root;
    root.resolveAll();
    schema = {
      model: root.lookupType("onnx.ModelProto"),
      graph: root.lookupType("onnx.GraphProto"),
      tensor: root.lookupType("onnx.TensorProto"),
      sparseTensor: root.lookupType("onnx.SparseTensorProto"),
      valueInfo: root.lookupType("onnx.ValueInfoProto"),
    };
  }
  return schema;
}

function fieldId(type: protobuf.Type, name: string): number {
  return type.fields[name]!.id;
}

/** ONNX TensorProto.DataType -> KServe datatype, and ONNX Runtime's name for it. */
const ELEM_TYPES: Readonly<Record<number, { ort: string; datatype?: DataType }>> = {
  1: { ort: "float", datatype: "FP32" },
  2: { ort: "uint8", datatype: "UINT8" },
  3: { ort: "int8", datatype: "INT8" },
  4: { ort: "uint16", datatype: "UINT16" },
  5: { ort: "int16", datatype: "INT16" },
  6: { ort: "int32", datatype: "INT32" },
  7: { ort: "int64", datatype: "INT64" },
  8: { ort: "string", datatype: "BYTES" },
  9: { ort: "bool", datatype: "BOOL" },
  10: { ort: "float16", datatype: "FP16" },
  11: { ort: "double", datatype: "FP64" },
  12: { ort: "uint32", datatype: "UINT32" },
  13: { ort: "uint64", datatype: "UINT64" },
  14: { ort: "complex64" },
  15: { ort: "complex128" },
  16: { ort: "bfloat16", datatype: "BF16" },
  17: { ort: "float8e4m3fn" },
  18: { ort: "float8e4m3fnuz" },
  19: { ort: "float8e5m2" },
  20: { ort: "float8e5m2fnuz" },
  21: { ort: "uint4" },
  22: { ort: "int4" },
  23: { ort: "float4e2m1" },
};

/** The signature of the ONNX model in a file. */
export function readOnnxSignatureFile(path: string, source: string = path): Promise<OnnxSignature> {
  return withFileSource(path, source, (input) => readOnnxSignature(input, source));
}

/** Runs `read` over the file at `path` as a ByteSource, and closes it after. */
async function withFileSource<T>(path: string, source: string, read: (input: ByteSource) => Promise<T>): Promise<T> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    return await read({
      size,
      async read(position, length) {
        const bytes = Buffer.alloc(length);
        let done = 0;
        while (done < length) {
          const { bytesRead } = await handle.read(bytes, done, length - done, position + done);
          if (bytesRead === 0) throw new OperonError("INVALID_ARG", `${source}: the file shrank while it was read`);
          done += bytesRead;
        }
        return bytes;
      },
    });
  } finally {
    await handle.close();
  }
}

/**
 * A text file (a config.pbtxt, a Python script, a JSON export, an HTML error page saved as .onnx) decodes as
 * protobuf fields with nonsense wire types; say what it is instead of "field 13 has wire type 7" (issue 27,
 * item 10: no protobuf jargon in upload errors). ONNX files start with binary field tags and hold NUL bytes early.
 */
async function refuseText(input: ByteSource, source: string): Promise<void> {
  const head = Buffer.from(await input.read(0, Math.min(input.size, 512)));
  const text = head.toString("utf8");
  const printable = [...text].filter((char) => /[\p{L}\p{N}\p{P}\p{S}\s]/u.test(char) && char !== "\uFFFD").length;
  if (head.includes(0) || printable < [...text].length * 0.95) return;
  const start = text.trimStart().slice(0, 40).replace(/\s+/g, " ");
  throw new OperonError(
    "INVALID_ARG",
    `${source}: this is not an ONNX model file: it looks like text (it starts with "${start}"); export the model to ONNX (for example with torch.onnx.export) and upload the .onnx file`,
  );
}

/** The signature of ONNX model bytes held in memory. */
export function readOnnxSignatureBytes(bytes: Uint8Array, source: string): Promise<OnnxSignature> {
  return readOnnxSignature(
    { size: bytes.length, read: async (position, length) => bytes.subarray(position, position + length) },
    source,
  );
}

export async function readOnnxSignature(input: ByteSource, source: string): Promise<OnnxSignature> {
  const s = onnxSchema();
  const wire = new WireReader(input, source);
  if (input.size === 0) throw wire.invalid("the file is empty", 0);
  await refuseText(input, source);

  let graph: Span | undefined;
  await wire.fields({ start: 0, end: input.size }, "ModelProto", async (field) => {
    if (field.id === fieldId(s.model, "graph")) graph = wire.expectBytes(field, "ModelProto.graph");
  });
  if (graph === undefined)
    throw wire.invalid(`it has no graph (ModelProto field ${fieldId(s.model, "graph")})`, input.size);

  const initializers = new Set<string>();
  const inputs: Span[] = [];
  const outputs: Span[] = [];
  await wire.fields(graph, "GraphProto", async (field) => {
    if (field.id === fieldId(s.graph, "input")) inputs.push(wire.expectBytes(field, "GraphProto.input"));
    else if (field.id === fieldId(s.graph, "output")) outputs.push(wire.expectBytes(field, "GraphProto.output"));
    else if (field.id === fieldId(s.graph, "initializer")) {
      const name = await wire.tensorName(wire.expectBytes(field, "GraphProto.initializer"), s.tensor);
      if (name !== undefined) initializers.add(name);
    } else if (field.id === fieldId(s.graph, "sparse_initializer")) {
      const sparse = wire.expectBytes(field, "GraphProto.sparse_initializer");
      await wire.fields(sparse, "SparseTensorProto", async (inner) => {
        if (inner.id !== fieldId(s.sparseTensor, "values")) return;
        const name = await wire.tensorName(wire.expectBytes(inner, "SparseTensorProto.values"), s.tensor);
        if (name !== undefined) initializers.add(name);
      });
    }
  });
  if (outputs.length === 0) throw wire.invalid("its graph declares no outputs", graph.start);

  const decode = async (spans: Span[], kind: "input" | "output"): Promise<OnnxTensorInfo[]> => {
    const infos: OnnxTensorInfo[] = [];
    for (const [index, span] of spans.entries())
      infos.push(await wire.valueInfo(span, s.valueInfo, `graph ${kind} #${index}`));
    return infos;
  };
  const declaredInputs = await decode(inputs, "input");
  return {
    inputs: declaredInputs.filter((info) => !initializers.has(info.name)),
    outputs: await decode(outputs, "output"),
  };
}

/**
 * The operators of an ONNX model's main graph, each once, as "op_type" for the default ONNX domain or
 * "domain:op_type" for others (e.g. "com.microsoft:FusedMatMul"), sorted. Operators inside sub-graphs
 * (the bodies of If, Loop, Scan) are not listed: their parents are. The weights are skipped, as for the
 * signature. What the gateway's placement reads to tell a model whose cost follows from its input shapes
 * from one whose cost depends on the data (instances/inline-eligibility.ts).
 */
export function readOnnxOperatorsFile(path: string, source: string = path): Promise<string[]> {
  return withFileSource(path, source, (input) => readOnnxOperators(input, source));
}

// onnx.proto's field numbers: GraphProto.node, NodeProto.op_type and NodeProto.domain.
const GRAPH_NODE_FIELD = 1;
const NODE_OP_TYPE_FIELD = 4;
const NODE_DOMAIN_FIELD = 7;

export async function readOnnxOperators(input: ByteSource, source: string): Promise<string[]> {
  const s = onnxSchema();
  const wire = new WireReader(input, source);
  if (input.size === 0) throw wire.invalid("the file is empty", 0);
  let graph: Span | undefined;
  await wire.fields({ start: 0, end: input.size }, "ModelProto", async (field) => {
    if (field.id === fieldId(s.model, "graph")) graph = wire.expectBytes(field, "ModelProto.graph");
  });
  if (graph === undefined)
    throw wire.invalid(`it has no graph (ModelProto field ${fieldId(s.model, "graph")})`, input.size);
  const operators = new Set<string>();
  await wire.fields(graph, "GraphProto", async (field) => {
    if (field.id !== GRAPH_NODE_FIELD) return;
    let opType = "";
    let domain = "";
    await wire.fields(wire.expectBytes(field, "GraphProto.node"), "NodeProto", async (inner) => {
      if (inner.id === NODE_OP_TYPE_FIELD) opType = await wire.text(wire.expectBytes(inner, "NodeProto.op_type"));
      else if (inner.id === NODE_DOMAIN_FIELD) domain = await wire.text(wire.expectBytes(inner, "NodeProto.domain"));
    });
    if (opType === "") throw wire.invalid("a node of the graph has no op_type", field.at);
    operators.add(domain === "" || domain === "ai.onnx" ? opType : `${domain}:${opType}`);
  });
  return [...operators].sort();
}

/** A byte range [start, end) of the source. */
interface Span {
  start: number;
  end: number;
}

interface WireField {
  id: number;
  wireType: number;
  /** The value's bytes (for wire type 2 without the length prefix). */
  value: Span;
  /** Where the field's tag starts, for messages. */
  at: number;
}

const WINDOW_BYTES = 64 * 1024;

/**
 * Protobuf wire-format walking over a ByteSource, through one read-ahead
 * window so that walking many small fields (graph nodes) stays cheap while
 * large ones (weights) are skipped without being read.
 */
class WireReader {
  private window: Uint8Array = new Uint8Array(0);
  private windowStart = 0;

  constructor(
    private readonly input: ByteSource,
    private readonly source: string,
  ) {}

  invalid(problem: string, at: number): OperonError {
    return new OperonError("INVALID_ARG", `${this.source}: not a valid ONNX model: ${problem} (at byte ${at})`);
  }

  private async bytes(position: number, length: number): Promise<Uint8Array> {
    const offset = position - this.windowStart;
    if (offset >= 0 && offset + length <= this.window.length) return this.window.subarray(offset, offset + length);
    if (length > WINDOW_BYTES) return this.input.read(position, length);
    this.windowStart = position;
    this.window = await this.input.read(position, Math.min(WINDOW_BYTES, this.input.size - position));
    return this.window.subarray(0, length);
  }

  /** A varint that must end before `end`; values beyond 2^53 are refused (no length or tag is that large). */
  private async varint(position: number, end: number, what: string): Promise<{ value: number; next: number }> {
    const bytes = await this.bytes(position, Math.min(10, end - position));
    let value = 0;
    let scale = 1;
    for (let i = 0; i < bytes.length; i += 1) {
      const byte = bytes[i]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(value)) throw this.invalid(`${what} is out of range`, position);
        return { value, next: position + i + 1 };
      }
      scale *= 128;
    }
    throw this.invalid(`${what} is cut off or malformed`, position);
  }

  /** Calls `visit` for every field of the message in `span`, checking the wire structure. */
  async fields(span: Span, message: string, visit: (field: WireField) => Promise<void>): Promise<void> {
    let position = span.start;
    while (position < span.end) {
      const at = position;
      const tag = await this.varint(position, span.end, `a field tag of ${message}`);
      const id = Math.floor(tag.value / 8);
      const wireType = tag.value % 8;
      if (id === 0) throw this.invalid(`field number 0 in ${message}`, at);
      position = tag.next;
      let value: Span;
      switch (wireType) {
        case 0: {
          const end = (await this.varint(position, span.end, `field ${id} of ${message}`)).next;
          value = { start: position, end };
          break;
        }
        case 1:
        case 5: {
          const width = wireType === 1 ? 8 : 4;
          value = { start: position, end: position + width };
          break;
        }
        case 2: {
          const length = await this.varint(position, span.end, `the length of field ${id} of ${message}`);
          value = { start: length.next, end: length.next + length.value };
          break;
        }
        default:
          throw this.invalid(`field ${id} of ${message} has wire type ${wireType}, which ONNX does not use`, at);
      }
      if (value.end > span.end) {
        throw this.invalid(
          `field ${id} of ${message} runs past the end of its ${message === "ModelProto" ? "file" : "enclosing message"}`,
          at,
        );
      }
      await visit({ id, wireType, value, at });
      position = value.end;
    }
  }

  expectBytes(field: WireField, what: string): Span {
    if (field.wireType !== 2)
      throw this.invalid(
        `${what} (field ${field.id}) should be a message, but has wire type ${field.wireType}`,
        field.at,
      );
    return field.value;
  }

  /** A string field's value (UTF-8). */
  async text(span: Span): Promise<string> {
    return Buffer.from(await this.bytes(span.start, span.end - span.start)).toString("utf8");
  }

  /** TensorProto.name, skipping the tensor's data. */
  async tensorName(span: Span, tensor: protobuf.Type): Promise<string | undefined> {
    let name: string | undefined;
    await this.fields(span, "TensorProto", async (field) => {
      if (field.id !== fieldId(tensor, "name")) return;
      const bytes = this.expectBytes(field, "TensorProto.name");
      name = Buffer.from(await this.bytes(bytes.start, bytes.end - bytes.start)).toString("utf8");
    });
    return name;
  }

  async valueInfo(span: Span, valueInfo: protobuf.Type, what: string): Promise<OnnxTensorInfo> {
    let decoded: Record<string, unknown>;
    try {
      const bytes = await this.bytes(span.start, span.end - span.start);
      // A plain Uint8Array view: protobufjs' Buffer reader does not bounds-check strings.
      const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      decoded = valueInfo.toObject(valueInfo.decode(view), { longs: String, oneofs: true });
    } catch (error) {
      if (error instanceof OperonError) throw error;
      throw this.invalid(`${what} cannot be decoded as a ValueInfoProto (${(error as Error).message})`, span.start);
    }
    const name = typeof decoded["name"] === "string" ? decoded["name"] : "";
    if (name === "") throw this.invalid(`${what} has no name`, span.start);
    return describeType(name, decoded["type"] as Record<string, unknown> | undefined);
  }
}

function describeType(name: string, type: Record<string, unknown> | undefined): OnnxTensorInfo {
  const kind = type?.["value"];
  if (kind !== "tensor_type") {
    const onnxType = typeof kind === "string" ? kind.replace(/_type$/, "") : "undefined";
    return { name, datatype: undefined, shape: [], onnxType };
  }
  const tensor = type!["tensor_type"] as { elem_type?: number; shape?: { dim?: Array<Record<string, unknown>> } };
  const elem = ELEM_TYPES[tensor.elem_type ?? 0];
  const shape = (tensor.shape?.dim ?? []).map((dim) => {
    if (dim["value"] !== "dim_value") return -1;
    const size = Number(dim["dim_value"]);
    return Number.isSafeInteger(size) && size >= 0 ? size : -1;
  });
  return {
    name,
    datatype: elem?.datatype,
    shape,
    onnxType: `tensor(${elem?.ort ?? `elem_type ${tensor.elem_type ?? 0}`})`,
  };
}
