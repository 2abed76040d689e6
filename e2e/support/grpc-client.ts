import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_DIR } from "@operon/protocol/proto-dir";

/** The .proto files a Triton user would compile a client from (@operon/protocol's). */
export { PROTO_DIR };

/** A unary-call gRPC client built from grpc_service.proto with proto-loader, as a Triton user builds one. */
export function grpcClient(address: string): { call(method: string, request: object): Promise<any>; close(): void } {
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
    close: () => client.close(),
  };
}
