import { parentPort, workerData } from "node:worker_threads";
import { inspectCustomStep } from "./custom-step-compile.js";
import type { CompileReply, CompileTask } from "./custom-step-checker.js";

/**
 * One type check of an uploaded custom step, in its own worker thread
 * (custom-step-checker.ts starts it): the task comes as workerData, the
 * problems and the declared signature (or why the check itself failed) go
 * back as one message, and the
 * thread ends.
 */
const port = parentPort;
if (port === null) throw new Error("custom-step-compile-thread.js runs as a worker_thread of the control plane");

const task = workerData as CompileTask;
let reply: CompileReply;
try {
  reply = { ok: true, ...inspectCustomStep(new Map(task.files), task.entry) };
} catch (error) {
  reply = { ok: false, message: error instanceof Error ? error.message : String(error) };
}
port.postMessage(reply);
