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
  // Set in place rather than `{ ...x, more }`: the tensors and the cloned request are this call's own, and on Node 20
  // an object spread followed by more properties costs microseconds each.
  const inputs: InferRequest["inputs"] = tensors;
  tensors.forEach((tensor, i) => {
    const parameters = packed.inputParameters[i];
    if (parameters !== undefined) (tensor as InferRequest["inputs"][number]).parameters = parameters;
  });
  const request = packed.request as InferRequest;
  request.inputs = inputs;
  return request;
}
