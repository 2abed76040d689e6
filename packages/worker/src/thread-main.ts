import { readFileSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import {
  type FromThreadMessage,
  type ThreadExecuteMessage,
  type ThreadLoadMessage,
  THREAD_WIRE_VERSION,
  TensorNames,
  type ToThreadMessage,
  packTensorsReusing,
} from "@operon/protocol/thread-wire";
import type { BackendLog } from "@operon/backend-api/backend";
import type { InProcessBackend } from "@operon/protocol/thread-wire";
import { loadInProcessBackend } from "./in-process-backend.js";

/**
 * Backend instance on a worker_thread of the gateway process
 * (`new Worker(".../thread-main.js")`): the trusted native backends
 * (onnxruntime, echo) run here, off the gateway's event loop but without a
 * process hop, as Triton runs its C++ backends. The contract is
 * @operon/protocol/thread-wire.
 *
 * One backend per thread; executes run one at a time in arrival order (a
 * backend's run is synchronous native code on this thread anyway). A
 * request-level backend (the TypeScript backend) is refused: user code runs
 * in worker processes.
 */

const port = parentPort;
if (port === null) throw new Error("thread-main.js runs as a worker_thread started by the gateway");
const instanceName = String((workerData as { instanceName?: unknown } | null)?.instanceName ?? "");

const post = (message: FromThreadMessage, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer ?? []);
const log: BackendLog = (level, message, fields) =>
  post({ type: "log", level, message, ...(fields !== undefined ? { fields } : {}) });

let backend: InProcessBackend | undefined;
/** The backend's declared inputs and outputs, by position: the name tables of the wire's TensorLayouts. */
let inputNames = new TensorNames([]);
let outputNames = new TensorNames([]);
let queue: Promise<void> = Promise.resolve();

async function load(message: ThreadLoadMessage): Promise<void> {
  if (message.wireVersion !== THREAD_WIRE_VERSION) {
    throw new OperonError(
      "INTERNAL",
      `thread wire version ${message.wireVersion} asked for; this worker speaks ${THREAD_WIRE_VERSION}`,
    );
  }
  const { type: _type, wireVersion: _wireVersion, ...load } = message;
  backend = await loadInProcessBackend({ ...load, instanceName: message.instanceName || instanceName }, log);
  inputNames = new TensorNames(backend.inputs.map((io) => io.name));
  outputNames = new TensorNames(backend.outputs.map((io) => io.name));
  const tid = ownThreadId();
  post({ type: "loaded", inputs: backend.inputs, outputs: backend.outputs, ...(tid !== undefined ? { tid } : {}) });
}

/** This thread's Linux tid: /proc/thread-self/stat starts with it. */
function ownThreadId(): number | undefined {
  try {
    const tid = Number.parseInt(readFileSync("/proc/thread-self/stat", "utf8"), 10);
    return Number.isSafeInteger(tid) ? tid : undefined;
  } catch {
    return undefined;
  }
}

async function execute(message: ThreadExecuteMessage): Promise<void> {
  if (backend === undefined) throw new OperonError("UNAVAILABLE", `instance '${instanceName}' has no model loaded`);
  const inputs = inputNames.unpack(message.buffer, message.inputs);
  const selected = message.outputNames !== undefined ? outputNames.namesOf(message.outputNames) : undefined;
  const result = await backend.execute(inputs, selected);
  // The message's buffer is ours now: the result goes back in it when it can (no allocation, or no copy at all).
  const packed = packTensorsReusing(message.buffer, result.outputs);
  const { computeInputNs, computeInferNs, computeOutputNs } = result.timing;
  post(
    {
      type: "result",
      requestId: message.requestId,
      buffer: packed.buffer,
      outputs: outputNames.layoutOf(packed.tensors) ?? packed.tensors,
      timing: [computeInputNs, computeInferNs, computeOutputNs],
    },
    [packed.buffer],
  );
}

async function stop(): Promise<void> {
  const finishing = backend;
  backend = undefined;
  await finishing?.finalize();
  port!.close();
}

function fail(requestId: number, error: unknown): void {
  const operonError = asOperonError(error);
  post({ type: "error", requestId, kind: operonError.kind, message: operonError.message });
}

port.on("message", (message: ToThreadMessage) => {
  // Chained so executes run one at a time, in order, even if a backend's execute awaits.
  queue = queue.then(async () => {
    switch (message.type) {
      case "load":
        await load(message).catch((error: unknown) => fail(0, error));
        return;
      case "execute":
        await execute(message).catch((error: unknown) => fail(message.requestId, error));
        return;
      case "stop":
        await stop().catch((error: unknown) =>
          log("error", `finalizing the backend failed: ${(error as Error).message}`),
        );
        return;
    }
  });
});
