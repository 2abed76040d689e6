import { randomFillSync } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type DataType, elementByteSize, elementCount, fromConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { assertTensorByteSize, type Tensor } from "@operon/protocol/tensor";
import type { ModelConfigJson, ModelWarmupInputJson } from "@operon/model-config/model-config-types";
import type { WarmupSample } from "../instances/model-warmup.js";
import { confinedPath } from "./confined-path.js";

/**
 * Builds a config's model_warmup samples as tensors, once per load (the
 * instances run them: ../instances/model-warmup.ts). Hostile samples fail
 * the load clearly: files outside the model's folder, shapes too large.
 */
/**
 * The largest tensor one warmup input may make. The config may come with a
 * load request (anyone with model control): dims of [1e9] must fail the
 * load clearly, not exhaust the server's memory.
 */
export const MAX_WARMUP_INPUT_BYTES = 64 * 1024 * 1024;

/** The folder, inside the model's folder, that input_data_file names files in (Triton's layout). */
export const WARMUP_FOLDER = "warmup";

/**
 * The config's model_warmup as ready tensors. `modelDir` is the model's
 * folder; `linksMayLeave` as for confinedPath (true only for the operator's
 * own repository). Throws INVALID_ARG naming the sample and input.
 */
export async function buildWarmupSamples(
  modelName: string,
  config: ModelConfigJson,
  modelDir: string,
  linksMayLeave: boolean,
): Promise<WarmupSample[]> {
  const batching = (config.max_batch_size ?? 0) > 0;
  const samples: WarmupSample[] = [];
  for (const [index, sample] of (config.model_warmup ?? []).entries()) {
    const name = sample.name || `sample ${index}`;
    const where = `model '${modelName}': warmup sample '${name}'`;
    const batchSize = sample.batch_size ?? 1;
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new OperonError("INVALID_ARG", `${where}: batch_size must be a positive integer, got ${batchSize}`);
    const count = sample.count ?? 0;
    if (!Number.isInteger(count) || count < 0 || count > 1000)
      throw new OperonError("INVALID_ARG", `${where}: count must be an integer in [0, 1000], got ${count}`);
    const entries = Object.entries(sample.inputs ?? {});
    if (entries.length === 0) throw new OperonError("INVALID_ARG", `${where}: has no inputs`);
    const inputs: Tensor[] = [];
    for (const [inputName, input] of entries) {
      inputs.push(
        await warmupTensor(`${where}, input '${inputName}'`, inputName, input, batching ? batchSize : undefined, {
          modelDir,
          linksMayLeave,
        }),
      );
    }
    samples.push({ name, inputs, count: Math.max(count, 1) });
  }
  return samples;
}

async function warmupTensor(
  where: string,
  name: string,
  input: ModelWarmupInputJson,
  batchSize: number | undefined,
  files: { modelDir: string; linksMayLeave: boolean },
): Promise<Tensor> {
  const datatype = fromConfigDataType(input.data_type ?? "TYPE_INVALID");
  if (datatype === undefined)
    throw new OperonError("INVALID_ARG", `${where}: data_type '${input.data_type ?? ""}' is not a tensor type`);
  const dims = input.dims ?? [];
  if (!dims.every((dim) => Number.isInteger(dim) && dim >= 0))
    throw new OperonError("INVALID_ARG", `${where}: dims must be non-negative integers (no -1), got [${dims}]`);
  const shape = batchSize === undefined ? [...dims] : [batchSize, ...dims];
  const count = elementCount(shape);
  const kinds = [input.zero_data === true, input.random_data === true, Boolean(input.input_data_file)];
  if (kinds.filter(Boolean).length !== 1)
    throw new OperonError(
      "INVALID_ARG",
      `${where}: exactly one of zero_data, random_data and input_data_file must be set`,
    );
  const size = elementByteSize(datatype);
  // BYTES: zero/random data are empty strings (4-byte length 0 each), as Triton's are.
  const bytes = size === undefined ? count * 4 : count * size;
  if (bytes > MAX_WARMUP_INPUT_BYTES)
    throw new OperonError(
      "INVALID_ARG",
      `${where}: shape [${shape}] of ${datatype} is ${bytes} bytes, more than the ${MAX_WARMUP_INPUT_BYTES} a warmup input may have`,
    );
  if (input.input_data_file) return fileTensor(where, name, datatype, shape, input.input_data_file, files);
  const data = Buffer.alloc(bytes);
  if (input.random_data === true && size !== undefined) randomFill(datatype, data);
  return { name, datatype, shape, data };
}

/** Random bytes, except for types where random bits are not a sane value (floats: NaN; BOOL: not 0/1). */
function randomFill(datatype: DataType, data: Buffer): void {
  if (datatype === "FP32" || datatype === "FP64") {
    const values = datatype === "FP32" ? new Float32Array(data.buffer, data.byteOffset, data.length / 4) : undefined;
    if (values !== undefined) for (let i = 0; i < values.length; i += 1) values[i] = Math.random();
    else for (let i = 0; i < data.length / 8; i += 1) data.writeDoubleLE(Math.random(), i * 8);
    return;
  }
  if (datatype === "BOOL") {
    for (let i = 0; i < data.length; i += 1) data[i] = Math.random() < 0.5 ? 0 : 1;
    return;
  }
  if (datatype === "FP16" || datatype === "BF16") return; // zeros: random halves are often NaN or Inf
  randomFillSync(data);
}

async function fileTensor(
  where: string,
  name: string,
  datatype: DataType,
  shape: number[],
  file: string,
  files: { modelDir: string; linksMayLeave: boolean },
): Promise<Tensor> {
  const folder = join(files.modelDir, WARMUP_FOLDER);
  const path = await confinedPath(files.modelDir, folder, file, `${where}: input_data_file`, {
    linksMayLeave: files.linksMayLeave,
  });
  const info = await stat(path).catch(() => undefined);
  if (info === undefined || !info.isFile())
    throw new OperonError("INVALID_ARG", `${where}: input_data_file '${file}' not found in ${WARMUP_FOLDER}/`);
  if (info.size > MAX_WARMUP_INPUT_BYTES)
    throw new OperonError(
      "INVALID_ARG",
      `${where}: input_data_file '${file}' is ${info.size} bytes, more than the ${MAX_WARMUP_INPUT_BYTES} a warmup input may have`,
    );
  const data = await readFile(path);
  const tensor: Tensor = { name, datatype, shape, data };
  try {
    assertTensorByteSize(tensor);
  } catch (error) {
    throw new OperonError(
      "INVALID_ARG",
      `${where}: input_data_file '${file}' does not fit the sample's shape: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return tensor;
}
