import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { isDataType } from "@operon/protocol/datatypes";
import { OperonError, grpcStatusOf, isOperonError } from "@operon/protocol/errors";
import { type InferTensorContents, tensorDataFromContents } from "@operon/protocol/grpc-tensor-contents";
import { PROTO_DIR } from "@operon/protocol/proto-dir";
import type {
  InferInput,
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  RequestedOutput,
} from "@operon/protocol/inference";
import { assertTensorByteSize, type Parameters as InferParameters, type ParameterValue } from "@operon/protocol/tensor";
import type { AccessNeed, GatewayAccessPolicy, Principal } from "../../auth/access-policy.js";
import { applyKeyPriority } from "../../auth/key-priority.js";
import type { InferenceEngine } from "../../engine/engine-api.js";

export interface GrpcFrontendLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface GrpcFrontendOptions {
  host: string;
  /** 0 = let the OS pick a free port; the bound port is returned. */
  port: number;
  logger?: GrpcFrontendLogger;
  /** Largest request message accepted, bytes (default 256 MiB). */
  maxReceiveMessageLength?: number;
  /** Largest response message sent, bytes (default 256 MiB). */
  maxSendMessageLength?: number;
  /** How often health Watch re-checks readiness (default 1000 ms). */
  healthWatchIntervalMs?: number;
  /** Directory holding grpc_service.proto, health.proto and model_config.proto. */
  protoDir?: string;
  /**
   * API key checks on the `authorization` metadata (auth/access-policy.ts);
   * undefined = every RPC open. Open: ServerLive, ServerReady,
   * ServerMetadata and grpc.health.v1. Admin: RepositoryModelLoad and
   * RepositoryModelUnload. Every other RPC: infer.
   */
  access?: GatewayAccessPolicy;
}

export interface GrpcFrontend {
  port: number;
  /** Drains in-flight calls, then force-closes whatever is left after graceMs (default 5000). */
  stop(graceMs?: number): Promise<void>;
}

const DEFAULT_MESSAGE_LIMIT = 256 * 1024 * 1024;
const DEFAULT_GRACE_MS = 5000;
const INFERENCE_SERVICE = "inference.GRPCInferenceService";
const HEALTH_SERVICE = "grpc.health.v1.Health";

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

