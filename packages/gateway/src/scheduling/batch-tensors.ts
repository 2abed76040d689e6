import { elementByteSize, elementCount } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import { alignedOffset, allocateHandOff } from "@operon/protocol/thread-wire";

/**
 * Joining requests into one batch along the first (batch) dimension and
 * splitting the batch's outputs back. Requests in one batch have the same
 * input names and the same non-batch shapes (the scheduler guarantees it).
 * Joining copies each input once; splitting returns views, no copies.
 */

/** A key that is equal for requests whose inputs can share a batch. */
export function batchShapeKey(inputs: readonly Tensor[]): string {
  let key = "";
  for (const input of inputs) key += `${input.name}:${input.datatype}:${input.shape.slice(1).join(",")};`;
  return key;
}

/**
 * Concatenates every request's inputs; `batchSizes[i]` is request i's first
 * dimension. All the joined inputs lie in one hand-off buffer
 * (@operon/protocol/thread-wire allocateHandOff), so a thread instance
 * sends the batch as it is: one copy of the batch in all, not two.
 */
export function joinBatch(requests: ReadonlyArray<readonly Tensor[]>, batchSizes: readonly number[]): Tensor[] {
  const first = requests[0];
  if (first === undefined) throw new OperonError("INTERNAL", "cannot join an empty batch");
  if (requests.length === 1) return [...first];
  const total = batchSizes.reduce((sum, size) => sum + size, 0);
  const offsets: number[] = new Array(first.length);
  let bytes = 0;
  for (let index = 0; index < first.length; index += 1) {
    const template = first[index]!;
    bytes = alignedOffset(bytes);
    offsets[index] = bytes;
    for (const inputs of requests) {
      const input = inputs[index];
      if (input === undefined || input.name !== template.name) {
        throw new OperonError("INTERNAL", `requests in one batch disagree on input ${index} ('${template.name}')`);
      }
      bytes += input.data.length;
    }
  }
  const joined = allocateHandOff(bytes);
  return first.map((template, index) => {
    const start = offsets[index]!;
    let at = start;
    for (const inputs of requests) {
      const data = inputs[index]!.data;
      joined.set(data, at);
      at += data.length;
    }
    return {
      name: template.name,
      datatype: template.datatype,
      shape: [total, ...template.shape.slice(1)],
      data: joined.subarray(start, at),
    };
  });
}

/** Splits each batched output into one tensor per request, in order. */
export function splitBatch(outputs: readonly Tensor[], batchSizes: readonly number[]): Tensor[][] {
  const total = batchSizes.reduce((sum, size) => sum + size, 0);
  const perRequest: Tensor[][] = batchSizes.map(() => []);
  for (const output of outputs) {
    if (output.shape[0] !== total) {
      throw new OperonError(
        "INTERNAL",
        `output '${output.name}' has batch dimension ${output.shape[0] ?? "(none)"} but the batch holds ${total} items`,
      );
    }
    const itemShape = output.shape.slice(1);
    const boundaries = itemBoundaries(output, total, elementCount(itemShape));
    let item = 0;
    batchSizes.forEach((size, request) => {
      const start = boundaries[item]!;
      const end = boundaries[item + size]!;
      perRequest[request]!.push({
        name: output.name,
        datatype: output.datatype,
        shape: [size, ...itemShape],
        data: output.data.subarray(start, end),
      });
      item += size;
    });
  }
  return perRequest;
}

/** Byte offset where each batch item starts (plus the end), for fixed-size and BYTES tensors. */
function itemBoundaries(output: Tensor, items: number, elementsPerItem: number): number[] {
  const boundaries = new Array<number>(items + 1);
  const size = elementByteSize(output.datatype);
  if (size !== undefined) {
    const itemBytes = elementsPerItem * size;
    for (let i = 0; i <= items; i += 1) boundaries[i] = i * itemBytes;
    return boundaries;
  }
  let offset = 0;
  boundaries[0] = 0;
  for (let i = 1; i <= items; i += 1) {
    for (let e = 0; e < elementsPerItem; e += 1) {
      if (offset + 4 > output.data.length)
        throw new OperonError("INTERNAL", `output '${output.name}': BYTES data ends early`);
      offset += 4 + output.data.readUInt32LE(offset);
    }
    boundaries[i] = offset;
  }
  return boundaries;
}
