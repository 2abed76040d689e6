import { access, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { OperonError } from "@operon/protocol/errors";
import { autoCompleteConfig, validateAgainstModel } from "@operon/model-config/auto-complete";
import { configFromJson } from "@operon/model-config/config-json";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { normalizeConfig, validateConfig } from "@operon/model-config/normalize-config";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import { unimplementedConfigFields } from "@operon/model-config/unimplemented-fields";
import { hostGpus } from "../instances/gpu-inventory.js";
import { instancePlacements } from "../instances/instance-placement.js";
import {
  launchInstance,
  ModelInstances,
  type InstanceLaunchSpec,
  type ModelInstancesOptions,
} from "../instances/model-instances.js";
import { ensembleToOperator, isEnsembleConfig } from "../operators/ensemble-operator.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { assertValidOperator, type OperatorHooks } from "../operators/operator-validation.js";
import { confinedPath } from "./confined-path.js";
import { type NativeBackendOptions, resolveNativeBackend } from "./native-backend-resolver.js";
import { checkResourceLimits, type ResourceLimits } from "./resource-limits.js";
import { listVersionDirs, readConfigText } from "./repository-scanner.js";
import { selectVersions } from "./version-policy.js";
import type { VersionRunner } from "../scheduling/version-runner.js";
import type { BackendInstance } from "../instances/backend-instance.js";
import { buildWarmupSamples } from "./warmup-samples.js";
import { MAX_STATE_BYTES } from "../scheduling/sequence-policy.js";

/**
 * Turns a model folder into running versions: reads config.pbtxt (or the
 * config override of a load request), picks versions by the version policy,
 * starts one instance to learn the model's inputs and outputs, completes and
 * checks the config against them, then starts the remaining instances.
 *
 * On any failure every worker it started is stopped before it throws.
 *
 * An ensemble (platform "ensemble") starts no worker: its config becomes an
 * OperatorSpec, checked against the models served now (a step model not
 * loaded yet fails the load with UNAVAILABLE naming it), and each version
 * is served by an operator runner (the gateway's DAG executor).
 */
export interface PreparedVersion {
  version: string;
  config: ModelConfigJson;
  instances: VersionRunner;
  /** Set when the version is an operator (an ensemble): the spec its runner executes. */
  operator?: OperatorSpec;
  /** Config fields it sets that Operon does not implement (see unimplemented-fields.ts); shown in its status. */
  warnings?: string[];
}

export interface PrepareOptions {
  strictModelConfig: boolean;
  defaultMaxBatchSize: number;
  instances: ModelInstancesOptions;
  operators?: OperatorHooks;
  /**
   * True for a folder of the operator's --model-repository (its symlinks may
   * point elsewhere); false for files uploaded with the load request, whose
   * real paths must stay inside the folder.
   */
  trustedFolder?: boolean;
  /** The admin's limits, and how many instances the other models hold now; unset = none checked. */
  limits?: { limits: ResourceLimits; instancesOfOtherModels: number };
  /** Where native (Triton C++ API) backends are found and their --backend-config. */
  native?: NativeBackendOptions;
}

/**
 * Operon's own backends; any other `backend` name is a native one (libtriton_<name>.so, see native-backend-resolver.ts).
 * operon_steps: a pipeline of built-in steps (its version folder's steps.json), run by the worker's TypeScript backend.
 */
export const BUILTIN_BACKENDS = ["onnxruntime", "typescript", "operon_steps"];

/** True when the config's backend is served by a Triton C++ API library rather than a built-in backend. */
export function isNativeBackend(backend: string | undefined): backend is string {
  return backend !== undefined && backend !== "" && !BUILTIN_BACKENDS.includes(backend);
}

/** Files a version folder is searched for, in order, when the config names none. */
const DEFAULT_MODEL_FILES: Record<string, string[]> = {
  onnxruntime: ["model.onnx"],
  typescript: ["model.ts", "model.mts", "model.mjs", "model.js"],
  operon_steps: ["steps.json"],
};

export async function prepareModel(
  name: string,
  dir: string,
  configOverride: string | undefined,
  options: PrepareOptions,
): Promise<PreparedVersion[]> {
  let raw = await readRawConfig(name, dir, configOverride, options.strictModelConfig);
  const warnings = configWarnings(name, raw, options.strictModelConfig);
  if (isEnsembleConfig(raw)) return withWarnings(await prepareEnsemble(name, dir, raw, options), warnings);
  if (backendOf(name, normalizeConfig(raw, { modelName: name })) === undefined)
    raw = { ...raw, backend: "onnxruntime" };
  let config = normalizeConfig(raw, { modelName: name });
  validateConfig(config, `config of model '${name}'`);
  if (options.limits !== undefined)
    checkResourceLimits(name, config, options.limits.limits, options.limits.instancesOfOtherModels);

  const available = await listVersionDirs(dir);
  const versions = selectVersions(available, config.version_policy).map(String);
  if (versions.length === 0) {
    throw new OperonError(
      "INVALID_ARG",
      `at least one version must be available under the version policy of model '${name}' (found version folders: ${available.length > 0 ? available.join(", ") : "none"})`,
    );
  }

  const warmup = await buildWarmupSamples(name, config, dir, options.trustedFolder === true);
  const initialStates = await readInitialStateFiles(name, config, dir, options.trustedFolder === true);
  const instanceNames = instanceNamesOf(name, config, (options.instances.gpus ?? hostGpus()).count);
  const backend = config.backend || "onnxruntime";
  const native = isNativeBackend(backend);
  const candidates = config.default_model_filename
    ? [config.default_model_filename]
    : (DEFAULT_MODEL_FILES[backend] ?? ["model.onnx"]);
  const prepared: PreparedVersion[] = [];
  try {
    // The highest version completes the config; every version is checked against it.
    for (const version of [...versions].reverse()) {
      // Names from the config (possibly an override sent with the load request) stay inside the model's folder.
      const links = { linksMayLeave: options.trustedFolder === true };
      const confined = await Promise.all(
        candidates.map((file) =>
          confinedPath(dir, join(dir, version), file, `default_model_filename of model '${name}'`, links),
        ),
      );
      for (const output of config.output ?? []) {
        if (output.label_filename)
          await confinedPath(
            dir,
            join(dir, version),
            output.label_filename,
            `label_filename of output '${output.name}' of model '${name}'`,
            links,
          );
      }
      // A native backend reads what it likes from the model's folder (TRITONBACKEND_ModelRepository): no model file is required.
      const modelPath = native ? dir : await firstExisting(confined);
      if (modelPath === undefined) {
        throw new OperonError(
          "INVALID_ARG",
          `model file ${candidates.map((file) => `'${join(version, file)}'`).join(" or ")} of model '${name}' not found in the model's folder`,
        );
      }
      const spec: InstanceLaunchSpec = {
        model: name,
        version,
        backend: native ? "native" : backend,
        modelPath,
        modelDir: dir,
        config: config as Record<string, unknown>,
        parameters: stringParameters(config),
        ...(warmup.length > 0 ? { warmup } : {}),
        ...(initialStates.size > 0 ? { initialStates } : {}),
        ...(native
          ? {
              native: {
                backendName: backend,
                libraryPath: await resolveNativeBackend(name, backend, dir, version, options.native),
                backendConfig: options.native?.backendConfig?.[backend] ?? {},
                version,
                autoComplete: !options.strictModelConfig,
              },
            }
          : {}),
      };
      const first = await launchInstance(spec, instanceNames[0]!, options.instances);
      let firstWorker: BackendInstance | undefined = first.worker;
      try {
        if (native) {
          // The backend owns its config: it may have completed it (TRITONBACKEND_ModelSetConfig), as Triton lets it.
          if (first.config !== undefined && prepared.length === 0) {
            config = normalizeConfig(first.config as ModelConfigJson, { modelName: name });
            validateConfig(config, `config of model '${name}' (auto-completed by backend '${backend}')`);
          }
        } else if (prepared.length === 0 && !options.strictModelConfig) {
          // Auto-complete works on the config as written (before defaults), so it can tell what was left out.
          const completed = autoCompleteConfig(raw, first.io, { defaultMaxBatchSize: options.defaultMaxBatchSize });
          config = normalizeConfig(completed, { modelName: name });
          validateConfig(config, `config of model '${name}' (auto-completed)`);
        }
        validateAgainstModel(config, first.io, `model '${name}' version ${version}`);
        const instances = await ModelInstances.start(
          { ...spec, config: config as Record<string, unknown> },
          instanceNames,
          options.instances,
          firstWorker,
        );
        firstWorker = undefined;
        prepared.push({ version, config, instances });
      } finally {
        await firstWorker?.stop(1000);
      }
    }
  } catch (error) {
    await Promise.all(prepared.map((version) => version.instances.stop(0)));
    throw error;
  }
  // Every version serves the same (completed) config.
  return withWarnings(
    prepared.reverse().map((version) => ({ ...version, config })),
    warnings,
  );
}

/**
 * The fields of a config as written that Operon does not implement: load
 * warnings, or INVALID_ARG listing them all under --strict-model-config.
 */
function configWarnings(name: string, raw: ModelConfigJson, strict: boolean): string[] {
  const backend = typeof raw.backend === "string" ? raw.backend : undefined;
  const fields = unimplementedConfigFields(raw, { nativeBackend: isNativeBackend(backend) });
  if (fields.length === 0) return [];
  const messages = fields.map((field) => field.message);
  if (strict) {
    throw new OperonError(
      "INVALID_ARG",
      `config of model '${name}' sets field(s) Operon does not implement, refused under --strict-model-config: ${messages.join("; ")} (remove them, or serve without --strict-model-config to load with warnings)`,
    );
  }
  return messages;
}

function withWarnings(versions: PreparedVersion[], warnings: string[]): PreparedVersion[] {
  return warnings.length === 0 ? versions : versions.map((version) => ({ ...version, warnings }));
}

async function prepareEnsemble(
  name: string,
  dir: string,
  raw: ModelConfigJson,
  options: PrepareOptions,
): Promise<PreparedVersion[]> {
  if (options.operators === undefined) {
    throw new OperonError("UNSUPPORTED", `model '${name}': ensemble scheduling is not supported by this server`);
  }
  const config = normalizeConfig(raw, { modelName: name });
  validateConfig(config, `config of model '${name}'`);
  if ((config.input ?? []).length === 0 || (config.output ?? []).length === 0) {
    throw new OperonError(
      "INVALID_ARG",
      `ensemble '${name}' must declare its input and output tensors in its config (ensembles are not auto-completed)`,
    );
  }
  // Triton wants an (empty) version folder for an ensemble; without any, Operon serves version 1.
  const available = await listVersionDirs(dir);
  const versions = available.length === 0 ? ["1"] : selectVersions(available, config.version_policy).map(String);
  if (versions.length === 0) {
    throw new OperonError(
      "INVALID_ARG",
      `at least one version must be available under the version policy of ensemble '${name}' (found version folders: ${available.join(", ")})`,
    );
  }
  const spec = ensembleToOperator(name, config);
  assertValidOperator(spec, options.operators.lookup, `ensemble '${name}'`);
  const hooks = options.operators;
  return versions.map((version) => ({ version, config, instances: hooks.createRunner(spec), operator: spec }));
}

async function readRawConfig(
  name: string,
  dir: string,
  configOverride: string | undefined,
  strict: boolean,
): Promise<ModelConfigJson> {
  if (configOverride !== undefined)
    return configFromJson(configOverride, `config parameter of load request for '${name}'`);
  const file = await readConfigText(dir);
  if (file !== undefined) return parsePbtxt(file.text, file.path);
  if (strict) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${name}' has no config.pbtxt and --strict-model-config is set, so it cannot be auto-completed`,
    );
  }
  return {};
}

