import type { ModelMetadata, ModelStatistics } from "@operon/protocol/inference";
import type { PreparedInputSet } from "./input-data.js";
import { PerfError } from "./perf-error.js";
import type { SequenceFlags } from "./sequence-driver.js";

/**
 * What the load generator needs from a server, whatever the protocol. A
 * client is built for one model (and optionally one version) and a fixed
 * set of prepared requests, encoded once at construction: `infer()` sends
 * the next one as is, so a call does no per-element work and the client's
 * own cost stays out of the measured latency as far as it can.
 */
export interface InferenceClient {
  /** Sends the next prepared request (cycling through them); rejects with a readable message on any failure. */
  infer(sequence?: SequenceFlags): Promise<void>;
  /** Throws PerfError UNREACHABLE / MODEL_NOT_FOUND / SERVER_ERROR. */
  modelMetadata(): Promise<ModelMetadata>;
  modelConfig(): Promise<ModelConfigSummary>;
  /** The statistics extension's entries for the model (every version unless one was given). */
  modelStatistics(): Promise<ModelStatistics[]>;
  /** The system shared-memory extension: register a POSIX shm object (key "/name") as region `name`. */
  registerSystemSharedMemory(name: string, key: string, byteSize: number): Promise<void>;
  unregisterSystemSharedMemory(name: string): Promise<void>;
  /** Closes connections; idempotent. In-flight calls may fail. */
  close(): void;
}

/** The parts of the model configuration that perf uses. */
export interface ModelConfigSummary {
  /** 0 = the model does not batch: request shapes have no batch dimension. */
  maxBatchSize: number;
  /** The config has `sequence_batching`: every request needs a correlation id (perf sends sequences). */
  sequenceBatching: boolean;
  /** `model_transaction_policy { decoupled: true }`: only a stream can carry its responses (--streaming). */
  decoupled: boolean;
  /** `response_cache { enable: true }`: the server answers repeated requests from its cache. */
  responseCache: boolean;
}

export type PerfProtocol = "http" | "grpc";

export interface InferenceClientOptions {
  /** host:port (a scheme such as http:// is accepted and ignored for gRPC). */
  url: string;
  model: string;
  /** Empty or undefined: the server picks (Triton: the latest ready version). */
  version?: string;
  /** The requests infer() cycles through; empty for a client that only reads metadata and statistics. */
  inputSets?: readonly PreparedInputSet[];
  /** HTTP: send tensors with the binary_tensor_data extension (default true); false = JSON data. */
  binaryData?: boolean;
  /** HTTP: the most sockets to open (at least the concurrency; default unlimited). */
  maxConnections?: number;
  /** Deadline for metadata, config and statistics calls (default 10 s). */
  controlTimeoutMs?: number;
  /** gRPC: the directory holding grpc_service.proto (default: @operon/protocol's proto/). */
  protoDir?: string;
  /**
   * Sent with every call: HTTP headers, or gRPC metadata under the same
   * (lower-cased) names. For a gateway that wants `authorization: Bearer <key>`.
   */
  headers?: Readonly<Record<string, string>>;
  /** --shared-memory system: requests name these windows instead of carrying tensor bytes (perf-shared-memory.ts). */
  sharedMemory?: PerfSharedMemoryPlan;
  /** gRPC only: send every request over one ModelStreamInfer call (perf_analyzer's --streaming). */
  streaming?: boolean;
  /** The request parameter `priority` on every inference (Triton's priority levels, 1 = highest); unset = none. */
  priority?: number;
}

export const DEFAULT_CONTROL_TIMEOUT_MS = 10_000;

export const DEFAULT_PORTS: Record<PerfProtocol, number> = { http: 8000, grpc: 8001 };

export interface ServerAddress {
  /** Host name or address, IPv6 without brackets. */
  host: string;
  port: number;
  /** host:port as a gRPC target or for messages (IPv6 in brackets). */
  target: string;
}

/**
 * Parses -u: `host:port`, `[v6]:port`, or a URL (`http://host:port`). A
 * missing port is the protocol's default (8000 HTTP, 8001 gRPC). Paths
 * and https are refused: Operon serves plain HTTP at the root.
 */
export function parseServerAddress(url: string, protocol: PerfProtocol): ServerAddress {
  const text = url.trim();
  let parsed: URL;
  try {
    parsed = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    throw new PerfError("BAD_OPTIONS", `-u '${url}': expected host:port`);
  }
  if (!["http:", "grpc:"].includes(parsed.protocol)) {
    throw new PerfError("BAD_OPTIONS", `-u '${url}': only plain HTTP and gRPC (no TLS) are supported`);
  }
  if (
    (parsed.pathname !== "/" && parsed.pathname !== "") ||
    parsed.search !== "" ||
    parsed.username !== "" ||
    parsed.hostname === ""
  ) {
    throw new PerfError("BAD_OPTIONS", `-u '${url}': expected host:port, without a path or credentials`);
  }
  const port = parsed.port === "" ? DEFAULT_PORTS[protocol] : Number(parsed.port);
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host, port, target: `${parsed.hostname}:${port}` };
}

/** Error codes of a connection that never got an answer. */
const CONNECT_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "ECONNRESET",
  "EADDRNOTAVAIL",
]);

export function isConnectError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && CONNECT_ERROR_CODES.has(code);
}

/** A tensor's window in a registered system shared-memory region. */
export interface SharedMemoryWindow {
  region: string;
  offset: number;
  byteSize: number;
}

/** Where each prepared request's tensors are, with --shared-memory system (perf-shared-memory.ts makes it). */
export interface PerfSharedMemoryPlan {
  /** Per prepared request, per input (in the set's order): where its bytes are. */
  inputs: SharedMemoryWindow[][];
  /** Every model output, each with its own window. */
  outputs: Array<SharedMemoryWindow & { name: string }>;
}
