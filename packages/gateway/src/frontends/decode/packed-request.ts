import type { InferRequest } from "@operon/protocol/inference";
import { type ThreadTensor, packTensors, unpackTensors } from "@operon/protocol/thread-wire";

/**
 * An InferRequest as it crosses between threads: its input bytes in one
 * ArrayBuffer (to be transferred, not cloned: Buffers from Node's shared
 * pool must never be transferred), everything else structured-cloned.
 */
export interface PackedInferRequest {
  request: Omit<InferRequest, "inputs" | "signal">;
  buffer: ArrayBuffer;
  inputs: ThreadTensor[];
  /** Per input, its parameters (they do not travel in ThreadTensor). */
  inputParameters: Array<InferRequest["inputs"][number]["parameters"]>;
}

export function packInferRequest(request: InferRequest): PackedInferRequest {
  const { inputs, signal: _signal, ...rest } = request;
  const packed = packTensors(inputs);
  return {
    request: rest,
    buffer: packed.buffer,
    inputs: packed.tensors,
    inputParameters: inputs.map((input) => input.parameters),
  };
}

export function unpackInferRequest(packed: PackedInferRequest): InferRequest {
  const tensors = unpackTensors(packed.buffer, packed.inputs);
  const inputs = tensors.map((tensor, i) => {
    const parameters = packed.inputParameters[i];
    return parameters === undefined ? tensor : { ...tensor, parameters };
  });
  return { ...packed.request, inputs } as InferRequest;
}
