/**
 * The load of one model instance, as both worker wires carry it: the
 * process wire (worker-wire.ts, LoadMessage) and the thread wire
 * (thread-wire.ts, ThreadLoadMessage) add only their own framing (a request
 * id, a wire version) to these fields, so a field added here reaches every
 * backend the same way.
 */

/** Instance kinds from the model config's instance_group (Triton names). */
export type InstanceKind = "KIND_AUTO" | "KIND_CPU" | "KIND_GPU" | "KIND_MODEL";

/** What a worker needs to serve a model with a Triton C++ API backend (`libtriton_<name>.so`). */
export interface NativeLoadSpec {
  /** The config's backend name (e.g. "operon_identity"). */
  backendName: string;
  /** Absolute path of the resolved libtriton_<name>.so. */
  libraryPath: string;
  /** The backend's --backend-config settings (TRITONBACKEND_BackendConfig's cmdline). */
  backendConfig: Record<string, string>;
  /** The model version served (TRITONBACKEND_ModelVersion). */
  version: string;
  /** Whether the backend may auto-complete the config (not --strict-model-config). */
  autoComplete: boolean;
}

export interface InstanceLoad {
  /** Backend name, e.g. "onnxruntime". */
  backend: string;
  /** Absolute path of the model file. */
  modelPath: string;
  /** The model config as Triton's JSON (snake_case keys). */
  config: Record<string, unknown>;
  instanceName: string;
  /** Extra backend parameters; they override same-named config `parameters`. */
  parameters: Record<string, string>;
  /** The instance group this instance belongs to; undefined = derive from config. */
  instanceKind?: InstanceKind;
  /** GPU ordinal for KIND_GPU instances. */
  deviceId?: number;
  /** Set for backend "native": the Triton backend library to serve the model with (modelPath is then the model folder). */
  native?: NativeLoadSpec;
}

/** What the gateway asks of an instance's load: the instance's name is its own, parameters default to none. */
export type InstanceLoadSpec = Omit<InstanceLoad, "instanceName" | "parameters"> & {
  parameters?: Record<string, string>;
};

/** The load fields for instance `instanceName`, optional ones left out when unset (the wires are JSON). */
export function instanceLoadOf(spec: InstanceLoadSpec, instanceName: string): InstanceLoad {
  return {
    backend: spec.backend,
    modelPath: spec.modelPath,
    config: spec.config,
    instanceName,
    parameters: spec.parameters ?? {},
    ...(spec.instanceKind !== undefined ? { instanceKind: spec.instanceKind } : {}),
    ...(spec.deviceId !== undefined ? { deviceId: spec.deviceId } : {}),
    ...(spec.native !== undefined ? { native: spec.native } : {}),
  };
}
