import { PERF_TRAFFIC_PARAMETER, PERF_TRAFFIC_VALUE } from "@operon/protocol/perf-traffic";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type {
  BatchStatistics,
  DurationStat,
  ModelMetadata,
  ModelStatistics,
  TensorMetadata,
} from "@operon/protocol/inference";
import {
  DEFAULT_CONTROL_TIMEOUT_MS,
  type InferenceClient,
  type InferenceClientOptions,
  type ModelConfigSummary,
  parseServerAddress,
} from "./inference-client.js";
import type { SharedMemoryWindow } from "./inference-client.js";
import type { SequenceFlags } from "./sequence-driver.js";
import { PerfError } from "./perf-error.js";
import { GrpcInferStream } from "./grpc-infer-stream.js";
import { PROTO_DIR } from "@operon/protocol/proto-dir";

/**
 * Loader options matching the server's (packages/gateway grpc-frontend):
 * 64-bit integers decode as decimal strings, normalised to numbers here.
 */
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};
const SERVICE = "inference.GRPCInferenceService";
/** No message size limits: perf sends whatever tensors the model takes. */
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
};

/** @operon/protocol's proto/ directory. */
export function defaultProtoDir(): string {
  return PROTO_DIR;
}

type Method = grpc.MethodDefinition<object, unknown>;

/**
 * inference.GRPCInferenceService over one HTTP/2 channel. Each prepared
 * ModelInferRequest carries its tensors in `raw_input_contents` and is
 * serialised to protobuf bytes once, at construction; infer() hands those
 * bytes to the channel as they are and does not decode the response.
 */
export class GrpcInferenceClient implements InferenceClient {
  private readonly client: grpc.Client;
  private readonly target: string;
  private readonly methods: Record<
    | "ModelInfer"
    | "ModelStreamInfer"
    | "ModelMetadata"
    | "ModelConfig"
    | "ModelStatistics"
    | "SystemSharedMemoryRegister"
    | "SystemSharedMemoryUnregister",
    Method
  >;
  private readonly prepared: Buffer[];
  private readonly controlTimeoutMs: number;
  private readonly version: string;
  private readonly description: string;
  private readonly metadata: grpc.Metadata;
  private next = 0;
  private closed = false;
  /** --streaming: requests go over one ModelStreamInfer call instead of unary ModelInfer calls. */
  private readonly stream: GrpcInferStream | undefined;

  static async create(options: InferenceClientOptions): Promise<GrpcInferenceClient> {
    const address = parseServerAddress(options.url, "grpc");
    const definition = await protoLoader.load("grpc_service.proto", {
      ...LOADER_OPTIONS,
      includeDirs: [options.protoDir ?? defaultProtoDir()],
    });
    const service = definition[SERVICE] as unknown as Record<string, Method> | undefined;
    if (service === undefined) throw new Error(`grpc_service.proto does not define ${SERVICE}`);
    return new GrpcInferenceClient(address.target, service, options);
  }

