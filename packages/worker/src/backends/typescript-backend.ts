import path from "node:path";
import { ERROR_KINDS, type ErrorKind, OperonError, asOperonError } from "@operon/protocol/errors";
import { logIdFields } from "@operon/protocol/logger";
import type { Tensor } from "@operon/protocol/tensor";
import type { ExecuteTiming } from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import {
  type BackendExecuteResult,
  type BackendHost,
  type BackendInitOptions,
  type BackendLog,
  type BackendMetadata,
  type BackendRequest,
  type BackendResponse,
  type ExecuteGuard,
  type RequestBackend,
} from "@operon/backend-api/backend";
import { configIo, instanceKindOf, isDecoupled, maxBatchSizeOf, parametersOf } from "./model-config-view.js";
import {
  type ExecuteContext,
  type InferOptions,
  type InferResult,
  ModelError,
  type ModelInstance,
  type ModelLog,
  type ResponseSender,
  type TensorLike,
  type TypedRequest,
  type TypedResponse,
  type TypedTensor,
  tensor,
  typedTensor,
} from "@operon/backend-api/typescript-model-api";
import { importModelModule } from "./typescript-model-loader.js";

/**
 * The TypeScript backend (Operon's answer to Triton's Python backend): the
 * model is a JS/TS module whose class runs in this worker process, never in
 * the gateway. See @operon/backend-api/typescript-model-api for what a model sees.
 *
 * Contract with the model:
 *   - execute(requests, ctx) gets every request the worker had waiting (up
 *     to max_batch_size in batch-dimension sum). Non-decoupled: it returns
 *     one response or Error per request, in order; an Error fails only its
 *     request; a throw fails them all (its `kind` if it has a valid one,
 *     else INTERNAL naming the model).
 *   - Decoupled (model_transaction_policy { decoupled: true }): execute
 *     returns nothing; each request's `sender.send(response | Error |
 *     undefined, { final })` streams its responses, exactly one final. The
 *     worker serves the next requests once execute returned. A request that
 *     stays silent for `decoupled_final_timeout_ms` (default 10 s, counted
 *     from execute's return and restarted by every response) is ended for
 *     the client with INTERNAL "... did not send the final response ..."
 *     and an error log naming model and request. send() after the final
 *     response throws in the model.
 *   - execute must return within `execute_timeout_ms` (default 30 s): else
 *     its requests fail UNAVAILABLE "model 'x' execute timed out after N ms"
 *     and the worker process is killed (the host's ExecuteGuard; nothing
 *     else can stop a synchronous loop), for the gateway to restart it.
 *   - ctx.infer() is BLS through the host; failures are values.
 * Both timeouts are config parameters (string values, milliseconds).
 */

export const DEFAULT_EXECUTE_TIMEOUT_MS = 30_000;

/**
 * What Node's permission model refused a sandboxed model (ERR_ACCESS_DENIED
 * carries the permission and the resource; an addon is ERR_DLOPEN_DISABLED),
 * said plainly; undefined for any other error.
 */
function sandboxDenial(error: unknown): string | undefined {
  const { code, permission, resource } = (error ?? {}) as { code?: unknown; permission?: unknown; resource?: unknown };
  if (code === "ERR_DLOPEN_DISABLED") return "the sandbox denied loading a native addon";
  if (code !== "ERR_ACCESS_DENIED") return undefined;
  const what = SANDBOX_PERMISSION_NAMES[String(permission)] ?? String(permission ?? "the operation");
  return `the sandbox denied ${what}${typeof resource === "string" && resource !== "" ? ` '${resource}'` : ""}`;
}

const SANDBOX_PERMISSION_NAMES: Record<string, string> = {
  FileSystemRead: "reading",
  FileSystemWrite: "writing",
  ChildProcess: "starting a child process",
  WorkerThreads: "starting a worker thread",
  Inspector: "opening the inspector",
};
export const DEFAULT_DECOUPLED_FINAL_TIMEOUT_MS = 10_000;

