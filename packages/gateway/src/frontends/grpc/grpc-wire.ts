import * as protoLoader from "@grpc/proto-loader";
import type { InferTensorContents } from "@operon/protocol/grpc-tensor-contents";
import { PROTO_DIR } from "@operon/protocol/proto-dir";

/** The KServe v2 / Triton protos as proto-loader loads them, and the message shapes it decodes to (keepCase, longs: String, oneofs). */

export const INFERENCE_SERVICE = "inference.GRPCInferenceService";
export const HEALTH_SERVICE = "grpc.health.v1.Health";

/**
 * Loader options shared by the server and by clients built from the same
 * protos. 64-bit integers decode as decimal strings: shapes, int64 contents
 * and int64/uint64 parameters must survive values beyond 2^53.
 */
export const GRPC_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The proto directory of @operon/protocol. */
export function defaultProtoDir(): string {
  return PROTO_DIR;
}

export function loadGrpcProtos(protoDir: string = defaultProtoDir()): Promise<protoLoader.PackageDefinition> {
  return protoLoader.load(["grpc_service.proto", "health.proto"], { ...GRPC_LOADER_OPTIONS, includeDirs: [protoDir] });
}

export interface WireParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: string | number;
  string_param?: string;
  double_param?: number;
  uint64_param?: string | number;
  bytes_param?: Buffer;
}

export type WireParameters = Record<string, WireParameter> | undefined;

export interface WireInput {
  name: string;
  datatype: string;
  shape: Array<string | number>;
  parameters?: WireParameters;
  contents?: InferTensorContents | null;
}

export interface WireInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: WireParameters;
  inputs?: WireInput[];
  outputs?: Array<{ name: string; parameters?: WireParameters }>;
  raw_input_contents?: Buffer[];
}

export interface NameVersion {
  name: string;
  version: string;
}

export interface RepositoryRequest {
  repository_name: string;
  model_name: string;
  parameters?: WireParameters;
}
