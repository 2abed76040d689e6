import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_DIR } from "@operon/protocol/proto-dir";

/** The .proto files a Triton user would compile a client from (@operon/protocol's). */
export { PROTO_DIR };

/** What a unary call answered: its message and the metadata the server sent before (initial) and after it (trailing). */
export interface UnaryAnswer {
  response: any;
  initial: grpc.Metadata;
  trailing: grpc.Metadata;
}

/**
 * A unary-call gRPC client built from grpc_service.proto with proto-loader, as a Triton user builds one.
 * `callWithMetadata` sends metadata (e.g. traceparent, x-request-id) and also answers what metadata came back.
 */
export function grpcClient(address: string): {
  call(method: string, request: object): Promise<any>;
  callWithMetadata(method: string, request: object, metadata?: Record<string, string>): Promise<UnaryAnswer>;
  close(): void;
} {
  const definition = protoLoader.loadSync(join(PROTO_DIR, "grpc_service.proto"), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  const client = new loaded.inference.GRPCInferenceService(address, grpc.credentials.createInsecure()) as grpc.Client;
  return {
    call: (method, request) =>
      new Promise((resolve, reject) =>
        (client as any)[method](request, (error: grpc.ServiceError | null, response: unknown) =>
          error ? reject(error) : resolve(response),
        ),
      ),
    callWithMetadata: (method, request, metadata = {}) =>
      new Promise((resolve, reject) => {
        const sent = new grpc.Metadata();
        for (const [key, value] of Object.entries(metadata)) sent.set(key, value);
        let initial = new grpc.Metadata();
        let response: unknown;
        let failure: grpc.ServiceError | null = null;
        const call = (client as any)[method](request, sent, (error: grpc.ServiceError | null, value: unknown) => {
          failure = error;
          response = value;
        }) as grpc.ClientUnaryCall;
        call.on("metadata", (received: grpc.Metadata) => {
          initial = received;
        });
        // The status event comes after the callback and carries the trailing metadata.
        call.on("status", (status: grpc.StatusObject) => {
          if (failure !== null) reject(failure);
          else resolve({ response, initial, trailing: status.metadata });
        });
      }),
    close: () => client.close(),
  };
}
