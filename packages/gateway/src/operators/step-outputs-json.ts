import { elementByteSize, elementCount } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { bufferToJsonText } from "@operon/protocol/json-tensor-codec";
import type { Tensor } from "@operon/protocol/tensor";
import type { StepRecord } from "./dag-executor.js";

/** Elements shown per step output; the rest is cut (see STEP_OUTPUTS_PARAMETER in operator-runner.ts). */
export const STEP_OUTPUT_MAX_ELEMENTS = 256;

/**
 * The JSON text of the `operon_step_outputs` response parameter:
 * `[{ step, outputs: [{ name, datatype, shape, data, truncated? }] }]`, one
 * entry per model step in spec order (routes and exits produce no tensors
 * and get none). `outputs` is empty for a step that did not end ok. `data`
 * is written by the same codec as the HTTP response's outputs (64-bit
 * integers with all their digits, BYTES as UTF-8 strings, NaN as null),
 * flat, cut to the first `maxElements` with `truncated: true`; `shape` is
 * the tensor's full shape.
 */
export function stepOutputsJson(
  operator: string,
  steps: readonly StepRecord[],
  maxElements = STEP_OUTPUT_MAX_ELEMENTS,
): string {
  const entries = steps
    .filter((record) => record.kind === "model")
    .map((record) => {
      const outputs = (record.outputs ?? []).map((tensor) => {
        const { head, truncated } = leadingElements(
          tensor,
          maxElements,
          `operator '${operator}' step '${record.step}'`,
        );
        // Spliced rather than JSON.stringify'd so 64-bit integers keep their digits (as binary-tensor-codec does).
        const fields = `"name":${JSON.stringify(tensor.name)},"datatype":${JSON.stringify(tensor.datatype)},"shape":${JSON.stringify(tensor.shape)}`;
        return `{${fields},"data":${bufferToJsonText(head)}${truncated ? ',"truncated":true' : ""}}`;
      });
      return `{"step":${JSON.stringify(record.step)},"outputs":[${outputs.join(",")}]}`;
    });
  return `[${entries.join(",")}]`;
}

/**
 * The first `max` elements of a tensor as a flat tensor that views the same
 * bytes (no copy, and no decoding of the elements past `max`). A tensor
 * whose data does not fit its shape is the model's fault: INTERNAL, naming
 * `where` (the operator and step) and the tensor.
 */
export function leadingElements(tensor: Tensor, max: number, where: string): { head: Tensor; truncated: boolean } {
  const count = elementCount(tensor.shape);
  const kept = Math.min(count, max);
  const size = elementByteSize(tensor.datatype);
  let end: number;
  if (size !== undefined) {
    if (tensor.data.length !== count * size)
      throw misshapen(tensor, where, `${tensor.data.length} bytes for ${count} ${tensor.datatype} elements`);
    end = kept * size;
  } else {
    // BYTES: each element is a 4-byte little-endian length and its bytes; walk to the end of element `kept`.
    end = 0;
    for (let index = 0; index < kept; index++) {
      if (end + 4 > tensor.data.length)
        throw misshapen(tensor, where, `its data ends before element ${index} of ${count}`);
      end += 4 + tensor.data.readUInt32LE(end);
    }
    if (end > tensor.data.length)
      throw misshapen(tensor, where, `BYTES element ${kept - 1} runs past the end of the data`);
  }
  return {
    head: { name: tensor.name, datatype: tensor.datatype, shape: [kept], data: tensor.data.subarray(0, end) },
    truncated: kept < count,
  };
}

function misshapen(tensor: Tensor, where: string, problem: string): OperonError {
  return new OperonError(
    "INTERNAL",
    `${where}: output '${tensor.name}' (shape [${tensor.shape.join(",")}]) cannot be shown: ${problem}`,
  );
}
