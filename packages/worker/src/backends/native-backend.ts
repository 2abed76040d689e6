import { isDataType } from "@operon/protocol/datatypes";
import { type ErrorKind, OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { ExecuteTiming, InstanceKind, NativeLoadSpec } from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import type {
  BackendExecuteResult,
  BackendHost,
  BackendInitOptions,
  BackendLog,
  BackendMetadata,
  BackendRequest,
  BackendResponse,
  RequestBackend,
} from "@operon/backend-api/backend";
import {
  type TritonBackendHandle,
  type TritonHostBinding,
  type TritonDevicePoolStatistics,
  type TritonHostDeviceInput,
  type TritonHostEvent,
  type TritonHostResponse,
  type TritonHostStatistics,
  type TritonInstanceHandle,
  type TritonModelHandle,
  loadTritonHost,
  tritonErrorCodeOf,
} from "@operon/native/tritonserver-host";
import { configIo, isDecoupled, maxBatchSizeOf } from "./model-config-view.js";

/**
 * Serves a model with a backend written against Triton's C++ backend API
 * (`libtriton_<name>.so`), through Operon's libtritonserver.so and the
 * worker's addon (native/src/tritonserver-host.cc). The gateway resolved the
 * library (load.native); this process loads it once (TRITONBACKEND_Initialize
 * runs once per worker process), creates the model (ModelInitialize, where
 * the backend may auto-complete the config or reject it) and one instance.
 *
 * executeRequests hands the backend the whole list of requests of a batch in
 * one TRITONBACKEND_ModelInstanceExecute, on this thread. Inputs are the
 * worker's views of the shared-memory segment (no copy); outputs are written
 * by the backend into room this worker takes in its own half (no copy on
 * the way back either) when it is asked on this thread; otherwise into
 * process memory.
 *
 * A request is answered once the backend has both released it and sent its
 * final response (Triton's rule for when a request is done): the final
 * reply then carries the timing the backend reported for it
 * (TRITONBACKEND_ModelInstanceReportStatistics), which feeds Operon's
 * Triton-named metrics, and the gateway may reuse the input space only then.
 * Decoupled models' non-final responses go out as they come, from any
 * backend thread.
 */

/** TRITONSERVER_Error_Code → Operon's error kinds (the same closed set, Triton's). */
const ERROR_KIND_OF_CODE: Record<string, ErrorKind> = {
  UNKNOWN: "UNKNOWN",
  INTERNAL: "INTERNAL",
  NOT_FOUND: "NOT_FOUND",
  INVALID_ARG: "INVALID_ARG",
  UNAVAILABLE: "UNAVAILABLE",
  UNSUPPORTED: "UNSUPPORTED",
  ALREADY_EXISTS: "ALREADY_EXISTS",
  CANCELLED: "CANCELLED",
};
const TRITON_CODE_NAMES = Object.keys(ERROR_KIND_OF_CODE);

/** OPERON_HOST_KIND_* by the config's instance kind. */
const KIND_CODES: Record<InstanceKind, number> = { KIND_AUTO: 0, KIND_CPU: 1, KIND_GPU: 2, KIND_MODEL: 3 };
/** TRITONSERVER_LogLevel → the worker's log levels. */
const LOG_LEVELS = ["info", "warn", "error", "debug"] as const;
const NO_TIMING: ExecuteTiming = { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };
const RELEASE_ALL = 1;

interface LiveRequest {
  request: BackendRequest;
  released: boolean;
  /** The final response, held until the request is released too. */
  final: BackendResponse | undefined;
  /** Non-decoupled: the one response (it may come without the final flag from a careless backend). */
  answer: BackendResponse | undefined;
  timing: ExecuteTiming | undefined;
  done: () => void;
}

/** Backends loaded in this process, by name: TRITONBACKEND_Initialize runs once per process. */
const backends = new Map<string, { handle: TritonBackendHandle; libraryPath: string; users: number }>();

export class NativeBackend implements RequestBackend {
  readonly apiVersion = BACKEND_API_VERSION;
  decoupled = false;
  maxBatchSize = 0;
  private binding: TritonHostBinding | undefined;
  private backendName = "";
  private backend: TritonBackendHandle | undefined;
  private model: TritonModelHandle | undefined;
  private instance: TritonInstanceHandle | undefined;
  private config: Record<string, unknown> = {};
  private configChanged = false;
  private info: BackendMetadata = { inputs: [], outputs: [] };
  private readonly live = new Map<number, LiveRequest>();
  private host: BackendHost | undefined;
  private log: BackendLog = () => undefined;
  private lastMetrics = "";
  /** The instance's GPU (KIND_GPU): its device pool's gauges go out with the custom metrics. */
  private gpu: number | undefined;
  private nextToken = 1;

  async initialize(options: BackendInitOptions): Promise<void> {
    const native = options.native;
    if (native === undefined)
      throw new OperonError("INVALID_ARG", "native backend: the load message names no backend library (load.native)");
    this.host = options.host;
    this.log = options.log;
    this.backendName = native.backendName;
    const modelName = typeof options.config.name === "string" ? options.config.name : options.instanceName;
    const what = `backend '${native.backendName}' (${native.libraryPath})`;
    try {
      this.binding = loadTritonHost((level, file, line, message) =>
        options.log(LOG_LEVELS[level] ?? "info", message, {
          backend: native.backendName,
          ...(file !== "" ? { file, line } : {}),
        }),
      );
    } catch (error) {
      throw new OperonError("UNAVAILABLE", `model '${modelName}': ${(error as Error).message}`, { cause: error });
    }
    const binding = this.binding;
    this.backend = loadBackendOnce(binding, native);
    try {
      const configJson = JSON.stringify(options.config);
      this.model = hostCall(`model '${modelName}': ${what} failed to initialize the model`, () =>
        binding.createModel(
          this.backend!,
          modelName,
          versionNumber(native.version),
          options.modelPath,
          configJson,
          native.autoComplete,
        ),
      );
      const completed = JSON.parse(binding.modelConfig(this.model)) as Record<string, unknown>;
      this.configChanged = JSON.stringify(completed) !== configJson;
      this.config = completed;
      this.decoupled = isDecoupled(completed);
      this.maxBatchSize = maxBatchSizeOf(completed);
      this.info = configIo(completed);
      const kind = KIND_CODES[options.instanceKind ?? "KIND_CPU"] ?? 1;
      if (options.instanceKind === "KIND_GPU") this.gpu = options.deviceId ?? 0;
      this.instance = hostCall(
        `model '${modelName}': ${what} failed to initialize instance '${options.instanceName}'`,
        () =>
          binding.createInstance(
            this.model!,
            options.instanceName,
            kind,
            options.deviceId ?? 0,
            (byteLength) => this.host?.allocateOutput?.(byteLength),
            (...event) => this.onEvent(event),
          ),
      );
    } catch (error) {
      this.releaseHandles();
      throw error;
    }
    this.publishMetrics();
  }

  metadata(): BackendMetadata {
    return this.info;
  }

  completedConfig(): Record<string, unknown> | undefined {
    return this.configChanged ? this.config : undefined;
  }

  async execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult> {
    if (this.decoupled)
      throw new OperonError(
        "UNSUPPORTED",
        `backend '${this.backendName}': the model is decoupled: its responses stream, one result cannot hold them`,
      );
    let answer: BackendResponse | undefined;
    await this.executeRequests([
      {
        requestId: 0,
        id: "",
        inputs,
        outputNames: outputNames ?? [],
        parameters: {},
        cancelled: false,
        respond: (response) => void (answer = response),
      },
    ]);
    if (answer === undefined) throw new OperonError("INTERNAL", `backend '${this.backendName}' gave no response`);
    if ("error" in answer) throw answer.error;
    return { outputs: answer.outputs, timing: answer.timing ?? NO_TIMING };
  }

  /**
   * One TRITONBACKEND_ModelInstanceExecute with every request. Resolves when
   * execute returned and, for a non-decoupled model, every request has its
   * answer (responses may come from backend threads after execute returned).
   */
  async executeRequests(requests: BackendRequest[]): Promise<void> {
    const binding = this.binding;
    const instance = this.instance;
    if (binding === undefined || instance === undefined) {
      const error = new OperonError("UNAVAILABLE", `backend '${this.backendName}': no model is loaded`);
      for (const request of requests) request.respond({ error }, true);
      return;
    }
    const finished: Array<Promise<void>> = [];
    const batch = requests.map((request) => {
      const token = this.nextToken++;
      finished.push(
        new Promise<void>((done) =>
          this.live.set(token, {
            request,
            released: false,
            final: undefined,
            answer: undefined,
            timing: undefined,
            done,
          }),
        ),
      );
      return {
        token,
        id: request.id,
        inputs: request.inputs.map(hostInput),
        outputNames: request.outputNames,
        ...(request.deviceOutputs !== undefined && request.deviceOutputs.length > 0
          ? { deviceOutputs: [...request.deviceOutputs] }
          : {}),
        parameters: Object.entries(request.parameters).map(([name, value]) => ({
          name,
          value,
          ...(typeof value === "number" && Number.isInteger(value) ? { type: "int" as const } : {}),
        })),
      };
    });
    try {
      binding.execute(instance, batch);
    } catch (error) {
      // Malformed input the addon refused before the backend saw anything (INVALID_ARG), or a GPU input it could
      // not open (the producing worker is gone: the library's kind, e.g. UNAVAILABLE).
      const code = tritonErrorCodeOf(error);
      const failure = new OperonError(
        code === "INTERNAL" ? "INVALID_ARG" : (ERROR_KIND_OF_CODE[code] ?? "INVALID_ARG"),
        `backend '${this.backendName}': ${(error as Error).message}`,
      );
      for (const { token } of batch) this.finish(token, { error: failure });
      return;
    }
    // Cancellations that came while the requests were still queued in this worker.
    for (const { token } of batch)
      if (this.live.get(token)?.request.cancelled === true) binding.cancel(instance, token);
    if (!this.decoupled) await Promise.all(finished);
    this.publishMetrics();
  }

  cancelRequests(requests: BackendRequest[]): void {
    const binding = this.binding;
    const instance = this.instance;
    if (binding === undefined || instance === undefined) return;
    for (const [token, live] of this.live) if (requests.includes(live.request)) binding.cancel(instance, token);
  }

  releaseDeviceOutputs(regions: number[]): void {
    const binding = this.binding;
    if (binding === undefined) return;
    for (const region of regions) {
      try {
        binding.releaseDeviceOutput(region);
      } catch (error) {
        this.log("error", `backend '${this.backendName}': a GPU output could not be given back to the pool`, {
          reason: (error as Error).message,
        });
      }
    }
    this.publishMetrics();
  }

  async finalize(): Promise<void> {
    this.releaseHandles();
  }

  private releaseHandles(): void {
    const binding = this.binding;
    if (binding === undefined) return;
    const instance = this.instance;
    const model = this.model;
    this.instance = undefined;
    this.model = undefined;
    try {
      if (instance !== undefined) binding.destroyInstance(instance);
      if (model !== undefined) binding.destroyModel(model);
    } catch (error) {
      this.log("warn", `backend '${this.backendName}': finalize failed`, { reason: (error as Error).message });
    }
    if (this.backend !== undefined) unloadBackendOnce(binding, this.backendName);
    this.backend = undefined;
  }

  private onEvent([kind, token, payload]: TritonHostEvent): void {
    if (kind === "drop") {
      this.host?.freeOutput?.(payload.buffer);
      return;
    }
    const live = this.live.get(token);
    if (live === undefined) return;
    if (kind === "statistics") {
      if (payload.kind === "request") live.timing = timingOf(payload);
    } else if (kind === "released") {
      if ((payload.flags & RELEASE_ALL) !== 0) live.released = true;
    } else {
      const response = this.responseOf(payload);
      if (!this.decoupled) {
        // One response, final (Triton's rule for non-decoupled models); a flags-only final keeps an earlier one.
        if (!payload.empty) live.answer = response;
        if (payload.final)
          live.final = live.answer ?? {
            error: new OperonError("INTERNAL", `backend '${this.backendName}' sent a final flag without a response`),
          };
      } else if (payload.final) {
        live.final = payload.empty ? { outputs: [] } : response;
      } else if (!payload.empty) {
        try {
          live.request.respond(response, false);
        } catch (error) {
          this.log("error", `backend '${this.backendName}': a response could not be sent`, {
            reason: (error as Error).message,
          });
        }
      }
    }
    // Done once released and finally answered, in either order (a backend may release early and answer from its own thread).
    if (live.released && live.final !== undefined) this.finish(token, live.final);
  }

  private finish(token: number, response: BackendResponse): void {
    const live = this.live.get(token);
    if (live === undefined) return;
    this.live.delete(token);
    const answer = "error" in response ? response : { ...response, timing: live.timing ?? NO_TIMING };
    try {
      live.request.respond(answer, true);
    } catch (error) {
      this.log("error", `backend '${this.backendName}': a response could not be sent`, {
        reason: (error as Error).message,
      });
    }
    live.done();
    if (this.decoupled) this.publishMetrics();
  }

  private responseOf(payload: TritonHostResponse): BackendResponse {
    if (payload.error !== undefined) {
      return {
        error: new OperonError(
          ERROR_KIND_OF_CODE[TRITON_CODE_NAMES[payload.error.code] ?? "UNKNOWN"] ?? "UNKNOWN",
          payload.error.message,
        ),
      };
    }
    const outputs: Tensor[] = [];
    for (const output of payload.outputs) {
      if (output.error !== undefined) {
        this.dropOutputs(payload);
        return { error: new OperonError("INTERNAL", `backend '${this.backendName}': ${output.error}`) };
      }
      if (!isDataType(output.datatype)) {
        this.dropOutputs(payload);
        return {
          error: new OperonError(
            "INTERNAL",
            `backend '${this.backendName}': output '${output.name}' has datatype '${output.datatype}', which is not a KServe datatype`,
          ),
        };
      }
      if (output.device !== undefined) {
        const { gpu, handle, region } = output.device;
        outputs.push({
          name: output.name,
          datatype: output.datatype,
          shape: output.shape,
          data: output.data,
          device: { gpu, handle, byteLength: output.byteSize, region },
        });
        continue;
      }
      const data = output.data.length === output.byteSize ? output.data : output.data.subarray(0, output.byteSize);
      outputs.push({ name: output.name, datatype: output.datatype, shape: output.shape, data });
    }
    return Object.keys(payload.parameters).length > 0 ? { outputs, parameters: payload.parameters } : { outputs };
  }

  /** A response that will not be sent: its outputs' shared memory and GPU regions go back. */
  private dropOutputs(payload: TritonHostResponse): void {
    for (const output of payload.outputs) {
      if (output.device !== undefined) this.binding?.releaseDeviceOutput(output.device.region);
      else this.host?.freeOutput?.(output.data);
    }
  }

  /** Custom metric families are process-wide: the worker sends them on whenever they changed. */
  private publishMetrics(): void {
    const binding = this.binding;
    if (binding === undefined || this.host?.publishMetrics === undefined) return;
    let text: string;
    try {
      text = binding.metricsText();
      if (this.gpu !== undefined) {
        if (text !== "" && !text.endsWith("\n")) text += "\n";
        text += devicePoolMetrics(this.gpu, binding.devicePoolStatistics(this.gpu));
      }
    } catch {
      return;
    }
    if (text === this.lastMetrics) return;
    this.lastMetrics = text;
    this.host.publishMetrics(text);
  }
}

/**
 * The worker's device pool of its GPU as Prometheus gauges. Summed over
 * workers by the gateway (backend-metrics-text.ts), they say what the
 * host's workers hold on each GPU: regions handed out (an operator's
 * intermediates among them, until the next step is done), cached for
 * reuse, and other workers' regions opened here.
 */
function devicePoolMetrics(gpu: number, pool: TritonDevicePoolStatistics): string {
  const gauge = (name: string, help: string, value: number): string =>
    `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}{gpu="${gpu}"} ${value}\n`;
  return (
    gauge("operon_gpu_pool_live_regions", "Device pool regions handed out and not yet given back", pool.liveRegions) +
    gauge("operon_gpu_pool_live_bytes", "Bytes of the device pool regions handed out", pool.liveBytes) +
    gauge("operon_gpu_pool_cached_regions", "Device pool regions given back and kept for reuse", pool.cachedRegions) +
    gauge(
      "operon_gpu_pool_imported_regions",
      "Other workers' device regions opened through CUDA IPC",
      pool.importedRegions,
    )
  );
}

/** TRITONBACKEND_Initialize once per process per backend name; each model holds a reference. */
function loadBackendOnce(binding: TritonHostBinding, native: NativeLoadSpec): TritonBackendHandle {
  const known = backends.get(native.backendName);
  if (known !== undefined) {
    if (known.libraryPath !== native.libraryPath) {
      throw new OperonError(
        "ALREADY_EXISTS",
        `backend '${native.backendName}' is already loaded in this worker from ${known.libraryPath}, not ${native.libraryPath}`,
      );
    }
    known.users += 1;
    return known.handle;
  }
  const handle = hostCall(`backend '${native.backendName}' (${native.libraryPath}) failed to load`, () =>
    binding.loadBackend(native.backendName, native.libraryPath, JSON.stringify(native.backendConfig)),
  );
  backends.set(native.backendName, { handle, libraryPath: native.libraryPath, users: 1 });
  return handle;
}

/** The last model of a backend gone: TRITONBACKEND_Finalize and dlclose. */
function unloadBackendOnce(binding: TritonHostBinding, name: string): void {
  const known = backends.get(name);
  if (known === undefined) return;
  known.users -= 1;
  if (known.users > 0) return;
  backends.delete(name);
  binding.unloadBackend(known.handle);
}

/** Runs an addon call; its error becomes an OperonError of Triton's kind, with the backend's own text after `context`. */
function hostCall<T>(context: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    const code = tritonErrorCodeOf(error);
    throw new OperonError(ERROR_KIND_OF_CODE[code] ?? "INTERNAL", `${context}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function versionNumber(version: string): number {
  const number = Number(version);
  return Number.isSafeInteger(number) && number >= 0 ? number : 1;
}

function timingOf(statistics: TritonHostStatistics): ExecuteTiming {
  return {
    computeInputNs: statistics.computeInputNs,
    computeInferNs: statistics.computeInferNs,
    computeOutputNs: statistics.computeOutputNs,
  };
}

/** A request input as the addon takes it: a GPU tensor by its IPC handle (imported there), any other by its bytes. */
function hostInput(tensor: Tensor): Tensor | TritonHostDeviceInput {
  const device = tensor.device;
  if (device === undefined) return tensor;
  return {
    name: tensor.name,
    datatype: tensor.datatype,
    shape: tensor.shape,
    data: tensor.data,
    device: { gpu: device.gpu, handle: device.handle, byteLength: device.byteLength },
  };
}

/** Used by the worker's backend registry. */
export function createNativeBackend(): NativeBackend {
  return new NativeBackend();
}
