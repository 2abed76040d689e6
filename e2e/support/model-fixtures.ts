import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeAddSubModel, writeIdentityModel } from "@operon/testing/onnx-model-writer";
import type { DataType } from "@operon/protocol/datatypes";

/** Writes `<repo>/<name>/<version>/model.onnx` (+ config.pbtxt when given) and returns the model folder. */
export function writeModel(
  repository: string,
  name: string,
  model: Buffer,
  options: { version?: number; config?: string } = {},
): string {
  const modelDir = join(repository, name);
  mkdirSync(join(modelDir, String(options.version ?? 1)), { recursive: true });
  writeFileSync(join(modelDir, String(options.version ?? 1), "model.onnx"), model);
  if (options.config !== undefined) writeFileSync(join(modelDir, "config.pbtxt"), options.config);
  return modelDir;
}

/** An Identity model INPUT0 -> OUTPUT0 of one datatype with a dynamic batch dimension. */
export function identityModel(datatype: DataType, dims: number[] = [4]): Buffer {
  return writeIdentityModel({ datatype, shape: [-1, ...dims], inputName: "INPUT0", outputName: "OUTPUT0" });
}

export function addSubModel(): Buffer {
  return writeAddSubModel({ datatype: "FP32", shape: [-1, 16] });
}

export const ADD_SUB_CONFIG = (name = "add_sub", extra = ""): string => `
name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
  { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] }
]
${extra}
`;

/** Config of identityModel("FP32") with its default dims [4]; `extra` is appended (instance_group, version_policy…). */
export const IDENTITY_CONFIG = (name: string, extra = ""): string => `
name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 4 ] } ]
${extra}
`;
