import { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { BackendInstance } from "./backend-instance.js";

/**
 * Triton's model_warmup: samples every instance runs after it loads and
 * before it takes a request, so the first client request does not pay for
 * ONNX Runtime's lazy allocations (or a JIT, a cache fill...). A sample
 * that fails fails the load (or the restart), naming the sample.
 *
 * Samples are built once per load (../repository/warmup-samples.ts) and kept with the
 * launch spec, so instances started later (resize, restart after a crash)
 * are warmed with the same tensors. Their inputs are self-describing
 * (data_type and dims in the sample, batch_size prepended when the model
 * batches), as in Triton: warmup never reads the config's inputs, and goes
 * to the instance directly, not through the scheduler (a sequence model's
 * sample carries its control and state inputs itself).
 */
export interface WarmupSample {
  name: string;
  inputs: Tensor[];
  /** Runs of the sample (Triton: count, 0 = 1). */
  count: number;
}

/** Runs every sample on a freshly loaded instance; the first failure throws INVALID_ARG naming the sample. */
export async function runWarmup(
  worker: BackendInstance,
  modelName: string,
  instanceName: string,
  samples: readonly WarmupSample[],
): Promise<void> {
  for (const sample of samples) {
    for (let run = 0; run < sample.count; run += 1) {
      try {
        await worker.execute(sample.inputs);
      } catch (error) {
        throw new OperonError(
          "INVALID_ARG",
          `model '${modelName}': warmup sample '${sample.name}' failed on instance '${instanceName}': ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
  }
}
