import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { OperonError } from "@operon/protocol/errors";
import type { AccessNeed, GatewayAccessPolicy, Principal } from "../../auth/access-policy.js";
import { applyKeyPriority } from "../../auth/key-priority.js";
import { checkShadowModelAccess } from "../../auth/shadow-model-access.js";
import type { InferenceEngine } from "../../engine/engine-api.js";
import { type CallLog, authorizationOf, rejectRepositoryName, unary, watchCancel } from "./grpc-calls.js";
import type { Logger } from "@operon/protocol/logger";
import { healthHandlers } from "./grpc-health.js";
import { decodeLoadOptions } from "./grpc-infer-codec.js";
import { encodeModelInferAnswer, servePreEncodedResponses } from "./plain-model-infer-response.js";
import { GrpcDeferredDecoding, type RawMessage } from "./grpc-deferred-decoding.js";
import { DEFAULT_MAX_INFER_MESSAGE_BYTES, GrpcInferDecoding, type RawInferMessage } from "./grpc-infer-decoding.js";
import { GrpcMessageBudget } from "./grpc-message-budget.js";
import { DecodePool } from "../decode/decode-pool.js";
import { streamInfer } from "./grpc-stream-infer.js";
import {
  HEALTH_SERVICE,
  INFERENCE_SERVICE,
  loadGrpcProtos,
  type NameVersion,
  type RepositoryRequest,
} from "./grpc-wire.js";
import { uploadedLibraries } from "@operon/protocol/uploaded-libraries";
import type { SystemSharedMemory } from "../shared-memory/system-shared-memory.js";
import { sharedMemoryHandlers } from "./grpc-shared-memory.js";
import type { LoggingControl } from "../log-settings-api.js";
import { logSettingsResponse, type WireSettingValue } from "./grpc-log-settings.js";
import type { RequestTracer, TraceControl } from "../tracing-api.js";
import { traceCarrierOf, traceSettingResponse } from "./grpc-trace-setting.js";
import type { InferRequest } from "@operon/protocol/inference";

export interface GrpcFrontendOptions {
  host: string;
  /** 0 = let the OS pick a free port; the bound port is returned. */
  port: number;
  logger?: Logger;
  /** Largest request message accepted, bytes (default 256 MiB). */
  maxReceiveMessageLength?: number;
  /** Largest response message sent, bytes (default 256 MiB). */
  maxSendMessageLength?: number;
  /** How often health Watch re-checks readiness (default 1000 ms). */
  healthWatchIntervalMs?: number;
  /** Directory holding grpc_service.proto, health.proto and model_config.proto. */
  protoDir?: string;
  /** Decodes large ModelInfer messages off the event loop; default a pool of its own (closed on stop). */
  decodePool?: DecodePool;
  /** Largest ModelInfer / ModelStreamInfer message, bytes (default 64 MiB): RESOURCE_EXHAUSTED beyond. */
  maxInferMessageBytes?: number;
  /** Their bytes held at once over all calls and streams (GrpcMessageBudget); default 4 × maxInferMessageBytes. */
  maxInflightInferBytes?: number;
  /**
   * API key checks on the `authorization` metadata (auth/access-policy.ts);
   * undefined = every RPC open. Open: ServerLive, ServerReady,
   * ServerMetadata and grpc.health.v1. Admin: RepositoryModelLoad and
   * RepositoryModelUnload. Every other RPC: infer.
   */
  access?: GatewayAccessPolicy;
  /** System shared-memory regions (shared with HTTP); undefined = those RPCs answer UNSUPPORTED. */
  sharedMemory?: SystemSharedMemory;
  /** The logging extension (LogSettings, admin); undefined = UNSUPPORTED. */
  logging?: LoggingControl;
  /** The trace extension (ModelInfer spans; TraceSetting needs admin); undefined = UNSUPPORTED. */
  tracing?: { tracer: RequestTracer; control: TraceControl };
}