const NO_TIMING: ExecuteTiming = { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };

export class TypeScriptBackend implements RequestBackend {
  readonly apiVersion = BACKEND_API_VERSION;
  decoupled = false;
  maxBatchSize = 0;
  private model: ModelInstance | undefined;
  private modelName = "";
  private info: BackendMetadata = { inputs: [], outputs: [] };
  private declaredOutputs = new Set<string>();
  private host: BackendHost | undefined;
  private guard: ExecuteGuard | undefined;
  private log: BackendLog = () => undefined;
  private finalTimeoutMs = DEFAULT_DECOUPLED_FINAL_TIMEOUT_MS;
  private context: ExecuteContext | undefined;
  private warnedDecoupledReturn = false;
  /** Decoupled requests without their final response yet. */
  private readonly streams = new Set<DecoupledStream>();
  private streamsDrained: (() => void) | undefined;

  constructor(private readonly options: TypeScriptBackendOptions = {}) {}

  async initialize(options: BackendInitOptions): Promise<void> {
    const { config, modelPath } = options;
    const modelDir = path.dirname(path.dirname(modelPath));
    this.modelName = typeof config.name === "string" && config.name !== "" ? config.name : path.basename(modelDir);
    const parameters = parametersOf(config, options.parameters);
    const executeTimeoutMs = millisecondsParameter(
      parameters,
      "execute_timeout_ms",
      DEFAULT_EXECUTE_TIMEOUT_MS,
      this.modelName,
    );
    this.finalTimeoutMs = millisecondsParameter(
      parameters,
      "decoupled_final_timeout_ms",
      DEFAULT_DECOUPLED_FINAL_TIMEOUT_MS,
      this.modelName,
    );
    this.decoupled = isDecoupled(config);
    this.maxBatchSize = maxBatchSizeOf(config);
    this.info = configIo(config);
    // A sequence model's state outputs are not config outputs, but the gateway asks for them (it keeps them as state).
    const stateOutputs = (
      (config.sequence_batching as { state?: Array<{ output_name?: string }> } | undefined)?.state ?? []
    )
      .map((state) => state.output_name ?? "")
      .filter((name) => name !== "");
    this.declaredOutputs = new Set([...this.info.outputs.map((output) => output.name), ...stateOutputs]);
    this.host = options.host;
    this.log = (level, message, fields) => options.log(level, message, { model: this.modelName, ...fields });
    const modelLog: ModelLog = (level, message, fields) => this.log(level, message, fields);
    this.context = {
      modelName: this.modelName,
      tensor,
      log: modelLog,
      infer: (model, inputs, inferOptions) => this.infer(model, inputs, inferOptions),
      error: (kind, message) => new ModelError(kind, message),
    };

    const model = instantiate(await (this.options.loadModule ?? importModelModule)(modelPath), modelPath);
    const instanceKind = options.instanceKind ?? instanceKindOf(config);
    if (instanceKind === "KIND_GPU" && model.usesGpu !== true) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${this.modelName}': instance '${options.instanceName}' is KIND_GPU, but the ${this.options.backendName ?? "typescript"} backend runs its models on the CPU (a model that runs its own work on the GPU declares usesGpu = true); use kind KIND_CPU`,
      );
    }
    this.guard = await this.host?.createExecuteGuard({
      timeoutMs: executeTimeoutMs,
      message: `model '${this.modelName}' execute timed out after ${executeTimeoutMs} ms`,
      decoupled: this.decoupled,
    });
    try {
      await model.initialize?.({
        config,
        parameters,
        modelName: this.modelName,
        instanceName: options.instanceName,
        instanceKind,
        deviceId: options.deviceId ?? null,
        modelDir,
        modelVersion: path.basename(path.dirname(modelPath)),
        log: modelLog,
        tensor,
      });
    } catch (error) {
      this.guard?.close();
      this.guard = undefined;
      const failure = this.errorOf(error, "INVALID_ARG", "initialize failed");
      this.log("error", "model initialize failed", { reason: failure.message, stack: stackOf(error) });
      throw failure;
    }
    this.model = model;
    options.log("info", "typescript model loaded", {
      model: this.modelName,
      modelPath,
      decoupled: this.decoupled,
      maxBatchSize: this.maxBatchSize,
    });
  }

  metadata(): BackendMetadata {
    return this.info;
  }

  /** One non-decoupled request (the Backend contract); the worker itself calls executeRequests. */
  async execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult> {
    if (this.decoupled) {
      throw new OperonError(
        "UNSUPPORTED",
        `model '${this.modelName}' is decoupled: its responses stream, one result cannot hold them`,
      );
    }
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
    if (answer === undefined) throw new OperonError("INTERNAL", `model '${this.modelName}' gave no response`);
    if ("error" in answer) throw answer.error;
    return { outputs: answer.outputs, timing: answer.timing ?? NO_TIMING };
  }

  async executeRequests(batch: BackendRequest[]): Promise<void> {
    const model = this.model;
    const context = this.context;
    if (model === undefined || context === undefined) {
      const error = new OperonError("UNAVAILABLE", "typescript backend: no model is loaded");
      for (const request of batch) request.respond({ error }, true);
      return;
    }
    const inputStarted = process.hrtime.bigint();
    const requests: BackendRequest[] = [];
    const typed: TypedRequest[] = [];
    const streams: DecoupledStream[] = [];
    for (const request of batch) {
      let inputs: Map<string, TypedTensor>;
      try {
        inputs = new Map(request.inputs.map((input) => [input.name, typedTensor(input)]));
      } catch (error) {
        request.respond({ error: new OperonError("INVALID_ARG", (error as Error).message) }, true);
        continue;
      }
      const stream = this.decoupled ? new DecoupledStream(this, request) : undefined;
      if (stream !== undefined) streams.push(stream);
      requests.push(request);
      typed.push(this.typedRequest(request, inputs, stream ?? this.notDecoupled()));
    }
    if (requests.length === 0) return;

    const inferStarted = process.hrtime.bigint();
    const disarm = this.guard?.arm(requests.map((request) => request.requestId));
    let returned: unknown;
    let failure: OperonError | undefined;
    try {
      returned = await model.execute(typed, context);
    } catch (error) {
      failure = this.errorOf(error, "INTERNAL", "execute failed");
      this.log(failure.kind === "INTERNAL" ? "error" : "info", "model execute failed", {
        wireRequestIds: requests.map((request) => request.requestId),
        reason: failure.message,
        stack: stackOf(error),
      });
    } finally {
      disarm?.();
    }
    const outputStarted = process.hrtime.bigint();

    if (this.decoupled) {
      if (failure !== undefined) for (const stream of streams) stream.fail(failure);
      else {
        if (
          returned !== undefined &&
          !(Array.isArray(returned) && returned.length === 0) &&
          !this.warnedDecoupledReturn
        ) {
          this.warnedDecoupledReturn = true;
          this.log(
            "warn",
            "a decoupled model's execute returned a value; it is ignored: send responses with request.sender.send()",
          );
        }
        for (const stream of streams) stream.executeReturned();
      }
      return;
    }

    if (failure === undefined && (!Array.isArray(returned) || returned.length !== requests.length)) {
      const got = Array.isArray(returned) ? `${returned.length} responses` : describe(returned);
      failure = new OperonError(
        "INTERNAL",
        `model '${this.modelName}' execute returned ${got} for ${requests.length} request(s); it must return one response (or Error) per request, in order`,
      );
      this.log("error", "model execute returned a malformed result", { reason: failure.message });
    }
    const answers: BackendResponse[] = requests.map((request, i) => {
      if (failure !== undefined) return { error: failure };
      const entry = (returned as unknown[])[i];
      if (entry instanceof Error) return { error: this.errorOf(entry, "INTERNAL", "request failed") };
      try {
        return { outputs: this.outputsOf(entry, request, true) };
      } catch (error) {
        return { error: asOperonError(error) };
      }
    });
    const end = process.hrtime.bigint();
    const timing: ExecuteTiming = {
      computeInputNs: Number(inferStarted - inputStarted),
      computeInferNs: Number(outputStarted - inferStarted),
      computeOutputNs: Number(end - outputStarted),
    };
    requests.forEach((request, i) => {
      const answer = answers[i]!;
      request.respond("error" in answer ? answer : { outputs: answer.outputs, timing }, true);
    });
  }

  async finalize(): Promise<void> {
    // Streams still open end by themselves (final, or their idle timeout): let them.
    if (this.streams.size > 0) await new Promise<void>((resolve) => (this.streamsDrained = resolve));
    const model = this.model;
    this.model = undefined;
    try {
      await model?.finalize?.();
    } catch (error) {
      this.log("warn", "model finalize failed", {
        reason: (error as Error)?.message ?? String(error),
        stack: stackOf(error),
      });
    } finally {
      this.guard?.close();
      this.guard = undefined;
    }
  }

  // ---- shared with DecoupledStream (not part of the Backend contract) ----

  get name(): string {
    return this.modelName;
  }

  get finalTimeout(): number {
    return this.finalTimeoutMs;
  }

  get logger(): BackendLog {
    return this.log;
  }

  streamOpened(stream: DecoupledStream): void {
    this.streams.add(stream);
  }

  streamClosed(stream: DecoupledStream): void {
    this.streams.delete(stream);
    if (this.streams.size === 0) {
      this.streamsDrained?.();
      this.streamsDrained = undefined;
    }
  }

  /**
   * A model-returned response as wire tensors. strict (non-decoupled): every
   * requested output must be present. Decoupled responses may carry a
   * subset (e.g. a last response with only some outputs).
   */
  outputsOf(response: unknown, request: BackendRequest, strict: boolean): Tensor[] {
    const outputs = (response as Partial<TypedResponse> | null)?.outputs;
    if (typeof response !== "object" || response === null || !Array.isArray(outputs)) {
      throw new OperonError(
        "INTERNAL",
        `model '${this.modelName}' gave ${describe(response)} for request ${request.requestId}; a response is { outputs: [tensors] } or an Error`,
      );
    }
    const tensors = new Map<string, Tensor>();
    for (const output of outputs as unknown[]) {
      let checked: TypedTensor;
      try {
        checked = typedTensor(output as TensorLike);
      } catch (error) {
        throw new OperonError("INTERNAL", `model '${this.modelName}' output: ${(error as Error).message}`);
      }
      if (tensors.has(checked.name))
        throw new OperonError(
          "INTERNAL",
          `model '${this.modelName}' gave output '${checked.name}' twice in one response`,
        );
      tensors.set(checked.name, {
        name: checked.name,
        datatype: checked.datatype,
        shape: checked.shape,
        data: checked.data,
      });
    }
    if (request.outputNames.length === 0) return [...tensors.values()];
    const selected: Tensor[] = [];
    for (const name of new Set(request.outputNames)) {
      const output = tensors.get(name);
      if (output !== undefined) selected.push(output);
      else if (this.declaredOutputs.size > 0 && !this.declaredOutputs.has(name)) {
        throw new OperonError("INVALID_ARG", `unexpected inference output '${name}' for model '${this.modelName}'`);
      } else if (strict) {
        throw new OperonError("INTERNAL", `model '${this.modelName}' did not produce the requested output '${name}'`);
      }
    }
    return selected;
  }

  /** A thrown or returned error as an OperonError: its own kind when it has a valid one, else `fallback` naming the model. */
  errorOf(error: unknown, fallback: ErrorKind, what: string): OperonError {
    if (error instanceof OperonError) return error;
    const kind = (error as { kind?: unknown } | null)?.kind;
    const message = error instanceof Error ? error.message : String(error);
    if (typeof kind === "string" && (ERROR_KINDS as readonly string[]).includes(kind)) {
      return new OperonError(kind as ErrorKind, message, { cause: error });
    }
    return new OperonError(fallback, `model '${this.modelName}' ${what}: ${sandboxDenial(error) ?? message}`, {
      cause: error,
    });
  }

  private typedRequest(
    request: BackendRequest,
    inputs: Map<string, TypedTensor>,
    sender: ResponseSender,
  ): TypedRequest {
    const modelName = this.modelName;
    return {
      id: request.id,
      inputs,
      parameters: request.parameters,
      requestedOutputs: request.outputNames,
      sender,
      input(name: string): TypedTensor {
        const found = inputs.get(name);
        if (found !== undefined) return found;
        throw new ModelError(
          "INVALID_ARG",
          `model '${modelName}': the request has no input '${name}' (it has: ${[...inputs.keys()].join(", ") || "none"})`,
        );
      },
    };
  }

  /** The sender of a non-decoupled model's requests: using it is a mistake worth a clear message. */
  private notDecoupled(): ResponseSender {
    const modelName = this.modelName;
    return {
      finished: false,
      send(): void {
        throw new Error(
          `model '${modelName}' is not decoupled: return its responses from execute() (or set model_transaction_policy { decoupled: true })`,
        );
      },
    };
  }

  private async infer(model: string, inputs: readonly TensorLike[], options: InferOptions = {}): Promise<InferResult> {
    if (typeof model !== "string" || model === "")
      return { error: { kind: "INVALID_ARG", message: "infer: the model name must be a non-empty string" } };
    let tensors: Tensor[];
    try {
      tensors = Array.from(inputs, (input) => {
        const checked = typedTensor(input);
        return { name: checked.name, datatype: checked.datatype, shape: checked.shape, data: checked.data };
      });
    } catch (error) {
      return { error: { kind: "INVALID_ARG", message: `infer('${model}'): ${(error as Error).message}` } };
    }
    const host = this.host;
    if (host === undefined)
      return {
        error: { kind: "UNAVAILABLE", message: "BLS is not available: this backend does not run in a worker process" },
      };
    const outcome = await host
      .infer({
        model,
        inputs: tensors,
        ...(options.version !== undefined ? { version: options.version } : {}),
        ...(options.outputs !== undefined && options.outputs.length > 0 ? { outputNames: options.outputs } : {}),
        ...(options.parameters !== undefined ? { parameters: options.parameters } : {}),
      })
      .catch((error: unknown) => ({ error: asOperonError(error) }));
    if ("error" in outcome) return { error: { kind: outcome.error.kind, message: outcome.error.message } };
    try {
      return { outputs: new Map(outcome.outputs.map((output) => [output.name, typedTensor(output)])) };
    } catch (error) {
      return {
        error: {
          kind: "INTERNAL",
          message: `infer('${model}') returned a malformed tensor: ${(error as Error).message}`,
        },
      };
    }
  }
}