function backendOf(name: string, config: ModelConfigJson): string | undefined {
  const backend = config.backend || (config.platform === "onnxruntime_onnx" ? "onnxruntime" : undefined);
  // Any other backend name is a native one, resolved (or refused, naming the paths tried) when its versions load.
  if (backend === undefined && config.platform) {
    throw new OperonError(
      "UNSUPPORTED",
      `model '${name}': platform '${config.platform}' is not supported; use platform "onnxruntime_onnx"`,
    );
  }
  return backend;
}

/** The instances' names, "<group name>_<index>" (KIND_GPU groups: count per GPU; see instancePlacements). */
function instanceNamesOf(name: string, config: ModelConfigJson, gpuCount: number): string[] {
  return instancePlacements(name, config as Record<string, unknown>, gpuCount).map((placement) => placement.name);
}

async function firstExisting(paths: string[]): Promise<string | undefined> {
  for (const path of paths) {
    if (
      await access(path).then(
        () => true,
        () => false,
      )
    )
      return path;
  }
  return undefined;
}

/**
 * The bytes of each sequence_batching state's initial_state.data_file, by
 * state input name, from the model's initial_state/ folder (Triton's
 * layout); the sequence policy checks their sizes.
 */
async function readInitialStateFiles(
  name: string,
  config: ModelConfigJson,
  dir: string,
  linksMayLeave: boolean,
): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const raw of config.sequence_batching?.state ?? []) {
    const state = raw as { input_name?: string; initial_state?: Array<{ data_file?: string }> };
    const file = state.initial_state?.[0]?.data_file;
    if (!file) continue;
    const what = `model '${name}': initial_state data_file of state '${state.input_name ?? ""}'`;
    const path = await confinedPath(dir, join(dir, "initial_state"), file, what, { linksMayLeave });
    const info = await stat(path).catch(() => undefined);
    if (info === undefined || !info.isFile())
      throw new OperonError("INVALID_ARG", `${what} '${file}' not found in initial_state/`);
    if (info.size > MAX_STATE_BYTES)
      throw new OperonError("INVALID_ARG", `${what} '${file}' is larger than ${MAX_STATE_BYTES} bytes`);
    files.set(state.input_name ?? "", await readFile(path));
  }
  return files;
}

function stringParameters(config: ModelConfigJson): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(config.parameters ?? {})) out[key] = value.string_value ?? "";
  return out;
}
