import { OperonError } from "@operon/protocol/errors";
import type { Backend } from "@operon/backend-api/backend";
import {
  BACKEND_API_VERSION,
  formatBackendApiVersion,
  isCompatibleBackendApi,
} from "@operon/backend-api/backend-api-version";

/**
 * Backend names a load message may ask for (config `backend` / platform
 * "onnxruntime_onnx"). "typescript" runs a model.ts / model.mjs / model.js
 * class in the worker (Triton's Python backend, in TypeScript). "echo"
 * returns its inputs as outputs, for measuring and testing the gateway <->
 * worker transport. "native" serves a backend written against Triton's C++
 * API (libtriton_<name>.so, named by the load message's `native`).
 * "operon_steps" runs a pipeline of Operon's built-in steps (@operon/steps:
 * image decode/resize/normalize, tokenization, softmax, top-k, ...) from the
 * version folder's steps.json, as a TypeScript-backend model.
 */
export const BACKEND_NAMES = ["onnxruntime", "typescript", "operon_steps", "echo", "native"] as const;

/**
 * Creates the backend by name. Implementations are imported on demand so a
 * worker loads only the runtime it serves (onnxruntime-node's native
 * library is not free to load).
 */
export async function createBackend(name: string): Promise<Backend> {
  let backend: Backend;
  switch (name) {
    case "onnxruntime": {
      const { createOnnxRuntimeBackend } = await import("./onnxruntime-backend.js");
      backend = createOnnxRuntimeBackend();
      break;
    }
    case "typescript": {
      const { createTypeScriptBackend } = await import("./typescript-backend.js");
      backend = createTypeScriptBackend();
      break;
    }
    case "operon_steps": {
      const { createTypeScriptBackend } = await import("./typescript-backend.js");
      backend = createTypeScriptBackend({
        backendName: "operon_steps",
        loadModule: async () => {
          const module = await import("@operon/steps/step-pipeline-model");
          // The numeric steps that pay on the native backend API run there, in this process (steps-native-kernels.ts).
          const { createStepsNativeKernels } = await import("./steps-native-kernels.js");
          module.useNativeKernels(createStepsNativeKernels());
          return module as Record<string, unknown>;
        },
      });
      break;
    }
    case "native": {
      const { createNativeBackend } = await import("./native-backend.js");
      backend = createNativeBackend();
      break;
    }
    case "echo": {
      const { createEchoBackend } = await import("./echo-backend.js");
      backend = createEchoBackend();
      break;
    }
    default:
      throw new OperonError(
        "UNSUPPORTED",
        `backend '${name}' is not supported by this worker (supported: ${BACKEND_NAMES.join(", ")})`,
      );
  }
  if (!isCompatibleBackendApi(backend.apiVersion)) {
    throw new OperonError(
      "INTERNAL",
      `backend '${name}' implements backend API ${formatBackendApiVersion(backend.apiVersion)}, this worker provides ${formatBackendApiVersion(BACKEND_API_VERSION)}`,
    );
  }
  return backend;
}