/**
 * One decoupled request's response stream (the model's request.sender).
 * Open from execute's start until a final response: the model's, or the
 * error the backend sends for it (execute threw, or the idle timeout).
 */
class DecoupledStream implements ResponseSender {
  private done = false;
  private executing = true;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly backend: TypeScriptBackend,
    private readonly request: BackendRequest,
  ) {
    backend.streamOpened(this);
  }

  get finished(): boolean {
    return this.done;
  }

  send(response: TypedResponse | Error | undefined, options?: { final?: boolean }): void {
    const { requestId } = this.request;
    if (this.done) {
      throw new Error(
        `model '${this.backend.name}': request ${requestId} already sent its final response; send() after it is a bug in the model`,
      );
    }
    const final = options?.final === true;
    let out: BackendResponse;
    if (response === undefined) {
      if (!final)
        throw new TypeError(`model '${this.backend.name}': send(undefined) only marks the end: pass { final: true }`);
      out = { outputs: [] };
    } else if (response instanceof Error) {
      out = { error: this.backend.errorOf(response, "INTERNAL", "response failed") };
    } else {
      // A malformed response throws here, in the model, which can still send a good one.
      out = { outputs: this.backend.outputsOf(response, this.request, false) };
    }
    if (final) this.close();
    else this.restartTimer();
    this.request.respond(out, final);
  }

  /** execute returned: from now on the idle timeout runs. */
  executeReturned(): void {
    this.executing = false;
    if (!this.done) this.restartTimer();
  }

  /** Ends the stream for the client with an error, unless the model already did. */
  fail(error: OperonError): void {
    if (this.done) return;
    this.close();
    this.request.respond({ error }, true);
  }

  private restartTimer(): void {
    if (this.executing) return;
    clearTimeout(this.timer);
    const timeoutMs = this.backend.finalTimeout;
    this.timer = setTimeout(() => {
      const { requestId, id, logIds } = this.request;
      // Written after the execute returned: the request's own ids, as the lines written during it carry them.
      this.backend.logger("error", "model did not send the final response; ending the request", {
        ...(logIds !== undefined && logIds.length > 0 ? logIdFields(logIds) : {}),
        wireRequestId: requestId,
        id,
        timeoutMs,
      });
      this.fail(
        new OperonError(
          "INTERNAL",
          `model '${this.backend.name}' did not send the final response for request ${requestId}${id !== "" ? ` (id '${id}')` : ""} within ${timeoutMs} ms`,
        ),
      );
    }, timeoutMs);
  }

  private close(): void {
    this.done = true;
    clearTimeout(this.timer);
    this.backend.streamClosed(this);
  }
}

