import net from "node:net";
import { loadSharedMemory, sharedMemoryUnavailableReason } from "@operon/native";
import { WORKER_SHM_BYTES_ENV, WORKER_SHM_NAME_ENV } from "@operon/protocol/worker-wire";
import type { BackendLog } from "@operon/backend-api/backend";
import { createBackend } from "./backends/registry.js";
import { type WorkerSharedMemory, WorkerServer } from "./worker-server.js";

/**
 * Worker process entry: `node packages/worker/dist/main.js`, spawned by the
 * gateway with stdio ['ignore', 'inherit', 'pipe', 'pipe']. fd 3 is the
 * frame channel (see @operon/protocol/worker-wire); stderr carries logs as
 * one JSON object per line, which the gateway relays. The instance name is
 * known from OPERON_WORKER_INSTANCE at start and from the load message after.
 *
 * When the gateway offers a shared-memory segment (OPERON_WORKER_SHM and
 * OPERON_WORKER_SHM_BYTES), the worker maps it before saying `ready`, and
 * unlinks its name at once: both sides have it mapped, so nothing is left
 * in /dev/shm whichever process dies first.
 */

let instance = process.env.OPERON_WORKER_INSTANCE ?? "";

const log: BackendLog = (level, message, fields) => {
  const line = { time: new Date().toISOString(), level, instance, pid: process.pid, msg: message, ...fields };
  process.stderr.write(`${JSON.stringify(line)}\n`);
};

process.on("uncaughtException", (error) => {
  log("error", "uncaught exception; exiting", { error: error.stack ?? String(error) });
  process.exit(70);
});
process.on("unhandledRejection", (reason) => {
  log("error", "unhandled rejection; exiting", {
    error: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason),
  });
  process.exit(70);
});
// Ctrl-C in the gateway's terminal reaches the whole process group; the
// gateway decides when workers stop (shutdown message, or its channel closing).
process.on("SIGINT", () => log("info", "SIGINT ignored: the gateway stops this worker"));

let channel: net.Socket;
try {
  channel = new net.Socket({ fd: 3, readable: true, writable: true });
} catch (error) {
  log("error", `fd 3 is not a usable channel (start workers through the gateway): ${(error as Error).message}`);
  process.exit(2);
}

function mapSharedMemory(): WorkerSharedMemory | undefined {
  const name = process.env[WORKER_SHM_NAME_ENV];
  if (name === undefined || name === "") return undefined;
  // Not for this process's own children.
  delete process.env[WORKER_SHM_NAME_ENV];
  const byteLength = Number(process.env[WORKER_SHM_BYTES_ENV]);
  delete process.env[WORKER_SHM_BYTES_ENV];
  const api = loadSharedMemory();
  if (!api.shared)
    return { mapped: false, reason: `worker ${process.pid}: ${sharedMemoryUnavailableReason() ?? "no shared memory"}` };
  try {
    const segment = Buffer.from(api.open(name, byteLength));
    try {
      api.unlink(name);
    } catch {
      // The gateway unlinks it too once it hears `ready`; either may come first.
    }
    return { mapped: true, segment };
  } catch (error) {
    return { mapped: false, reason: `worker ${process.pid}: ${(error as Error).message}` };
  }
}

const sharedMemory = mapSharedMemory();
if (sharedMemory?.mapped === false)
  log("warn", "shared memory offered but not mapped; tensors travel over the socket", { reason: sharedMemory.reason });

new WorkerServer({
  channel,
  ...(sharedMemory !== undefined ? { sharedMemory } : {}),
  createBackend,
  log,
  setInstanceName: (name) => {
    instance = name;
  },
  exit: (code) => process.exit(code),
  channelFd: 3,
}).start();
