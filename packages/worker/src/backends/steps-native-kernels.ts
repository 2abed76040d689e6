import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { DEFAULT_BACKEND_DIRECTORY, nativeBackendsUnavailableReason } from "@operon/native/tritonserver-host";
import type { NativeKernels, NativeNormalize } from "@operon/steps/step-tensor";
import { NativeBackend } from "./native-backend.js";

/**
 * The step library's kernels on the native backend API, for an operon_steps
 * worker: Operon's operon_tensor_ops backend
 * (native/backends/operon_tensor_ops) loaded into this worker process, one
 * TRITONBACKEND model per step that uses it, run through the same
 * NativeBackend that serves native models, so a step pays no process
 * crossing for it. Which steps gain was measured, not assumed
 * (bench/numeric-steps-native.mjs): only image.normalize of 8-bit pixels
 * (4–11× from 224×224 up); softmax and top-k stay in TypeScript.
 *
 * Without native backends (no compiler at install, OPERON_NATIVE=0, the
 * library missing) every kernel is undefined and the steps run in
 * TypeScript: the same values either way.
 */
export const TENSOR_OPS_BACKEND = "operon_tensor_ops";

export function tensorOpsLibrary(directory = DEFAULT_BACKEND_DIRECTORY): string {
  return `${directory}/${TENSOR_OPS_BACKEND}/libtriton_${TENSOR_OPS_BACKEND}.so`;
}

/** Undefined when this worker cannot run native backends (the reason is then the steps' TypeScript path, not an error). */
export function createStepsNativeKernels(libraryPath = tensorOpsLibrary()): NativeKernels | undefined {
  if (nativeBackendsUnavailableReason() !== undefined || !existsSync(libraryPath)) return undefined;
  let models = 0;
  return {
    async normalize(params): Promise<NativeNormalize | undefined> {
      const backend = new NativeBackend();
      const name = `steps_normalize_${++models}`;
      const config = {
        name,
        backend: TENSOR_OPS_BACKEND,
        max_batch_size: 0,
        input: [{ name: "x", data_type: "TYPE_UINT8", dims: [-1, -1, -1] }],
        output: [{ name: "y", data_type: "TYPE_FP32", dims: [-1, -1, -1] }],
        parameters: {
          op: { string_value: "normalize" },
          // Shortest round-trip text of each double: the kernel parses back exactly the values the TypeScript step uses.
          scale: { string_value: String(params.scale) },
          mean: { string_value: params.mean.map(String).join(",") },
          std: { string_value: params.std.map(String).join(",") },
        },
      };
      try {
        await backend.initialize({
          modelPath: tmpdir(),
          config,
          instanceName: `${name}_0`,
          parameters: {},
          log: () => undefined,
          native: {
            backendName: TENSOR_OPS_BACKEND,
            libraryPath,
            backendConfig: {},
            version: "1",
            autoComplete: false,
          },
        });
      } catch {
        return undefined; // a library that does not load leaves the step in TypeScript
      }
      return async (pixels, shape) => {
        const data = Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength);
        const { outputs } = await backend.execute([{ name: "x", datatype: "UINT8", shape, data }]);
        const y = outputs[0]!.data;
        // The output is this process's own copy (no shared-memory room was offered): a view when aligned, else a copy.
        return y.byteOffset % 4 === 0
          ? new Float32Array(y.buffer, y.byteOffset, y.byteLength / 4)
          : new Float32Array(new Uint8Array(y).slice().buffer);
      };
    },
  };
}
