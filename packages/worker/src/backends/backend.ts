import type { Tensor } from "@operon/protocol/tensor";
import type { ExecuteTiming, InstanceKind, IoInfo } from "@operon/protocol/worker-wire";

/**
 * The contract between the worker process and a backend (onnxruntime today;
 * typescript and native later). One Backend object serves one model
 * instance; the worker calls execute one request at a time, never
 * concurrently, so a backend needs no locking. Bump BACKEND_API_VERSION on
 * any incompatible change: the worker refuses a backend built for another.
 */
export const BACKEND_API_VERSION = 1;

export type LogLevel = "debug" | "info" | "warn" | "error";
export type BackendLog = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

export interface BackendInitOptions {
  /** Absolute path of the model file (e.g. <repo>/<model>/<version>/model.onnx). */
  modelPath: string;
  /** The model config as Triton's JSON (snake_case keys, TYPE_* enums). */
  config: Record<string, unknown>;
  instanceName: string;
  /** Load-time parameters; they win over same-named config `parameters`. */
  parameters: Record<string, string>;
  /** The instance group kind; undefined = the backend derives it from config. */
  instanceKind?: InstanceKind;
  deviceId?: number;
  log: BackendLog;
}

export interface BackendMetadata {
  inputs: IoInfo[];
  outputs: IoInfo[];
}

export interface BackendExecuteResult {
  outputs: Tensor[];
  timing: ExecuteTiming;
}

export interface Backend {
  readonly apiVersion: number;
  /** Loads the model. Throws OperonError (e.g. INVALID_ARG for a bad model, UNAVAILABLE for a missing device). */
  initialize(options: BackendInitOptions): Promise<void>;
  /** Inputs and outputs as the model declares them; valid after initialize. */
  metadata(): BackendMetadata;
  /**
   * Runs one request (or one batch the scheduler assembled). outputNames
   * undefined or empty = every output. Throws OperonError: INVALID_ARG for
   * bad inputs (naming the input), INTERNAL for backend faults.
   */
  execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult>;
  /** Releases the model; the object is not used afterwards. */
  finalize(): Promise<void>;
}