  private constructor(
    target: string,
    service: Record<string, Method>,
    private readonly options: InferenceClientOptions,
  ) {
    this.target = target;
    const method = (name: string): Method => {
      const found = service[name];
      if (found === undefined) throw new Error(`${SERVICE} has no method ${name}`);
      return found;
    };
    this.methods = {
      SystemSharedMemoryRegister: method("SystemSharedMemoryRegister"),
      SystemSharedMemoryUnregister: method("SystemSharedMemoryUnregister"),
      ModelInfer: method("ModelInfer"),
      ModelStreamInfer: method("ModelStreamInfer"),
      ModelMetadata: method("ModelMetadata"),
      ModelConfig: method("ModelConfig"),
      ModelStatistics: method("ModelStatistics"),
    };
    this.version = options.version ?? "";
    this.description = `model '${options.model}'${this.version === "" ? "" : ` version ${this.version}`}`;
    this.controlTimeoutMs = options.controlTimeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS;
    this.client = new grpc.Client(target, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    this.metadata = new grpc.Metadata();
    for (const [name, value] of Object.entries(options.headers ?? {})) this.metadata.set(name.toLowerCase(), value);
    this.stream =
      options.streaming === true
        ? new GrpcInferStream(this.client, this.methods.ModelStreamInfer, this.metadata)
        : undefined;
    const perfTraffic = {
      [PERF_TRAFFIC_PARAMETER]: { string_param: PERF_TRAFFIC_VALUE },
      ...(options.priority !== undefined ? { priority: { uint64_param: String(options.priority) } } : {}),
    };
    const shm = options.sharedMemory;
    this.prepared = (options.inputSets ?? []).map((set, i) =>
      this.methods.ModelInfer.requestSerialize(
        shm === undefined
          ? {
              model_name: options.model,
              model_version: this.version,
              inputs: set.map((input) => ({ name: input.name, datatype: input.datatype, shape: input.shape })),
              // Perf traffic is not user traffic: the gateway counts it apart (perf-traffic.ts).
              parameters: perfTraffic,
              raw_input_contents: set.map((input) => input.data),
            }
          : {
              // Tensors in shared memory: no raw_input_contents entry for them (as Triton's clients send it).
              model_name: options.model,
              model_version: this.version,
              parameters: perfTraffic,
              inputs: set.map((input, j) => ({
                name: input.name,
                datatype: input.datatype,
                shape: input.shape,
                parameters: windowParameters(shm.inputs[i]![j]!),
              })),
              outputs: shm.outputs.map((output) => ({ name: output.name, parameters: windowParameters(output) })),
            },
      ),
    );
  }

  infer(sequence?: SequenceFlags): Promise<void> {
    const prepared = this.prepared[this.next];
    if (prepared === undefined) return Promise.reject(new Error("no inference request was prepared for this client"));
    this.next = this.next + 1 === this.prepared.length ? 0 : this.next + 1;
    if (this.stream !== undefined) {
      return this.stream.send(prepared, (id) => this.streamExtras(id, sequence));
    }
    const body = sequence === undefined ? prepared : Buffer.concat([prepared, this.sequenceParameters(sequence)]);
    return new Promise<void>((resolve, reject) => {
      this.client.makeUnaryRequest<Buffer, undefined>(
        this.methods.ModelInfer.path,
        passThrough,
        ignoreResponse,
        body,
        this.metadata,
        (error) => {
          if (error)
            reject(new Error(`gRPC ${grpc.status[error.code] ?? error.code}: ${error.details}`, { cause: error }));
          else resolve();
        },
      );
    });
  }

  /**
   * A serialised ModelInferRequest holding only the sequence controls.
   * Appended to a prepared request it adds these map entries to its
   * parameters (protobuf merges concatenated messages), so the tensors
   * are not encoded again.
   */
  private sequenceParameters(sequence: SequenceFlags): Buffer {
    return this.methods.ModelInfer.requestSerialize({ parameters: sequenceParameterEntries(sequence) });
  }

  /** A streamed request's id, its ask for an empty final response (so every request sees its end), and its sequence controls. */
  private streamExtras(id: string, sequence: SequenceFlags | undefined): Buffer {
    return this.methods.ModelInfer.requestSerialize({
      id,
      parameters: {
        triton_enable_empty_final_response: { bool_param: true },
        ...(sequence !== undefined ? sequenceParameterEntries(sequence) : {}),
      },
    });
  }

  async modelMetadata(): Promise<ModelMetadata> {
    const response = (await this.control("ModelMetadata", {
      name: this.options.model,
      version: this.version,
    })) as WireMetadata;
    return {
      name: response.name,
      versions: response.versions ?? [],
      platform: response.platform ?? "",
      inputs: (response.inputs ?? []).map(tensorMetadata),
      outputs: (response.outputs ?? []).map(tensorMetadata),
    };
  }

  async modelConfig(): Promise<ModelConfigSummary> {
    const response = (await this.control("ModelConfig", { name: this.options.model, version: this.version })) as {
      config?: {
        max_batch_size?: number | string;
        sequence_batching?: object | null;
        model_transaction_policy?: { decoupled?: boolean } | null;
        response_cache?: { enable?: boolean } | null;
      };
    };
    return {
      maxBatchSize: Number(response.config?.max_batch_size ?? 0) || 0,
      sequenceBatching:
        typeof response.config?.sequence_batching === "object" && response.config.sequence_batching !== null,
      decoupled: response.config?.model_transaction_policy?.decoupled === true,
      responseCache: response.config?.response_cache?.enable === true,
    };
  }

  async modelStatistics(): Promise<ModelStatistics[]> {
    const response = (await this.control("ModelStatistics", { name: this.options.model, version: this.version })) as {
      model_stats?: WireStatistics[];
    };
    return (response.model_stats ?? []).map(statistics);
  }

  async registerSystemSharedMemory(name: string, key: string, byteSize: number): Promise<void> {
    await this.control("SystemSharedMemoryRegister", { name, key, offset: 0, byte_size: byteSize });
  }

  async unregisterSystemSharedMemory(name: string): Promise<void> {
    await this.control("SystemSharedMemoryUnregister", { name });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stream?.close();
    this.client.close();
  }

  /** A metadata/config/statistics call with a deadline, its failures mapped to PerfError codes. */
  private control(name: keyof GrpcInferenceClient["methods"], request: object): Promise<unknown> {
    const method = this.methods[name];
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        this.metadata,
        { deadline: Date.now() + this.controlTimeoutMs },
        (error, response) => {
          if (!error) resolve(response);
          else reject(this.controlError(name, error));
        },
      );
    });
  }

  private controlError(name: string, error: grpc.ServiceError): PerfError {
    const where = `the gRPC server at ${this.target}`;
    const details = error.details.replace(/\s*Resolution note:\s*$/, "");
    switch (error.code) {
      case grpc.status.UNAVAILABLE:
        // The channel's own failure (nothing listening, no route) versus a server that answered UNAVAILABLE.
        return /No connection established|connect|Name resolution|DNS|ECONNREFUSED/i.test(details)
          ? new PerfError("UNREACHABLE", `cannot connect to ${where}: ${details}`, { cause: error })
          : new PerfError("SERVER_ERROR", `${name} at ${where} failed: ${details}`, { cause: error });
      case grpc.status.DEADLINE_EXCEEDED:
        return new PerfError("UNREACHABLE", `${where} did not answer ${name} within ${this.controlTimeoutMs} ms`, {
          cause: error,
        });
      case grpc.status.NOT_FOUND:
        return new PerfError("MODEL_NOT_FOUND", `${this.description} is not available at ${where}: ${details}`, {
          cause: error,
        });
      default:
        return new PerfError(
          "SERVER_ERROR",
          `${name} at ${where} failed (${grpc.status[error.code] ?? error.code}): ${details}`,
          {
            cause: error,
          },
        );
    }
  }
}

