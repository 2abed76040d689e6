import net from "node:net";
import type { BackendLog } from "./backends/backend.js";
import { createBackend } from "./backends/registry.js";
import { WorkerServer } from "./worker-server.js";

/**
 * Worker process entry: `node packages/worker/dist/main.js`, spawned by the
 * gateway with stdio ['ignore', 'inherit', 'pipe', 'pipe']. fd 3 is the
 * frame channel (see @operon/protocol/worker-wire); stderr carries logs as
 * one JSON object per line, which the gateway relays. The instance name is
 * known from OPERON_WORKER_INSTANCE at start and from the load message after.
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
  log("error", "unhandled rejection; exiting", { error: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason) });
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

new WorkerServer({
  channel,
  createBackend,
  log,
  setInstanceName: (name) => {
    instance = name;
  },
  exit: (code) => process.exit(code),
}).start();
