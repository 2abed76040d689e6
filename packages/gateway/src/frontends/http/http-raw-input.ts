import type { RawInputSpec } from "@operon/protocol/binary-tensor-codec";
import { isDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { InferenceEngine } from "../../engine/engine-api.js";

/**
 * The input a raw binary request fills, read from the engine's public
 * metadata and config: the model's only input, as a batch of one when the
 * model batches (metadata shows the batch dimension as a leading -1).
 * Remaining -1 dimensions are resolved from the body size by the codec.
 */
export function rawInputSpecFromEngine(
  engine: InferenceEngine,
  model: string,
  version: string | undefined,
): RawInputSpec {
  const metadata = engine.modelMetadata(model, version);
  const input = metadata.inputs[0];
  if (input === undefined || metadata.inputs.length !== 1) {
    throw new OperonError(
      "INVALID_ARG",
      `raw binary request (Inference-Header-Content-Length: 0) needs a model with exactly one input; model '${model}' has ${metadata.inputs.length}`,
    );
  }
  if (!isDataType(input.datatype)) {
    throw new OperonError(
      "INTERNAL",
      `model '${model}' input '${input.name}' has unknown datatype '${input.datatype}'`,
    );
  }
  const maxBatchSize = engine.modelConfig(model, version)["max_batch_size"];
  const batched = typeof maxBatchSize === "number" && maxBatchSize > 0;
  return {
    name: input.name,
    datatype: input.datatype,
    shape: batched ? [1, ...input.shape.slice(1)] : [...input.shape],
  };
}
