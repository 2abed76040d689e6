import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * Caps on open HTTP connections, in total and per client address, well
 * below the process's file descriptor limit: 20,000 half-open connections
 * from one host used to exhaust the descriptors, and then inference (which
 * opens worker sockets and files) failed with EMFILE. A connection beyond a
 * cap is answered at once with a plain 503 that says which cap, and closed;
 * the server never reads a request from it.
 */
export interface ConnectionLimits {
  /** Open connections at once over all clients. */
  max: number;
  /** Open connections at once from one client address. */
  perAddress: number;
}

/** Half the soft open-file limit (the rest stays for models, workers, sockets to them), at most 16,384, at least 64. */
export function defaultMaxConnections(): number {
  return Math.max(64, Math.min(16_384, Math.floor(openFileLimit() / 2)));
}

/** The soft RLIMIT_NOFILE from /proc/self/limits (Linux); 4096 where it cannot be read. */
export function openFileLimit(): number {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((text) => text.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    const value = soft === undefined || soft === "unlimited" ? NaN : Number(soft);
    return Number.isSafeInteger(value) && value > 0 ? value : 4096;
  } catch {
    return 4096;
  }
}

/** Counts the server's connections and refuses those beyond the limits; returns the live counts (for tests and metrics). */
export function limitConnections(
  server: Server,
  limits: ConnectionLimits,
): { open(): number; refused(socket: Socket): boolean } {
  const perAddress = new Map<string, number>();
  const refusedSockets = new WeakSet<Socket>();
  let open = 0;
  // A listener of our own runs after Node's: the socket already has its parser, which never sees
  // a byte of a refused connection because the answer is written and the socket ended at once.
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "unknown";
    const fromAddress = perAddress.get(address) ?? 0;
    if (open >= limits.max || fromAddress >= limits.perAddress) {
      const which =
        open >= limits.max
          ? `the server has ${open} HTTP connections open, its limit (--http-max-connections ${limits.max})`
          : `${address} has ${fromAddress} HTTP connections open, the limit per address (--http-max-connections-per-address ${limits.perAddress})`;
      refusedSockets.add(socket);
      refuse(socket, which);
      return;
    }
    open += 1;
    perAddress.set(address, fromAddress + 1);
    socket.once("close", () => {
      open -= 1;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left <= 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
  // Node's parser may read the socket natively (pause() does not stop it): a request that still
  // arrives on a refused connection is dropped by the frontend (refused(socket) is true).
  return { open: () => open, refused: (socket) => refusedSockets.has(socket) };
}

function refuse(socket: Socket, reason: string): void {
  const body = JSON.stringify({ error: `too many connections: ${reason}; close idle connections or retry later` });
  socket.on("error", () => {}); // the client may already be gone; nothing to tell anyone
  socket.end(
    `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`,
  );
  // A client that never reads must not hold the descriptor: end() waits for the write to drain.
  setTimeout(() => socket.destroy(), 1000).unref();
}
