import type { BackendLog } from "@operon/backend-api/backend";
import { OperonError } from "@operon/protocol/errors";
import type { InstanceLoad } from "@operon/protocol/instance-load";
import type { InProcessBackend, InProcessBackendLog } from "@operon/protocol/thread-wire";
import { createBackend } from "./backends/registry.js";

/**
 * Loads a backend that runs inside the gateway's process: on a worker_thread
 * (thread-main.ts) or on the gateway's event loop itself (the gateway's
 * InlineInstance imports this module by path). Only native code we vet may
 * run there, never user code: a crash takes the gateway down, as in Triton.
 */

/** Backends that may run in the gateway's process; every other backend runs in a worker process. */
export const IN_PROCESS_BACKENDS: ReadonlySet<string> = new Set(["onnxruntime", "echo"]);

export async function loadInProcessBackend(load: InstanceLoad, log: InProcessBackendLog): Promise<InProcessBackend> {
  if (!IN_PROCESS_BACKENDS.has(load.backend)) {
    throw new OperonError(
      "UNSUPPORTED",
      `backend '${load.backend}' cannot run in the gateway's process (in-process backends: ${[...IN_PROCESS_BACKENDS].join(", ")}); use process isolation`,
    );
  }
  const backend = await createBackend(load.backend);
  await backend.initialize({
    modelPath: load.modelPath,
    config: load.config,
    instanceName: load.instanceName,
    parameters: load.parameters,
    ...(load.instanceKind !== undefined ? { instanceKind: load.instanceKind } : {}),
    ...(load.deviceId !== undefined ? { deviceId: load.deviceId } : {}),
    log: log as BackendLog,
  });
  const { inputs, outputs } = backend.metadata();
  return {
    inputs,
    outputs,
    execute: (tensors, outputNames) => backend.execute(tensors, outputNames),
    finalize: () => backend.finalize(),
  };
}