const passThrough = (body: Buffer): Buffer => body;
const ignoreResponse = (): undefined => undefined;

interface WireTensorMetadata {
  name: string;
  datatype: string;
  shape: Array<string | number>;
}

interface WireMetadata {
  name: string;
  versions?: string[];
  platform?: string;
  inputs?: WireTensorMetadata[];
  outputs?: WireTensorMetadata[];
}

type WireDuration = { count?: string | number; ns?: string | number } | null | undefined;

interface WireStatistics {
  name: string;
  version: string;
  last_inference?: string | number;
  inference_count?: string | number;
  execution_count?: string | number;
  inference_stats?: Record<string, WireDuration> | null;
  batch_stats?: Array<{ batch_size?: string | number } & Record<string, WireDuration | string | number | undefined>>;
}

function tensorMetadata(tensor: WireTensorMetadata): TensorMetadata {
  return { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape.map(Number) };
}

function duration(value: WireDuration): DurationStat {
  return { count: Number(value?.count ?? 0), ns: Number(value?.ns ?? 0) };
}

/** The gRPC statistics in the HTTP JSON shape, 64-bit strings as numbers (exact far past any realistic count). */
function statistics(wire: WireStatistics): ModelStatistics {
  const stats = wire.inference_stats ?? {};
  return {
    name: wire.name,
    version: wire.version,
    last_inference: Number(wire.last_inference ?? 0),
    inference_count: Number(wire.inference_count ?? 0),
    execution_count: Number(wire.execution_count ?? 0),
    inference_stats: {
      success: duration(stats["success"]),
      fail: duration(stats["fail"]),
      queue: duration(stats["queue"]),
      compute_input: duration(stats["compute_input"]),
      compute_infer: duration(stats["compute_infer"]),
      compute_output: duration(stats["compute_output"]),
      cache_hit: duration(stats["cache_hit"]),
      cache_miss: duration(stats["cache_miss"]),
    },
    response_stats: {},
    batch_stats: (wire.batch_stats ?? []).map(
      (batch): BatchStatistics => ({
        batch_size: Number(batch.batch_size ?? 0),
        compute_input: duration(batch["compute_input"] as WireDuration),
        compute_infer: duration(batch["compute_infer"] as WireDuration),
        compute_output: duration(batch["compute_output"] as WireDuration),
      }),
    ),
    memory_usage: [],
  };
}

/** The sequence batcher's controls as InferParameter entries (the id as uint64, Triton's numeric correlation id). */
function sequenceParameterEntries(sequence: SequenceFlags): Record<string, object> {
  return {
    sequence_id: { uint64_param: sequence.id.toString() },
    sequence_start: { bool_param: sequence.start },
    sequence_end: { bool_param: sequence.end },
  };
}

/** A tensor's shared-memory window as InferParameter entries. */
function windowParameters(window: SharedMemoryWindow): Record<string, object> {
  return {
    shared_memory_region: { string_param: window.region },
    shared_memory_byte_size: { int64_param: window.byteSize },
    shared_memory_offset: { int64_param: window.offset },
  };
}
