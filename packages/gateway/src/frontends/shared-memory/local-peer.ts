import { OperonError } from "@operon/protocol/errors";
import { isLoopbackHost } from "../../auth/loopback.js";

/**
 * Shared-memory regions are registered from this host only. A client on
 * another machine cannot have an object in this host's /dev/shm, so a
 * remote registration is never legitimate: it could only name some other
 * local program's object (a database's shared buffers, say) and read or
 * overwrite it through a model. Local callers are still trusted as far as
 * the server's user can open objects: run the server as its own user.
 */
export function checkLocalPeer(address: string | undefined): void {
  if (address === undefined || !isLoopbackHost(address)) {
    throw new OperonError(
      "PERMISSION_DENIED",
      `shared memory regions can only be registered by clients on this host (the request came from ${address ?? "an unknown address"})`,
    );
  }
}

/** The address part of grpc-js's getPeer(): "127.0.0.1:5000", "[::1]:5000", "ipv4:127.0.0.1:5000". */
export function peerAddress(peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, "");
  if (bare.startsWith("[")) return bare.slice(1, bare.indexOf("]"));
  const colon = bare.lastIndexOf(":");
  return colon === -1 ? bare : bare.slice(0, colon);
}
