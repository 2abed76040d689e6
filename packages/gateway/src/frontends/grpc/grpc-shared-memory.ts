import type * as grpc from "@grpc/grpc-js";
import { OperonError } from "@operon/protocol/errors";
import type { Principal } from "../../auth/access-policy.js";
import type { SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import type { RawMessage } from "./grpc-deferred-decoding.js";
import { checkLocalPeer, peerAddress } from "../shared-memory/local-peer.js";

/**
 * SystemSharedMemoryStatus / Register / Unregister (grpc_service.proto) on
 * the registry HTTP uses too: a region registered over one transport is
 * named by requests on the other, as in Triton. uint64 fields arrive as
 * decimal strings (proto-loader's longs: String) and go through the
 * registry's range checks as bigints.
 */

type Guarded = <Req, Res>(
  need: "infer",
  method: string,
  fn: (request: Req, call: grpc.ServerUnaryCall<RawMessage, Res>, principal: Principal | null) => Res | Promise<Res>,
) => grpc.handleUnaryCall<RawMessage, Res>;

interface RegisterRequest {
  name: string;
  key: string;
  offset: string | number;
  byte_size: string | number;
}

export function sharedMemoryHandlers(
  shm: SystemSharedMemory,
  guarded: Guarded,
): Record<string, grpc.handleUnaryCall<RawMessage, unknown>> {
  const ownerOf = (principal: Principal | null): string | null => principal?.keyId ?? null;
  return {
    SystemSharedMemoryStatus: guarded("infer", "SystemSharedMemoryStatus", (r: { name: string }, _call, principal) => {
      const regions: Record<string, { name: string; key: string; offset: string; byte_size: string }> = {};
      for (const region of shm.status(r.name || undefined, ownerOf(principal))) {
        regions[region.name] = {
          name: region.name,
          key: region.key,
          offset: String(region.offset),
          byte_size: String(region.byte_size),
        };
      }
      return { regions };
    }),
    SystemSharedMemoryRegister: guarded(
      "infer",
      "SystemSharedMemoryRegister",
      async (r: RegisterRequest, call, principal) => {
        checkLocalPeer(peerAddress(call.getPeer()));
        if (r.name === "") throw new OperonError("INVALID_ARG", "'name' of the region to register is empty");
        await shm.register(r.name, r.key, uint64(r.offset), uint64(r.byte_size), ownerOf(principal));
        return {};
      },
    ),
    SystemSharedMemoryUnregister: guarded(
      "infer",
      "SystemSharedMemoryUnregister",
      async (r: { name: string }, _call, principal) => {
        await shm.unregister(r.name || undefined, ownerOf(principal));
        return {};
      },
    ),
  };
}

/** A uint64 field as proto-loader hands it: a decimal string (or a number). */
function uint64(value: string | number): bigint {
  try {
    return BigInt(value);
  } catch (error) {
    throw new OperonError("INVALID_ARG", `not an unsigned 64-bit integer: ${String(value)}`, { cause: error });
  }
}