/** The model object from the module: its default export or `Model`, a class (instantiated) or an object. */
function instantiate(module: Record<string, unknown>, modelPath: string): ModelInstance {
  const exported = module.default ?? module.Model;
  let model: unknown = exported;
  if (typeof exported === "function") {
    try {
      model = new (exported as new () => unknown)();
    } catch (error) {
      throw new OperonError(
        "INVALID_ARG",
        `model file '${modelPath}': constructing the model class failed: ${(error as Error)?.message ?? String(error)}`,
        {
          cause: error,
        },
      );
    }
  }
  if (typeof (model as Partial<ModelInstance> | null)?.execute !== "function") {
    throw new OperonError(
      "INVALID_ARG",
      `model file '${modelPath}' must default-export a class (or export one named Model) with an execute(requests, ctx) method; found ${describe(exported)}`,
    );
  }
  return model as ModelInstance;
}

function millisecondsParameter(
  parameters: Record<string, string>,
  key: string,
  fallback: number,
  modelName: string,
): number {
  const raw = parameters[key];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${modelName}': parameter '${key}' must be a positive integer (milliseconds), got '${raw}'`,
    );
  }
  return value;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function stackOf(error: unknown): string | undefined {
  return error instanceof Error ? error.stack : undefined;
}

export interface TypeScriptBackendOptions {
  /**
   * Where the model class comes from; default: the model file (transpiled
   * when it is TypeScript). The operon_steps backend passes the built-in
   * step library's pipeline model here, so built-in steps get the same
   * worker process, timeouts and batching as user models.
   */
  loadModule?: (modelPath: string) => Promise<Record<string, unknown>>;
  /** The backend's name in errors (default "typescript"; "operon_steps" for the step pipelines). */
  backendName?: string;
}

/** Used by the worker's backend registry. */
export function createTypeScriptBackend(options: TypeScriptBackendOptions = {}): TypeScriptBackend {
  return new TypeScriptBackend(options);
}