export async function startGrpcFrontend(engine: InferenceEngine, options: GrpcFrontendOptions): Promise<GrpcFrontend> {
  const definition = await loadGrpcProtos(options.protoDir);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": options.maxReceiveMessageLength ?? DEFAULT_MESSAGE_LIMIT,
    "grpc.max_send_message_length": options.maxSendMessageLength ?? DEFAULT_MESSAGE_LIMIT,
  });
  const watches = new Set<() => void>();
  server.addService(serviceOf(definition, INFERENCE_SERVICE), inferenceHandlers(engine, options.access, options.logger));
  server.addService(
    serviceOf(definition, HEALTH_SERVICE),
    healthHandlers(engine, watches, options.healthWatchIntervalMs ?? 1000, options.logger),
  );

  const address = `${options.host.includes(":") && !options.host.startsWith("[") ? `[${options.host}]` : options.host}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(new Error(`gRPC frontend could not bind ${address}: ${error.message}`, { cause: error }));
      else resolve(bound);
    });
  });
  options.logger?.info({ host: options.host, port }, "gRPC frontend listening");

  let stopping: Promise<void> | undefined;
  return {
    port,
    stop(graceMs = DEFAULT_GRACE_MS) {
      stopping ??= new Promise<void>((resolve) => {
        // Watch streams never end on their own; close them so draining can finish.
        for (const close of [...watches]) close();
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return stopping;
    },
  };
}

function serviceOf(definition: protoLoader.PackageDefinition, name: string): grpc.ServiceDefinition {
  const service = definition[name];
  if (service === undefined) throw new Error(`gRPC protos do not define ${name}`);
  return service as unknown as grpc.ServiceDefinition;
}

// ---- Wire shapes as proto-loader decodes them (keepCase, longs: String, oneofs) ----

interface WireParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: string | number;
  string_param?: string;
  double_param?: number;
  uint64_param?: string | number;
  bytes_param?: Buffer;
}

type WireParameters = Record<string, WireParameter> | undefined;

interface WireInput {
  name: string;
  datatype: string;
  shape: Array<string | number>;
  parameters?: WireParameters;
  contents?: InferTensorContents | null;
}

interface WireInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: WireParameters;
  inputs?: WireInput[];
  outputs?: Array<{ name: string; parameters?: WireParameters }>;
  raw_input_contents?: Buffer[];
}

interface NameVersion {
  name: string;
  version: string;
}

interface RepositoryRequest {
  repository_name: string;
  model_name: string;
  parameters?: WireParameters;
}

// ---- Handlers ----

function inferenceHandlers(
  engine: InferenceEngine,
  access: GatewayAccessPolicy | undefined,
  logger?: GrpcFrontendLogger,
): grpc.UntypedServiceImplementation {
  /** A unary RPC checked for `need` before it runs; fn gets the authorized principal. */
  const guarded = <Req, Res>(
    need: AccessNeed,
    fn: (request: Req, call: grpc.ServerUnaryCall<Req, Res>, principal: Principal | null) => Res | Promise<Res>,
  ): grpc.handleUnaryCall<Req, Res> =>
    unary<Req, Res>(logger, (request, call) => fn(request, call, access?.authorize(authorizationOf(call.metadata), need) ?? null));
  const unsupported = (what: string, extension: string) =>
    guarded("infer", () => {
      throw new OperonError("UNSUPPORTED", `${what} is not supported: this server does not offer the '${extension}' extension`);
    });
  return {
    ServerLive: unary(logger, () => ({ live: engine.isLive() })),
    ServerReady: unary(logger, () => ({ ready: engine.isReady() })),
    ModelReady: guarded("infer", (r: NameVersion) => ({ ready: engine.isModelReady(r.name, r.version || undefined) })),
    ServerMetadata: unary(logger, () => engine.serverMetadata()),
    ModelMetadata: guarded("infer", (r: NameVersion) => engine.modelMetadata(r.name, r.version || undefined)),
    ModelInfer: guarded("infer", async (r: WireInferRequest, call, principal) => {
      const request = decodeInferRequest(r);
      applyKeyPriority(engine, request, principal);
      const response = await engine.infer({ ...request, signal: abortSignalOf(call) });
      return encodeInferResponse(response, request.id);
    }),
    ModelStreamInfer: streamInfer(engine, access, logger),
    ModelConfig: guarded("infer", (r: NameVersion) => ({ config: engine.modelConfig(r.name, r.version || undefined) })),
    ModelStatistics: guarded("infer", (r: NameVersion) => ({
      model_stats: engine.modelStatistics(r.name || undefined, r.version || undefined),
    })),
    RepositoryIndex: guarded("infer", async (r: { repository_name: string; ready: boolean }) => {
      rejectRepositoryName(r.repository_name);
      const models = await engine.repositoryIndex({ ready: r.ready });
      return {
        models: models.map((m) => ({ name: m.name, version: m.version ?? "", state: m.state ?? "", reason: m.reason ?? "" })),
      };
    }),
    RepositoryModelLoad: guarded("admin", async (r: RepositoryRequest, call, principal) => {
      rejectRepositoryName(r.repository_name);
      const load = decodeLoadOptions(r.parameters);
      await engine.loadModel(r.model_name, load);
      access?.noteModelControl({
        action: "model.load",
        target: r.model_name,
        keyId: principal?.keyId ?? null,
        transport: "grpc",
        address: call.getPeer(),
        configOverride: load.config !== undefined,
        files: [...(load.files?.keys() ?? [])],
      });
      return {};
    }),
    RepositoryModelUnload: guarded("admin", async (r: RepositoryRequest, call, principal) => {
      rejectRepositoryName(r.repository_name);
      const dependents = r.parameters?.["unload_dependents"];
      if (dependents !== undefined && dependents.parameter_choice !== "bool_param") {
        throw new OperonError("INVALID_ARG", "unload parameter 'unload_dependents' must be a bool_param");
      }
      await engine.unloadModel(r.model_name, { unloadDependents: dependents?.bool_param ?? false });
      access?.noteModelControl({ action: "model.unload", target: r.model_name, keyId: principal?.keyId ?? null, transport: "grpc", address: call.getPeer() });
      return {};
    }),
    SystemSharedMemoryStatus: unsupported("system shared memory", "system_shared_memory"),
    SystemSharedMemoryRegister: unsupported("system shared memory", "system_shared_memory"),
    SystemSharedMemoryUnregister: unsupported("system shared memory", "system_shared_memory"),
    CudaSharedMemoryStatus: unsupported("CUDA shared memory", "cuda_shared_memory"),
    CudaSharedMemoryRegister: unsupported("CUDA shared memory", "cuda_shared_memory"),
    CudaSharedMemoryUnregister: unsupported("CUDA shared memory", "cuda_shared_memory"),
    TraceSetting: unsupported("trace settings", "trace"),
    LogSettings: unsupported("log settings", "logging"),
  };
}

/**
 * The call's `authorization` metadata (what HTTP sends as the Authorization
 * header); undefined when absent. More than one entry is refused: which one
 * counts would be a guess.
 */
function authorizationOf(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get("authorization");
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new OperonError("UNAUTHENTICATED", "send one 'authorization' metadata entry ('Bearer <api key>'), not several");
  const value = values[0]!;
  return typeof value === "string" ? value : value.toString("utf8");
}

/** Runs fn and answers with its value, or with the gRPC status of what it threw (never throws synchronously). */
function unary<Req, Res>(
  logger: GrpcFrontendLogger | undefined,
  fn: (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Res | Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => fn(call.request, call))
      .then(
        (value) => callback(null, value),
        (error: unknown) => callback(statusOf(error, call.getPath(), logger)),
      );
  };
}

function statusOf(error: unknown, method: string, logger?: GrpcFrontendLogger): Partial<grpc.StatusObject> {
  if (isOperonError(error)) return { code: grpcStatusOf(error.kind), details: error.message };
  logger?.error({ err: error, method }, "gRPC call failed unexpectedly");
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

function abortSignalOf(call: { cancelled: boolean; once(event: "cancelled", listener: () => void): unknown }): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort(cancelledError());
  if (call.cancelled) abort();
  else call.once("cancelled", abort);
  return controller.signal;
}

function cancelledError(): OperonError {
  return new OperonError("CANCELLED", "the client cancelled the call");
}

function rejectRepositoryName(name: string): void {
  if (name !== "") throw new OperonError("UNSUPPORTED", "'repository_name' specification is not supported");
}

/** Request parameter (Triton's): send the final flag of a decoupled stream as an empty response of its own. */
const EMPTY_FINAL_PARAMETER = "triton_enable_empty_final_response";
/** Response parameter (Triton's) on every response of a decoupled model: true on the request's last one. */
const FINAL_RESPONSE_PARAMETER = "triton_final_response";

/**
 * Bidirectional stream: requests run concurrently and their responses are
 * written as soon as they come (not in request order), each with its
 * request's id. A non-decoupled model answers each request once. A
 * decoupled model answers with every response it sends, in order, each
 * marked with the bool parameter triton_final_response (true on the last);
 * a final flag that comes without outputs is written as an empty response
 * only when the request asked for it (triton_enable_empty_final_response:
 * true), as Triton does. Failures become error_message entries (with the
 * request's id) and the stream stays open; the call ends once the client
 * has half-closed and nothing is in flight. A cancelled call cancels its
 * requests: queued ones are dropped, running ones' later responses too.
 */
function streamInfer(
  engine: InferenceEngine,
  access: GatewayAccessPolicy | undefined,
  logger?: GrpcFrontendLogger,
): grpc.handleBidiStreamingCall<WireInferRequest, object> {
  return (call) => {
    // The key is checked once, when the stream opens (a bad one fails the call);
    // each request on it then counts against the key's quota (admit), and fails alone when over it.
    let principal: Principal | null;
    try {
      principal = access?.authenticate(authorizationOf(call.metadata), "infer") ?? null;
    } catch (error) {
      call.emit("error", statusOf(error, call.getPath(), logger));
      return;
    }
    const inFlight = new Set<AbortController>();
    let clientDone = false;
    let closed = false;
    const finishIfIdle = () => {
      if (clientDone && inFlight.size === 0 && !closed) {
        closed = true;
        if (!call.destroyed) call.end();
      }
    };
    const write = (reply: object): void => {
      if (!closed && !call.cancelled && !call.destroyed) call.write(reply);
    };
    // The id lets the client tell which request failed (Triton does the same).
    const errorReply = (message: WireInferRequest, error: unknown, final?: boolean): object => {
      if (!isOperonError(error)) logger?.error({ err: error, model: message.model_name }, "stream inference failed unexpectedly");
      return {
        error_message: error instanceof Error ? error.message : String(error),
        infer_response: {
          model_name: message.model_name,
          model_version: message.model_version,
          id: message.id,
          ...(final !== undefined ? { parameters: { [FINAL_RESPONSE_PARAMETER]: { bool_param: final } } } : {}),
        },
      };
    };
    const runOne = async (message: WireInferRequest, signal: AbortSignal): Promise<void> => {
      let request: InferRequest;
      let emptyFinal: boolean;
      try {
        if (principal !== null) access?.admit(principal);
        request = decodeInferRequest(message);
        emptyFinal = takeEmptyFinalFlag(request.parameters);
        applyKeyPriority(engine, request, principal);
      } catch (error) {
        write(errorReply(message, error));
        return;
      }
      if (!engine.isDecoupled(request.modelName, request.modelVersion)) {
        try {
          const response = await engine.infer({ ...request, signal });
          write({ error_message: "", infer_response: encodeInferResponse(response, request.id) });
        } catch (error) {
          write(errorReply(message, error));
        }
        return;
      }
      try {
        await engine.inferStream({ ...request, signal }, (response, final) => {
          if (isOperonError(response)) {
            write(errorReply(message, response, final));
            return;
          }
          if (final && response.outputs.length === 0 && !emptyFinal) return;
          const parameters = { ...response.parameters, [FINAL_RESPONSE_PARAMETER]: final };
          write({ error_message: "", infer_response: encodeInferResponse({ ...response, parameters }, request.id) });
        });
      } catch (error) {
        write(errorReply(message, error, true));
      }
    };

    call.on("data", (message: WireInferRequest) => {
      const controller = new AbortController();
      inFlight.add(controller);
      void runOne(message, controller.signal).then(() => {
        inFlight.delete(controller);
        finishIfIdle();
      });
    });
    call.on("end", () => {
      clientDone = true;
      finishIfIdle();
    });
    call.on("cancelled", () => {
      closed = true;
      for (const controller of inFlight) controller.abort(cancelledError());
    });
    call.on("error", (error: unknown) => logger?.warn({ err: error }, "gRPC inference stream error"));
  };
}

/** Takes triton_enable_empty_final_response out of the parameters (the frontend's business, not the model's). */
function takeEmptyFinalFlag(parameters: InferParameters): boolean {
  const value = parameters[EMPTY_FINAL_PARAMETER];
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw new OperonError("INVALID_ARG", `parameter '${EMPTY_FINAL_PARAMETER}' must be a bool_param`);
  delete parameters[EMPTY_FINAL_PARAMETER];
  return value;
}

// ---- Health ----

type ServingStatus = "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

async function servingStatus(engine: InferenceEngine, service: string): Promise<ServingStatus> {
  if (service === "" || service === INFERENCE_SERVICE) return engine.isReady() ? "SERVING" : "NOT_SERVING";
  if (engine.isModelReady(service)) return "SERVING";
  // Only a model that is not ready costs a repository read.
  const index = await engine.repositoryIndex({});
  return index.some((entry) => entry.name === service) ? "NOT_SERVING" : "SERVICE_UNKNOWN";
}

function healthHandlers(
  engine: InferenceEngine,
  watches: Set<() => void>,
  intervalMs: number,
  logger?: GrpcFrontendLogger,
): grpc.UntypedServiceImplementation {
  const watch: grpc.handleServerStreamingCall<{ service: string }, object> = (call) => {
    let last: string | undefined;
    let checking = false;
    let done = false;
    const check = async () => {
      if (checking) return;
      checking = true;
      let status: string;
      try {
        status = await servingStatus(engine, call.request.service);
      } catch (error) {
        logger?.warn({ err: error }, "health watch check failed");
        status = "UNKNOWN";
      }
      checking = false;
      if (status !== last && !done) {
        last = status;
        call.write({ status });
      }
    };
    const timer = setInterval(() => void check(), intervalMs);
    const release = () => {
      done = true;
      clearInterval(timer);
      watches.delete(close);
    };
    const close = () => {
      const wasOpen = !done && !call.cancelled;
      release();
      if (wasOpen) call.end();
    };
    watches.add(close);
    call.on("cancelled", release);
    call.on("error", () => release());
    void check();
  };
  return {
    Check: unary(logger, async (r: { service: string }) => {
      const status = await servingStatus(engine, r.service);
      if (status === "SERVICE_UNKNOWN") throw new OperonError("NOT_FOUND", `unknown service or model '${r.service}'`);
      return { status };
    }),
    Watch: watch,
  };
}

// ---- Inference codec ----

function decodeInferRequest(message: WireInferRequest): InferRequest {
  const inputs = message.inputs ?? [];
  const raw = message.raw_input_contents ?? [];
  if (raw.length > 0 && raw.length !== inputs.length) {
    throw new OperonError(
      "INVALID_ARG",
      `expected ${inputs.length} raw_input_contents (one per input, in order), got ${raw.length}`,
    );
  }
  const outputs: RequestedOutput[] = (message.outputs ?? []).map((output) =>
    withParameters({ name: output.name }, decodeParameters(output.parameters, `output '${output.name}': `)),
  );
  return {
    modelName: message.model_name,
    ...(message.model_version ? { modelVersion: message.model_version } : {}),
    ...(message.id ? { id: message.id } : {}),
    parameters: decodeParameters(message.parameters, ""),
    inputs: inputs.map((input, i) => decodeInput(input, raw.length > 0 ? raw[i] : undefined)),
    ...(outputs.length > 0 ? { outputs } : {}),
  };
}

function decodeInput(input: WireInput, raw: Buffer | undefined): InferInput {
  const { name } = input;
  const datatype = input.datatype;
  if (!isDataType(datatype)) throw new OperonError("INVALID_ARG", `input '${name}': unknown datatype '${datatype}'`);
  const shape = input.shape.map((dim) => {
    const n = typeof dim === "number" ? dim : Number(dim);
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new OperonError("INVALID_ARG", `input '${name}': invalid shape dimension ${dim}`);
    }
    return n;
  });
  let data: Buffer;
  if (raw !== undefined) {
    if (input.contents != null) {
      throw new OperonError("INVALID_ARG", `input '${name}': contents must not be set when raw_input_contents is used`);
    }
    data = raw;
    assertTensorByteSize({ name, datatype, shape, data });
  } else {
    data = tensorDataFromContents({ name, datatype, shape }, input.contents ?? {});
  }
  return withParameters({ name, datatype, shape, data }, decodeParameters(input.parameters, `input '${name}': `));
}

function withParameters<T extends object>(target: T, parameters: InferParameters): T & { parameters?: InferParameters } {
  return Object.keys(parameters).length > 0 ? { ...target, parameters } : target;
}

function encodeInferResponse(response: InferResponse, requestId: string | undefined): object {
  return {
    model_name: response.modelName,
    model_version: response.modelVersion,
    id: response.id ?? requestId ?? "",
    parameters: encodeParameters(response.parameters),
    outputs: response.outputs.map((output) => ({
      name: output.name,
      datatype: output.datatype,
      shape: output.shape,
      // Tensors may carry per-output parameters (e.g. from classification).
      parameters: encodeParameters((output as { parameters?: InferParameters }).parameters),
    })),
    raw_output_contents: response.outputs.map((output) => output.data),
  };
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** 64-bit values become numbers when exact, bigints otherwise. */
function integerValue(value: string | number | undefined): number | bigint {
  const big = BigInt(value ?? 0);
  return big >= MIN_SAFE && big <= MAX_SAFE ? Number(big) : big;
}

function decodeParameters(map: WireParameters, where: string): InferParameters {
  const out: InferParameters = {};
  for (const [key, parameter] of Object.entries(map ?? {})) {
    switch (parameter.parameter_choice) {
      case "bool_param":
        out[key] = parameter.bool_param ?? false;
        break;
      case "string_param":
        out[key] = parameter.string_param ?? "";
        break;
      case "double_param":
        out[key] = parameter.double_param ?? 0;
        break;
      case "int64_param":
        out[key] = integerValue(parameter.int64_param);
        break;
      case "uint64_param":
        out[key] = integerValue(parameter.uint64_param);
        break;
      default:
        throw new OperonError("INVALID_ARG", `${where}parameter '${key}' has no value`);
    }
  }
  return out;
}

function encodeParameter(key: string, value: ParameterValue): WireParameter {
  switch (typeof value) {
    case "boolean":
      return { bool_param: value };
    case "string":
      return { string_param: value };
    case "number":
      return Number.isSafeInteger(value) ? { int64_param: value } : { double_param: value };
    default:
      if (value >= INT64_MIN && value <= INT64_MAX) return { int64_param: value.toString() };
      if (value > INT64_MAX && value <= UINT64_MAX) return { uint64_param: value.toString() };
      throw new OperonError("INTERNAL", `parameter '${key}' (${value}) does not fit in 64 bits`);
  }
}

function encodeParameters(parameters: InferParameters | undefined): Record<string, WireParameter> {
  const out: Record<string, WireParameter> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) out[key] = encodeParameter(key, value);
  return out;
}

function decodeLoadOptions(parameters: WireParameters): ModelLoadOptions {
  const options: ModelLoadOptions = {};
  const files = new Map<string, Buffer>();
  for (const [key, parameter] of Object.entries(parameters ?? {})) {
    if (key === "config") {
      if (parameter.parameter_choice !== "string_param") {
        throw new OperonError("INVALID_ARG", "load parameter 'config' must be a string_param holding the model config JSON");
      }
      options.config = parameter.string_param ?? "";
    } else if (key.startsWith("file:")) {
      const path = key.slice("file:".length);
      if (parameter.parameter_choice !== "bytes_param" || path === "") {
        throw new OperonError("INVALID_ARG", `load parameter '${key}' must be 'file:<version>/<path>' with a bytes_param`);
      }
      files.set(path, parameter.bytes_param ?? Buffer.alloc(0));
    } else {
      throw new OperonError("INVALID_ARG", `unrecognized load parameter '${key}'`);
    }
  }
  if (files.size > 0) {
    if (options.config === undefined) {
      throw new OperonError("INVALID_ARG", "load parameter 'config' is required when 'file:' parameters are given");
    }
    options.files = files;
  }
  return options;
}