export interface GrpcFrontend {
  port: number;
  /** Drains in-flight calls, then force-closes whatever is left after graceMs (default 5000). */
  stop(graceMs?: number): Promise<void>;
}

const DEFAULT_MESSAGE_LIMIT = 256 * 1024 * 1024;
const DEFAULT_GRACE_MS = 5000;

export async function startGrpcFrontend(engine: InferenceEngine, options: GrpcFrontendOptions): Promise<GrpcFrontend> {
  const definition = await loadGrpcProtos(options.protoDir);
  const ownPool = options.decodePool === undefined;
  const decodePool = options.decodePool ?? new DecodePool();
  const maxInferMessageBytes = options.maxInferMessageBytes ?? DEFAULT_MAX_INFER_MESSAGE_BYTES;
  const decoding = new GrpcInferDecoding(
    definition,
    decodePool,
    maxInferMessageBytes,
    new GrpcMessageBudget(options.maxInflightInferBytes ?? 4 * maxInferMessageBytes),
  );
  const maxReceiveMessageLength = options.maxReceiveMessageLength ?? DEFAULT_MESSAGE_LIMIT;
  const deferred = new GrpcDeferredDecoding(definition, maxReceiveMessageLength);
  servePreEncodedResponses(definition);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": maxReceiveMessageLength,
    "grpc.max_send_message_length": options.maxSendMessageLength ?? DEFAULT_MESSAGE_LIMIT,
    // Channelz (grpc-js's call and socket bookkeeping for its introspection service, which Operon does not serve):
    // off, it takes a tracker of four closures and two clock reads off every call. An in-process grpc-js echo at c16
    // under callgrind ran 821k instructions a call without channelz on either side, 896k with it (2026-12-07).
    "grpc.enable_channelz": 0,
  });
  const watches = new Set<() => void>();
  server.addService(
    serviceOf(definition, INFERENCE_SERVICE),
    inferenceHandlers(
      engine,
      decoding,
      deferred,
      options.access,
      options.logger,
      options.sharedMemory,
      options.logging,
      options.tracing,
    ),
  );
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
          if (ownPool) void decodePool.close();
          resolve();
        });
      });
      return stopping;
    },
  };
}

/** The model a unary request names (NameVersion.name, RepositoryRequest.model_name); ModelInfer's is read after decoding. */
function modelNamed(request: unknown): string | undefined {
  if (typeof request !== "object" || request === null) return undefined;
  const fields = request as { name?: unknown; model_name?: unknown };
  const name = typeof fields.model_name === "string" ? fields.model_name : fields.name;
  return typeof name === "string" && name !== "" ? name : undefined;
}

function serviceOf(definition: protoLoader.PackageDefinition, name: string): grpc.ServiceDefinition {
  const service = definition[name];
  if (service === undefined) throw new Error(`gRPC protos do not define ${name}`);
  return service as unknown as grpc.ServiceDefinition;
}

// ---- Handlers ----

