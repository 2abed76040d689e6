import { type ChildProcess, spawn } from "node:child_process";
import { chownSync } from "node:fs";
import { OperonError } from "@operon/protocol/errors";
import { WORKER_SHM_BYTES_ENV, WORKER_SHM_NAME_ENV } from "@operon/protocol/worker-wire";
import type { BlsRequestHandler } from "./backend-instance.js";
import { type SharedSegment, createSegment, dropSegment } from "./shm-segment.js";
import { type WorkerIdentity, workerEnvironment } from "./worker-environment.js";
import { sandboxNodeFlags, type WorkerSandbox } from "./worker-sandbox.js";

/**
 * How tensor bytes travel between gateway and worker. "shm": a shared-memory
 * segment per worker, the socket carrying only small control frames (needs
 * the native addon); "socket": inside the frames; "auto": shm when the addon
 * loads and the worker maps the segment, else socket.
 */
export type WorkerTransport = "auto" | "shm" | "socket";

export interface WorkerSpawnOptions {
  /** Path of the worker entry (packages/worker/dist/main.js). */
  entry: string;
  instanceName: string;
  /**
   * Environment of the worker; default workerEnvironment(process.env): an
   * allow-list, never the server's secrets. OPERON_WORKER_INSTANCE is added.
   */
  env?: NodeJS.ProcessEnv;
  /** Run the worker as this account (the server runs as root and was given --worker-user); default the server's own. */
  identity?: WorkerIdentity;
  /** Receives each stderr line of the worker (JSON log lines, or native libraries' text). Default: forward to process.stderr. */
  onLog?: (line: string) => void;
  /** How long the worker may take to open its channel; default 30 s. */
  startTimeoutMs?: number;
  /** Default "auto". With "shm", spawn fails (UNAVAILABLE) when shared memory cannot be set up. */
  transport?: WorkerTransport;
  /** Size of the shared-memory segment, both directions together (half each); default 64 MiB. */
  sharedMemoryBytes?: number;
  /** Serves the worker's BLS calls (see WorkerProcess.onBlsRequest). */
  onBlsRequest?: BlsRequestHandler;
  /** Run it sandboxed (worker-sandbox.ts); the transport is then always "socket" (no shared segment to map). */
  sandbox?: WorkerSandbox;
}

/** A started worker process, before its channel is open. */
export interface LaunchedWorker {
  child: ChildProcess;
  pid: number;
  onLog: (line: string) => void;
  /** The segment offered to it; undefined on the socket transport. */
  segment: SharedSegment | undefined;
}

/**
 * Starts the worker process: its environment (an allow-list plus the
 * shared-memory offer), its account, and fd 3 as the control channel.
 * Throws UNAVAILABLE when the process cannot be started; the segment is
 * dropped on every failure.
 */
export async function launchWorker(options: WorkerSpawnOptions): Promise<LaunchedWorker> {
  const sandbox = options.sandbox;
  const transport = sandbox !== undefined ? "socket" : (options.transport ?? "auto");
  const onLog = options.onLog ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const segment = transport === "socket" ? undefined : createSegment(options, onLog);
  const env: NodeJS.ProcessEnv = {
    ...(options.env ?? workerEnvironment(process.env, options.identity)),
    OPERON_WORKER_INSTANCE: options.instanceName,
  };
  delete env[WORKER_SHM_NAME_ENV];
  delete env[WORKER_SHM_BYTES_ENV];
  if (segment !== undefined) {
    env[WORKER_SHM_NAME_ENV] = segment.name;
    env[WORKER_SHM_BYTES_ENV] = String(segment.buffer.byteLength);
  }
  const identity = options.identity;
  // The segment is created 0600 by the server: a worker of another account may open it only once it owns it.
  if (identity !== undefined && segment !== undefined) chownSegment(segment, identity, onLog);
  // A sandbox wrapper with --setuid takes the account itself, after entering the namespace (which needs root).
  const switchesAccount = sandbox?.wrapper.includes("--setuid") === true;
  const [command, args] =
    sandbox === undefined
      ? [process.execPath, [options.entry]]
      : [
          sandbox.wrapper[0]!,
          [...sandbox.wrapper.slice(1), "--", process.execPath, ...sandboxNodeFlags(sandbox), options.entry],
        ];
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      stdio: ["ignore", "inherit", "pipe", "pipe"],
      env,
      ...(identity !== undefined && !switchesAccount ? { uid: identity.uid, gid: identity.gid } : {}),
    });
  } catch (error) {
    dropSegment(segment);
    throw error;
  }
  if (child.pid === undefined) {
    dropSegment(segment);
    const error = await new Promise<Error>((resolve) => child.once("error", resolve));
    throw new OperonError(
      "UNAVAILABLE",
      `cannot start worker for instance '${options.instanceName}': ${error.message}`,
      { cause: error },
    );
  }
  return { child, pid: child.pid, onLog, segment };
}

/** Hands a worker's shared-memory segment to the account it runs as (Linux names segments under /dev/shm). */
function chownSegment(shm: SharedSegment, identity: WorkerIdentity, onLog: (line: string) => void): void {
  try {
    chownSync(`/dev/shm${shm.name}`, identity.uid, identity.gid);
  } catch (error) {
    // The worker then cannot map it and falls back to the socket transport ("auto").
    onLog(`cannot hand the shared-memory segment to ${identity.name}: ${(error as Error).message}`);
  }
}
