import { readFile, realpath } from "node:fs/promises";
import path from "node:path";
import { type DataType, fromConfigDataType } from "@operon/protocol/datatypes";
import type {
  ExecuteContext,
  InitializeArgs,
  TensorLike,
  TypedRequest,
  TypedResponse,
  TypedTensor,
} from "@operon/backend-api/typescript-model-api";
import type { PlanTensor } from "./pipeline-plan.js";
import { StepPipeline } from "./step-pipeline.js";
import {
  allocate,
  elementCount,
  type NativeKernels,
  type NumericArray,
  type NumericDataType,
  StepInputError,
  type StepTensor,
} from "./step-tensor.js";

/**
 * The model class behind the `operon_steps` backend: a TypeScript-backend
 * model (so it runs in a worker process, with the TypeScript backend's
 * execute timeout and isolation) whose code is the built-in step library
 * and whose "weights" are a pipeline of steps, `<version>/steps.json` (see
 * step-pipeline.ts), or the config parameter `steps` (the same JSON, inline).
 *
 * Batching: with max_batch_size > 0 each request's inputs carry a batch
 * dimension; the pipeline runs once per batch element (steps see single
 * samples, so images of different sizes can share a batch) and the
 * elements' outputs are stacked again, which needs them to agree in shape.
 * A problem with one request's data fails that request with INVALID_ARG
 * naming the element, the step and the problem; the others are answered.
 */
export const STEPS_FILE = "steps.json";

/** Set once per worker process by the worker, before any model of this module loads (registry.ts). */
let nativeKernels: NativeKernels | undefined;

/** The worker's native kernels for the steps that use them (see NativeKernels); undefined: none. */
export function useNativeKernels(kernels: NativeKernels | undefined): void {
  nativeKernels = kernels;
}

interface ConfigTensor {
  name?: unknown;
  data_type?: unknown;
  dims?: unknown;
}

export default class StepPipelineModel {
  private pipeline: StepPipeline | undefined;
  private maxBatchSize = 0;
  private outputTypes = new Map<string, DataType>();
  /** Declared dims of each output (without the batch dimension); -1 matches any size. */
  private outputDims = new Map<string, number[]>();

