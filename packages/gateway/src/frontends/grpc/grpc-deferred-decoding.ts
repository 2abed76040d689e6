import type * as grpc from "@grpc/grpc-js";
import type * as protoLoader from "@grpc/proto-loader";
import { OperonError } from "@operon/protocol/errors";
import { assertRepositoryMessageWithinBudget } from "../decode/protobuf-budget.js";
import { INFERENCE_SERVICE } from "./grpc-wire.js";

/** A request message as grpc-js hands it to a handler: its bytes, decoded only once the caller is authorized. */
export interface RawMessage {
  readonly raw: Buffer;
}

/** Messages of the RPCs that carry model files (RepositoryModelLoad's `file:` parameters) may be as large as grpc-js receives. */
const REPOSITORY_METHODS = new Set(["RepositoryModelLoad", "RepositoryModelUnload"]);

/** Every other RPC but inference carries a name, a version and a few flags. */
export const MAX_SMALL_MESSAGE_BYTES = 1024 * 1024;

/**
 * Defers the decoding of the inference service's RPCs other than ModelInfer
 * and ModelStreamInfer (grpc-infer-decoding.ts has those) from grpc-js's
 * deserializer, which runs before any handler, to the handler: after the
 * key in the call's metadata has been checked, and after the message has
 * passed its size limit and entry budget. An anonymous 136 MB
 * RepositoryModelLoad of 16 M map entries is refused UNAUTHENTICATED without
 * one entry decoded.
 */
export class GrpcDeferredDecoding {
  private readonly deserializers = new Map<string, (message: Buffer) => unknown>();

  /** `maxRepositoryMessageBytes`: RepositoryModelLoad/Unload's limit (the server's receive limit). */
  constructor(
    definition: protoLoader.PackageDefinition,
    private readonly maxRepositoryMessageBytes: number,
  ) {
    const service = definition[INFERENCE_SERVICE] as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
    for (const [name, method] of Object.entries(service)) {
      if (name === "ModelInfer" || name === "ModelStreamInfer") continue;
      this.deserializers.set(name, method.requestDeserialize as (message: Buffer) => unknown);
      method.requestDeserialize = (raw: Buffer): RawMessage => ({ raw });
    }
  }

  /** The decoded request of `method`; RESOURCE_EXHAUSTED over its limits, INVALID_ARG when malformed. */
  decode<T>(method: string, message: RawMessage): T {
    const deserialize = this.deserializers.get(method);
    if (deserialize === undefined) throw new OperonError("INTERNAL", `no deserializer for gRPC method ${method}`);
    const repository = REPOSITORY_METHODS.has(method);
    const limit = repository ? this.maxRepositoryMessageBytes : MAX_SMALL_MESSAGE_BYTES;
    if (message.raw.length > limit) {
      throw new OperonError(
        "RESOURCE_EXHAUSTED",
        `${method} message of ${message.raw.length} bytes exceeds the limit of ${limit} bytes`,
      );
    }
    if (repository) assertRepositoryMessageWithinBudget(message.raw);
    try {
      return deserialize(message.raw) as T;
    } catch (error) {
      throw new OperonError("INVALID_ARG", `malformed ${method} request: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
