import type { InferenceClient, InferenceClientOptions, PerfProtocol } from "./inference-client.js";

/** Builds the client of a protocol (loading the gRPC protos where needed). */
export async function createInferenceClient(
  protocol: PerfProtocol,
  options: InferenceClientOptions,
): Promise<InferenceClient> {
  // Imported lazily so an HTTP run never loads the gRPC stack, and the other way round.
  if (protocol === "http") {
    const { HttpInferenceClient } = await import("./http-inference-client.js");
    return new HttpInferenceClient(options);
  }
  const { GrpcInferenceClient } = await import("./grpc-inference-client.js");
  return GrpcInferenceClient.create(options);
}