  async initialize(args: InitializeArgs): Promise<void> {
    const config = args.config as { input?: ConfigTensor[]; output?: ConfigTensor[]; max_batch_size?: unknown };
    this.maxBatchSize = typeof config.max_batch_size === "number" ? config.max_batch_size : 0;
    const tensors = (list: ConfigTensor[] | undefined): PlanTensor[] =>
      (list ?? [])
        .filter((tensor) => typeof tensor.name === "string" && tensor.name !== "")
        .map((tensor) => {
          const datatype = typeof tensor.data_type === "string" ? fromConfigDataType(tensor.data_type) : undefined;
          return { name: tensor.name as string, ...(datatype !== undefined ? { datatype } : {}) };
        });
    for (const output of config.output ?? []) {
      const datatype = typeof output.data_type === "string" ? fromConfigDataType(output.data_type) : undefined;
      if (datatype !== undefined) this.outputTypes.set(String(output.name), datatype);
      if (Array.isArray(output.dims)) this.outputDims.set(String(output.name), output.dims.map(Number));
    }
    const modelDir = await realpath(args.modelDir);
    const inline = args.parameters["steps"];
    const source =
      inline !== undefined && inline.trim() !== ""
        ? "config parameter 'steps'"
        : path.join(args.modelVersion, STEPS_FILE);
    let text: string;
    try {
      text =
        inline !== undefined && inline.trim() !== ""
          ? inline
          : await readFile(path.join(modelDir, args.modelVersion, STEPS_FILE), "utf8");
    } catch (error) {
      throw new StepInputError(`model '${args.modelName}': cannot read ${source}: ${(error as Error).message}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new StepInputError(`model '${args.modelName}': ${source} is not JSON: ${(error as Error).message}`);
    }
    try {
      this.pipeline = await StepPipeline.create(
        raw,
        { inputs: tensors(config.input), outputs: tensors(config.output) },
        { readFile: (relative) => readModelFile(modelDir, args.modelVersion, relative), native: nativeKernels },
      );
    } catch (error) {
      if (error instanceof StepInputError)
        throw new StepInputError(`model '${args.modelName}', ${source}: ${error.message}`);
      throw error;
    }
  }

  async execute(requests: TypedRequest[], ctx: ExecuteContext): Promise<Array<TypedResponse | Error>> {
    return Promise.all(requests.map((request) => this.answer(request, ctx)));
  }

  private async answer(request: TypedRequest, ctx: ExecuteContext): Promise<TypedResponse | Error> {
    const pipeline = this.pipeline;
    if (pipeline === undefined) return ctx.error("UNAVAILABLE", "the step pipeline is not loaded");
    const inputs = [...request.inputs.values()];
    const batch = this.maxBatchSize > 0 ? (inputs[0]?.shape[0] ?? 0) : 1;
    for (const input of inputs) {
      if (this.maxBatchSize > 0 && input.shape[0] !== batch) {
        return ctx.error(
          "INVALID_ARG",
          `input '${input.name}' has batch size ${input.shape[0]}, other inputs ${batch}`,
        );
      }
    }
    const converted = inputs.map((input) => [input.name, fromTyped(input)] as const);
    try {
      const samples = await Promise.all(
        Array.from({ length: batch }, async (_, b) => {
          const sample = new Map<string, StepTensor>();
          for (const [name, tensor] of converted)
            sample.set(name, this.maxBatchSize > 0 ? sampleOf(tensor, b) : tensor);
          try {
            return await pipeline.run(sample);
          } catch (error) {
            if (error instanceof StepInputError && batch > 1)
              throw new StepInputError(`element ${b} of ${batch}: ${error.message}`);
            throw error;
          }
        }),
      );
      const outputs: TensorLike[] = [];
      for (const name of pipeline.outputNames) {
        if (request.requestedOutputs.length > 0 && !request.requestedOutputs.includes(name)) continue;
        const parts = samples.map((sample) => sample.get(name));
        const tensor = this.maxBatchSize > 0 ? stack(name, parts) : parts[0];
        if (tensor === undefined) throw new StepInputError(`output '${name}' was not produced`);
        const declared = this.outputTypes.get(name);
        if (declared !== undefined && declared !== tensor.datatype) {
          throw new StepInputError(
            `output '${name}' is ${tensor.datatype} but the model config declares ${declared} (add a tensor.cast step)`,
          );
        }
        const dims = this.outputDims.get(name);
        const sampleShape = this.maxBatchSize > 0 ? tensor.shape.slice(1) : tensor.shape;
        if (
          dims !== undefined &&
          (dims.length !== sampleShape.length || dims.some((dim, i) => dim !== -1 && dim !== sampleShape[i]))
        ) {
          // A pipeline that does not produce what the config promises would hand the next model the wrong tensor.
          throw new StepInputError(
            `output '${name}' has shape [${sampleShape.join(", ")}] but the model config declares dims [${dims.join(", ")}]`,
          );
        }
        outputs.push(toTensorLike(ctx, name, tensor));
      }
      return { outputs };
    } catch (error) {
      if (error instanceof StepInputError) return ctx.error("INVALID_ARG", error.message);
      throw error;
    }
  }
}

/**
 * A file a step names (labels, tokenizer.json): in the version folder when
 * it is there (files uploaded with that version), else in the model's
 * folder. A path that leaves the model's folder (through '..' or a link) is
 * refused.
 */
async function readModelFile(modelDir: string, version: string, relative: string): Promise<Buffer> {
  for (const base of [path.join(modelDir, version), modelDir]) {
    let resolved: string;
    try {
      resolved = await realpath(path.resolve(base, relative));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && base !== modelDir) continue;
      throw error;
    }
    if (!resolved.startsWith(modelDir + path.sep)) throw new Error(`'${relative}' is outside the model's folder`);
    return readFile(resolved);
  }
  throw new Error(`'${relative}' not found`);
}

function fromTyped(input: TypedTensor): StepTensor {
  const shape = [...input.shape];
  switch (input.datatype) {
    case "BYTES":
      return { datatype: "BYTES", shape, data: input.toBuffers() };
    case "FP16":
    case "BF16":
    case "FP32":
      return { datatype: "FP32", shape, data: input.toFloat32Array() };
    case "FP64":
      return { datatype: "FP64", shape, data: input.toFloat64Array() };
    case "BOOL":
    case "UINT8":
      return { datatype: input.datatype, shape, data: input.toUint8Array() };
    case "INT8":
      return { datatype: "INT8", shape, data: input.toInt8Array() };
    case "INT16":
      return { datatype: "INT16", shape, data: input.toInt16Array() };
    case "UINT16":
      return { datatype: "UINT16", shape, data: input.toUint16Array() };
    case "INT32":
      return { datatype: "INT32", shape, data: input.toInt32Array() };
    case "UINT32":
      return { datatype: "UINT32", shape, data: input.toUint32Array() };
    case "INT64":
      return { datatype: "INT64", shape, data: input.toBigInt64Array() };
    case "UINT64":
      return { datatype: "UINT64", shape, data: input.toBigUint64Array() };
  }
}

function sampleOf(tensor: StepTensor, index: number): StepTensor {
  const shape = tensor.shape.slice(1);
  const per = elementCount(shape);
  if (Array.isArray(tensor.data))
    return { datatype: tensor.datatype, shape, data: tensor.data.slice(index * per, (index + 1) * per) };
  return {
    datatype: tensor.datatype,
    shape,
    data: (tensor.data as Uint8Array).subarray(index * per, (index + 1) * per),
  };
}

function stack(name: string, parts: Array<StepTensor | undefined>): StepTensor | undefined {
  const first = parts[0];
  if (first === undefined) return undefined;
  parts.forEach((part, i) => {
    if (part === undefined) throw new StepInputError(`output '${name}' was not produced for element ${i}`);
    if (part.datatype !== first.datatype || part.shape.join(",") !== first.shape.join(",")) {
      throw new StepInputError(
        `output '${name}' of element ${i} is ${part.datatype} [${part.shape.join(", ")}] but element 0's is ${first.datatype} [${first.shape.join(", ")}]: the elements of a batch must agree (resize or pad them to one size)`,
      );
    }
  });
  const shape = [parts.length, ...first.shape];
  if (Array.isArray(first.data))
    return { datatype: first.datatype, shape, data: parts.flatMap((part) => part!.data as Buffer[]) };
  if (parts.length === 1) return { ...first, shape };
  const per = first.data.length;
  const out = allocate(first.datatype as NumericDataType, per * parts.length) as Uint8Array;
  parts.forEach((part, i) => out.set(part!.data as Uint8Array, i * per));
  return { datatype: first.datatype, shape, data: out as NumericArray };
}

function toTensorLike(ctx: ExecuteContext, name: string, tensor: StepTensor): TensorLike {
  if (Array.isArray(tensor.data)) return ctx.tensor.bytes(name, tensor.shape, tensor.data);
  return ctx.tensor.fromTypedArray(name, tensor.shape, tensor.data, tensor.datatype);
}
