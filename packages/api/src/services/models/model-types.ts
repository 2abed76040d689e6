import type { OnnxTensorInfo } from "@operon/model-config/onnx-signature";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { Actor } from "../audit/audit-log.js";

// What the model services (model-services.ts) take in and hand back to the models router.

export type GatewayModelState = "READY" | "UNAVAILABLE" | "LOADING" | "UNLOADING" | "UNKNOWN";
/** "operator": an operator registered through the API (the console's Operators page), which the gateway serves as a model too. */
export type ModelSource = "uploaded" | "repository" | "operator";

export interface ModelVersionSummary {
  version: number;
  state: GatewayModelState;
  reason: string;
  /** null for repository models (the API did not store them). */
  sizeBytes: number | null;
  sha256: string | null;
  uploadedBy: string | null;
  createdAt: Date | null;
}

export interface ModelSummary {
  name: string;
  description: string | null;
  source: ModelSource;
  platform: string | null;
  backend: string | null;
  state: GatewayModelState;
  /** Why the model is not READY ("unloaded", the load error, ...); "" when READY. */
  reason: string;
  versions: ModelVersionSummary[];
  /** Registered operators whose steps call this model (deleting it is refused while any does). */
  usedBy: string[];
  /** Instances the gateway runs (instance_group counts of the served config); 0 when not loaded. */
  instanceCount: number;
  /** Successful inferences since the gateway loaded the model. */
  inferenceCount: number;
}

export interface TensorMetadata {
  name: string;
  /** KServe datatype ("FP32"); null when the config names none. */
  datatype: string | null;
  /** With -1 for dynamic sizes (and the batch dimension when the model batches). */
  shape: number[];
}

export interface StatisticsSummary {
  inferenceCount: number;
  executionCount: number;
  successCount: number;
  failureCount: number;
  /** Mean request time of successful inferences, server side. */
  averageLatencyMs: number | null;
  averageQueueMs: number | null;
  /** Mean compute time (input + infer + output) per execution. */
  averageComputeMs: number | null;
  lastInferenceAt: Date | null;
}

export interface ModelDetail extends ModelSummary {
  /** The gateway's config while loaded (with Triton's defaults), else the stored one; null for unloaded repository models. */
  config: ModelConfigJson | null;
  configSource: "gateway" | "stored" | null;
  /** The config as config.pbtxt: an upload's stored file, else the config written as protobuf text; null when unknown. */
  configPbtxt: string | null;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
  statistics: StatisticsSummary | null;
}

export interface UploadSignature {
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
  /** The config the form starts from: the model's current one for a new version of it, else one made from the file. */
  suggestedConfig: ModelConfigJson;
  /**
   * "current": a new version keeps the model's config, as Triton keeps
   * config.pbtxt across version folders (fixed dims, the instance count a
   * config search applied); "file": made from the ONNX file (a new model, or
   * a file the current config does not fit: `configNote` says why).
   */
  configSource: "current" | "file";
  configNote: string | null;
  /** The serving version whose file has the same SHA-256 as this upload, if any: the upload would serve nothing new. */
  identicalTo: number | null;
}

export interface InferInput {
  name: string;
  datatype: string;
  shape: number[];
  data: Array<number | string | boolean>;
  /** "base64": a BYTES input's elements are base64 of raw bytes (a PNG from the file picker), sent as binary data. */
  encoding?: "base64" | undefined;
}

export interface InferResult {
  modelName: string;
  modelVersion: string;
  outputs: Array<{ name: string; datatype: string; shape: number[]; data: unknown[] }>;
  /** Round trip through the gateway as the control plane measured it. */
  latencyMs: number;
}

export interface ModelStateResult {
  name: string;
  state: GatewayModelState;
  reason: string;
}

/** Who is acting: the signed-in user (uploads are theirs) and the audit actor. */
export interface ModelActor {
  userId: string;
  actor: Actor;
}