function inferenceHandlers(
  engine: InferenceEngine,
  decoding: GrpcInferDecoding,
  deferred: GrpcDeferredDecoding,
  access: GatewayAccessPolicy | undefined,
  logger: Logger | undefined,
  sharedMemory: SystemSharedMemory | undefined,
  logging: LoggingControl | undefined,
  tracing: { tracer: RequestTracer; control: TraceControl } | undefined,
): grpc.UntypedServiceImplementation {
  const authorize = (call: grpc.ServerUnaryCall<unknown, unknown>, need: AccessNeed): Principal | null =>
    access?.authorize(authorizationOf(call.metadata), need) ?? null;
  /** A unary RPC checked for `need` before its message is decoded (GrpcDeferredDecoding); fn gets the request and the authorized principal. */
  const guarded = <Req, Res>(
    need: AccessNeed,
    method: string,
    fn: (request: Req, call: grpc.ServerUnaryCall<RawMessage, Res>, principal: Principal | null) => Res | Promise<Res>,
  ): grpc.handleUnaryCall<RawMessage, Res> =>
    unary<RawMessage, Res>(logger, (raw, call) => {
      const principal = authorize(call, need);
      const request = deferred.decode<Req>(method, raw);
      checkShadowModelAccess(principal, modelNamed(request), need);
      return fn(request, call, principal);
    });
  /** An RPC anyone may call: its message is still held to its limit. */
  const open = <Res>(method: string, fn: () => Res): grpc.handleUnaryCall<RawMessage, Res> =>
    unary<RawMessage, Res>(logger, (raw) => {
      deferred.decode(method, raw);
      return fn();
    });
  const unsupported = (method: string, what: string, extension: string) =>
    guarded("infer", method, () => {
      throw new OperonError(
        "UNSUPPORTED",
        `${what} is not supported: this server does not offer the '${extension}' extension`,
      );
    });
  const inferOne = async (
    request: InferRequest,
    call: grpc.ServerUnaryCall<RawInferMessage, unknown>,
    principal: Principal | null,
  ): Promise<object> => {
    if (request.sharedMemory === true) {
      if (sharedMemory === undefined) {
        throw new OperonError("UNSUPPORTED", "this server does not offer the 'system_shared_memory' extension");
      }
      const use = await sharedMemory.resolve(request, principal?.keyId ?? null);
      const cancel = watchCancel(call);
      try {
        request.signal = cancel.signal;
        const response = await engine.infer(request);
        return encodeModelInferAnswer(await sharedMemory.writeOutputs(use, response), request.id);
      } finally {
        cancel.answered();
        sharedMemory.release(use);
      }
    }
    // The decoded request is this call's own object: the signal goes on it in place, no copy per call.
    const cancel = watchCancel(call);
    request.signal = cancel.signal;
    try {
      return encodeModelInferAnswer(await engine.infer(request), request.id);
    } finally {
      cancel.answered();
    }
  };
  /** ModelInfer once its caller is authorized and its message counted against the budget. */
  const modelInfer = async (
    r: RawInferMessage,
    call: grpc.ServerUnaryCall<RawInferMessage, unknown>,
    log: CallLog,
    principal: Principal | null,
  ): Promise<object> => {
    const request = await decoding.decode(r);
    // Its failure line names Triton's id too; the instance's lines carry the request id.
    if (request.id !== undefined) log.id = request.id;
    request.logId = log.requestId;
    checkShadowModelAccess(principal, request.modelName, "infer");
    applyKeyPriority(engine, request, principal);
    // The trace extension's one branch for an untraced call.
    if (tracing?.tracer.enabled === true) {
      const trace = tracing.tracer.start(request.modelName, traceCarrierOf(call.metadata), "grpc");
      if (trace !== undefined) {
        if (request.id !== undefined) trace.attributes({ "operon.request_id": request.id });
        const endInfer = trace.engine(request);
        try {
          const answer = await inferOne(request, call, principal);
          endInfer();
          trace.end();
          return answer;
        } catch (error) {
          endInfer();
          trace.end(error);
          throw error;
        }
      }
    }
    return inferOne(request, call, principal);
  };
  return {
    ServerLive: open("ServerLive", () => ({ live: engine.isLive() })),
    ServerReady: open("ServerReady", () => ({ ready: engine.isReady() })),
    ModelReady: guarded("infer", "ModelReady", (r: NameVersion) => ({
      ready: engine.isModelReady(r.name, r.version || undefined),
    })),
    ServerMetadata: open("ServerMetadata", () => engine.serverMetadata()),
    ModelMetadata: guarded("infer", "ModelMetadata", (r: NameVersion) =>
      engine.modelMetadata(r.name, r.version || undefined),
    ),
    ModelInfer: unary(logger, async (r: RawInferMessage, call, log) => {
      const principal = authorize(call, "infer");
      const release = decoding.hold(r);
      try {
        return await modelInfer(r, call, log, principal);
      } finally {
        release();
      }
    }),
    ModelStreamInfer: streamInfer(engine, decoding, access, logger),
    ModelConfig: guarded("infer", "ModelConfig", (r: NameVersion) => ({
      config: engine.modelConfig(r.name, r.version || undefined),
    })),
    ModelStatistics: guarded("infer", "ModelStatistics", (r: NameVersion) => ({
      model_stats: engine.modelStatistics(r.name || undefined, r.version || undefined),
    })),
    RepositoryIndex: guarded("infer", "RepositoryIndex", async (r: { repository_name: string; ready: boolean }) => {
      rejectRepositoryName(r.repository_name);
      const models = await engine.repositoryIndex({ ready: r.ready });
      return {
        models: models.map((m) => ({
          name: m.name,
          version: m.version ?? "",
          state: m.state ?? "",
          reason: m.reason ?? "",
        })),
      };
    }),
    RepositoryModelLoad: guarded("admin", "RepositoryModelLoad", async (r: RepositoryRequest, call, principal) => {
      rejectRepositoryName(r.repository_name);
      const load = decodeLoadOptions(r.parameters);
      await engine.loadModel(r.model_name, load);
      const libraries = uploadedLibraries(load.files);
      access?.noteModelControl({
        action: "model.load",
        target: r.model_name,
        keyId: principal?.keyId ?? null,
        transport: "grpc",
        address: call.getPeer(),
        configOverride: load.config !== undefined,
        files: [...(load.files?.keys() ?? [])],
        ...(libraries.length > 0 ? { nativeLibraries: libraries } : {}),
      });
      return {};
    }),
    RepositoryModelUnload: guarded("admin", "RepositoryModelUnload", async (r: RepositoryRequest, call, principal) => {
      rejectRepositoryName(r.repository_name);
      const dependents = r.parameters?.["unload_dependents"];
      if (dependents !== undefined && dependents.parameter_choice !== "bool_param") {
        throw new OperonError("INVALID_ARG", "unload parameter 'unload_dependents' must be a bool_param");
      }
      await engine.unloadModel(r.model_name, { unloadDependents: dependents?.bool_param ?? false });
      access?.noteModelControl({
        action: "model.unload",
        target: r.model_name,
        keyId: principal?.keyId ?? null,
        transport: "grpc",
        address: call.getPeer(),
      });
      return {};
    }),
    ...(sharedMemory !== undefined
      ? sharedMemoryHandlers(sharedMemory, guarded)
      : {
          SystemSharedMemoryStatus: unsupported(
            "SystemSharedMemoryStatus",
            "system shared memory",
            "system_shared_memory",
          ),
          SystemSharedMemoryRegister: unsupported(
            "SystemSharedMemoryRegister",
            "system shared memory",
            "system_shared_memory",
          ),
          SystemSharedMemoryUnregister: unsupported(
            "SystemSharedMemoryUnregister",
            "system shared memory",
            "system_shared_memory",
          ),
        }),
    CudaSharedMemoryStatus: unsupported("CudaSharedMemoryStatus", "CUDA shared memory", "cuda_shared_memory"),
    CudaSharedMemoryRegister: unsupported("CudaSharedMemoryRegister", "CUDA shared memory", "cuda_shared_memory"),
    CudaSharedMemoryUnregister: unsupported("CudaSharedMemoryUnregister", "CUDA shared memory", "cuda_shared_memory"),
    TraceSetting:
      tracing !== undefined
        ? guarded(
            "admin",
            "TraceSetting",
            (r: { settings?: Record<string, { value?: string[] }>; model_name?: string }) =>
              traceSettingResponse(tracing.control, r.model_name || undefined, r.settings ?? {}),
          )
        : unsupported("TraceSetting", "trace settings", "trace"),
    LogSettings:
      logging !== undefined
        ? guarded("admin", "LogSettings", (r: { settings?: Record<string, WireSettingValue> }) =>
            logSettingsResponse(logging, r.settings ?? {}),
          )
        : unsupported("LogSettings", "log settings", "logging"),
  };
}
