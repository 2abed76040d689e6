import type * as grpc from "@grpc/grpc-js";
import type * as protoLoader from "@grpc/proto-loader";
import { OperonError } from "@operon/protocol/errors";
import type { InferRequest } from "@operon/protocol/inference";
import { DECODE_OFF_LOOP_BYTES, type DecodePool } from "../decode/decode-pool.js";
import { decodeGrpcInfer } from "../decode/decode-tasks.js";
import { GrpcMessageBudget } from "./grpc-message-budget.js";
import { INFERENCE_SERVICE, type WireInferRequest } from "./grpc-wire.js";

/** Triton's HTTP body default, applied to a ModelInfer message too (other RPCs, model uploads, get grpc-js's receive limit). */
export const DEFAULT_MAX_INFER_MESSAGE_BYTES = 64 * 1024 * 1024;

/** A ModelInfer request as grpc-js hands it to the handler: its bytes, not yet decoded. */
export interface RawInferMessage {
  readonly raw: Buffer;
}

/**
 * ModelInfer and ModelStreamInfer messages are not decoded by grpc-js on
 * the event loop as they arrive: both reach their handlers as bytes
 * (RawInferMessage), checked there against the size limit and the entry
 * budget (protobuf-budget.ts), then decoded inline when small, on the
 * decode pool when large. One path for both RPCs: a stream message is no
 * cheaper to send than a unary one, so it gets the same checks.
 */
export class GrpcInferDecoding {
  private readonly deserialize: (message: Buffer) => WireInferRequest;

  constructor(
    definition: protoLoader.PackageDefinition,
    private readonly pool: DecodePool,
    private readonly maxMessageBytes: number = DEFAULT_MAX_INFER_MESSAGE_BYTES,
    private readonly budget: GrpcMessageBudget = new GrpcMessageBudget(4 * maxMessageBytes),
  ) {
    const service = definition[INFERENCE_SERVICE] as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
    const unaryMethod = service["ModelInfer"]!;
    const streamMethod = service["ModelStreamInfer"]!;
    this.deserialize = unaryMethod.requestDeserialize as (message: Buffer) => WireInferRequest;
    // Handlers see what these return (grpc-js calls them for each message).
    const raw = (bytes: Buffer): RawInferMessage => ({ raw: bytes });
    unaryMethod.requestDeserialize = raw;
    streamMethod.requestDeserialize = raw;
  }

  /**
   * Counts the message against the bytes the frontend holds at once
   * (GrpcMessageBudget; RESOURCE_EXHAUSTED over it) until the returned
   * function is called, once its inference has answered.
   */
  hold(message: RawInferMessage): () => void {
    return this.budget.hold(message.raw.length);
  }

  /**
   * The request a ModelInfer or ModelStreamInfer message holds; OperonError
   * (RESOURCE_EXHAUSTED, INVALID_ARG) when refused. `allowReserved`:
   * triton_ parameters the calling frontend reads itself.
   */
  async decode(message: RawInferMessage, allowReserved: readonly string[] = []): Promise<InferRequest> {
    this.checkSize(message.raw);
    if (message.raw.length < DECODE_OFF_LOOP_BYTES)
      return decodeGrpcInfer(message.raw, this.deserialize, allowReserved);
    // grpc-js assembles a message this large from several HTTP/2 frames into a buffer of its own (stream-decoder's concat): it moves.
    return (await this.pool.decodeInfer({ kind: "grpc-infer", message: message.raw, allowReserved }, true)).request;
  }

  private checkSize(raw: Buffer): void {
    if (raw.length > this.maxMessageBytes) {
      throw new OperonError(
        "RESOURCE_EXHAUSTED",
        `ModelInfer message of ${raw.length} bytes exceeds the limit of ${this.maxMessageBytes} bytes (--grpc-infer-max-message-bytes)`,
      );
    }
  }
}
