import type * as grpc from "@grpc/grpc-js";
import { INFERENCE_SERVICE, loadGrpcProtos, type WireInferRequest } from "../grpc-wire.js";

/** ModelInfer's message codecs as grpc-js uses them (protobufjs, from Triton's .proto): what tests compare to. */
export interface ModelInferCodecs {
  serializeRequest(message: object): Buffer;
  deserializeRequest(message: Buffer): WireInferRequest;
  serializeResponse(message: object): Buffer;
  deserializeResponse(message: Buffer): object;
}

/** Loads the service definition once per call (a test's beforeAll). */
export async function loadModelInferCodecs(): Promise<ModelInferCodecs> {
  const definition = await loadGrpcProtos();
  const method = (definition[INFERENCE_SERVICE] as unknown as Record<string, grpc.MethodDefinition<object, object>>)[
    "ModelInfer"
  ]!;
  return {
    serializeRequest: method.requestSerialize as (message: object) => Buffer,
    deserializeRequest: method.requestDeserialize as (message: Buffer) => WireInferRequest,
    serializeResponse: method.responseSerialize as (message: object) => Buffer,
    deserializeResponse: method.responseDeserialize as (message: Buffer) => object,
  };
}
