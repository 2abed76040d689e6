import { autoCompleteConfig, type IoInfo, type ModelIoMetadata } from "@operon/model-config/auto-complete";
import { configFromJson } from "@operon/model-config/config-json";
import {
  ISOLATION_PARAMETER,
  type ModelConfigJson,
  type ModelInputJson,
  type ModelOutputJson,
  type ModelVersionPolicyJson,
} from "@operon/model-config/model-config-types";
import { normalizeConfig, validateConfig } from "@operon/model-config/normalize-config";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import { fromConfigDataType, toConfigDataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { AppError, type FieldError } from "../../app-error.js";
import { MODEL_FILE_NAME } from "./model-store.js";

/**
 * The config of an uploaded model: the one suggested from its ONNX
 * signature, and the checks a config must pass before it is stored. The
 * checks are @operon/model-config's (the gateway's own) plus the signature
 * match, all reported as fieldErrors whose path is relative to the config
 * ("input[0].dims", "max_batch_size"), so the console can mark the field.
 */

/** Same choice as the gateway's (--default-max-batch-size) and Triton's ORT auto-complete. */
export const SUGGESTED_MAX_BATCH_SIZE = 4;

const ONNX_PLATFORM = "onnxruntime_onnx";
const ONNX_BACKEND = "onnxruntime";

/**
 * What Triton's ONNX Runtime auto-complete makes of the model: batching
 * (max_batch_size 4, dynamic_batching {}) when every input and output has a
 * dynamic first dimension, dims without that dimension; one CPU instance.
 */
export function suggestConfig(name: string, signature: ModelIoMetadata): ModelConfigJson {
  const completed = autoCompleteConfig({ name, platform: ONNX_PLATFORM }, signature, {
    defaultMaxBatchSize: SUGGESTED_MAX_BATCH_SIZE,
  });
  return {
    name,
    platform: ONNX_PLATFORM,
    max_batch_size: completed.max_batch_size ?? 0,
    input: completed.input ?? [],
    output: completed.output ?? [],
    instance_group: [{ kind: "KIND_CPU", count: 1 }],
    ...(completed.dynamic_batching !== undefined ? { dynamic_batching: completed.dynamic_batching } : {}),
  };
}

export interface PreparedConfig {
  /** The config as stored: what was given, completed from the signature (Triton's defaults are not spelled out). */
  config: ModelConfigJson;
  /** With Triton's defaults filled, as the gateway will serve it. */
  normalized: ModelConfigJson;
  /** config.pbtxt text. */
  text: string;
  /** The versions the config's version_policy serves, ascending. */
  servedVersions: number[];
}

/**
 * Checks `raw` (a ModelConfig JSON object, or undefined for the suggested
 * config) for model `name` whose versions on disk have `signatures`, and
 * prepares it for storing. `mustServe` is a version that the version policy
 * has to serve (the one being uploaded). Throws VALIDATION_FAILED with
 * fieldErrors.
 */
export function prepareConfig(
  name: string,
  raw: unknown,
  signatures: ReadonlyMap<number, ModelIoMetadata>,
  mustServe?: number,
): PreparedConfig {
  const available = [...signatures.keys()].sort((a, b) => a - b);
  const latest = signatures.get(available[available.length - 1]!)!;
  const given: ModelConfigJson =
    raw === undefined ? suggestConfig(name, latest) : configProblems(() => configFromJson(raw, "config"));

  const early: FieldError[] = [];
  if (given.name !== undefined && given.name !== "" && given.name !== name) {
    early.push({
      path: "name",
      message: `is '${given.name}' but the model is '${name}' (leave it out or make it equal)`,
    });
  }
  if (given.platform !== undefined && given.platform !== "" && given.platform !== ONNX_PLATFORM) {
    early.push({
      path: "platform",
      message: `uploaded models are served by the ONNX Runtime backend: platform must be "${ONNX_PLATFORM}" (or left out), not "${given.platform}"`,
    });
  }
  if (given.backend !== undefined && given.backend !== "" && given.backend !== ONNX_BACKEND) {
    early.push({
      path: "backend",
      message: `uploaded models are served by the ONNX Runtime backend: backend must be "${ONNX_BACKEND}" (or left out), not "${given.backend}"`,
    });
  }
  if (
    given.default_model_filename !== undefined &&
    given.default_model_filename !== "" &&
    given.default_model_filename !== MODEL_FILE_NAME
  ) {
    early.push({
      path: "default_model_filename",
      message: `uploads are stored as ${MODEL_FILE_NAME}; leave this out or set it to "${MODEL_FILE_NAME}"`,
    });
  }
  const isolation = given.parameters?.[ISOLATION_PARAMETER]?.string_value;
  if (isolation === "inline") {
    // An inline instance runs on the gateway's event loop: one slow execution holds every other request,
    // of every model and tenant, for as long. That trade is the server operator's to make, not an uploader's.
    early.push({
      path: `parameters.${ISOLATION_PARAMETER}`,
      message:
        'is "inline", which runs the model on the gateway\'s event loop, where one slow execution stalls every request of every model; uploaded models run on instance threads ("thread") or worker processes ("process"): inline instances are set in the server\'s model repository',
    });
  }
  if (early.length > 0) throw invalidConfig(early);

  const servedVersions = selectVersions(available, given.version_policy);
  if (servedVersions.length === 0) {
    throw invalidConfig([
      { path: "version_policy", message: `serves none of the model's versions (available: ${available.join(", ")})` },
    ]);
  }
  if (mustServe !== undefined && !servedVersions.includes(mustServe)) {
    throw invalidConfig([
      {
        path: "version_policy",
        message: `would not serve the uploaded version ${mustServe} (it serves ${servedVersions.join(", ")})`,
      },
    ]);
  }

  // The gateway completes a config from the highest version it serves; so does this.
  const newest = signatures.get(servedVersions[servedVersions.length - 1]!)!;
  const config = autoCompleteConfig({ ...given, ...(given.backend ? {} : { platform: ONNX_PLATFORM }) }, newest, {
    defaultMaxBatchSize: SUGGESTED_MAX_BATCH_SIZE,
  });
  // Names first: a tensor the model lacks cannot be completed, and "missing data_type" would hide the real mistake.
  const unknownNames = signatureProblems(config, newest).filter((problem) => problem.path.endsWith(".name"));
  if (unknownNames.length > 0) throw invalidConfig(unknownNames);
  const normalized = configProblems(() => {
    const filled = normalizeConfig(config, { modelName: name, source: "config" });
    validateConfig(filled, "config");
    return filled;
  });
  const mismatches = servedVersions.flatMap((version) =>
    signatureProblems(normalized, signatures.get(version)!, servedVersions.length > 1 ? `version ${version}: ` : ""),
  );
  if (mismatches.length > 0) throw invalidConfig(dedupe(mismatches));
  return { config, normalized, text: writePbtxt(config, "config"), servedVersions };
}

function invalidConfig(fieldErrors: FieldError[]): AppError {
  const summary = fieldErrors.map((field) => `${field.path}: ${field.message}`).join("; ");
  return new AppError("VALIDATION_FAILED", `the config is not valid for this model: ${summary}`, { fieldErrors });
}

/**
 * Runs a @operon/model-config step and turns its INVALID_ARG (whose message
 * is "config: <path>: <problem>") into a fieldError at that path.
 */
function configProblems<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (!(error instanceof OperonError) || error.kind !== "INVALID_ARG") throw error;
    const match = /^config: (.+?): (.*)$/s.exec(error.message);
    const path = match === null || match[1] === "<root>" ? "" : match[1]!;
    const message = match === null ? error.message : match[2]!;
    throw new AppError("VALIDATION_FAILED", `the config is not valid: ${path ? `${path}: ` : ""}${message}`, {
      fieldErrors: [{ path: path || "config", message }],
      cause: error,
    });
  }
}

/** Triton's version_policy: latest { num_versions } (default 1), all {}, specific { versions }. `available` ascending. */
export function selectVersions(available: number[], policy: ModelVersionPolicyJson | undefined): number[] {
  if (policy?.all !== undefined) return available;
  if (policy?.specific !== undefined) {
    const wanted = new Set(policy.specific.versions ?? []);
    return available.filter((version) => wanted.has(version));
  }
  return available.slice(-Math.max(1, policy?.latest?.num_versions ?? 1));
}

/**
 * Every way the (normalized) config disagrees with the model's signature,
 * as fieldErrors: tensor names, data types, and shapes (dims, or
 * reshape.shape when given, since that is what the model sees), with the
 * batch dimension accounted for when max_batch_size > 0. A model tensor
 * that cannot batch while max_batch_size > 0 is blamed on max_batch_size.
 */
export function signatureProblems(config: ModelConfigJson, io: ModelIoMetadata, prefix = ""): FieldError[] {
  const problems: FieldError[] = [];
  const maxBatchSize = config.max_batch_size ?? 0;
  const batching = maxBatchSize > 0;
  const unbatchable: string[] = [];
  const check = (
    kind: "input" | "output",
    configured: Array<ModelInputJson | ModelOutputJson>,
    model: IoInfo[],
  ): void => {
    configured.forEach((tensor, index) => {
      const at = `${kind}[${index}]`;
      const info = model.find((candidate) => candidate.name === tensor.name);
      if (info === undefined) {
        const names = model.map((candidate) => `'${candidate.name}'`).join(", ") || "none";
        problems.push({
          path: `${at}.name`,
          message: `${prefix}the model has no ${kind} '${tensor.name}'; its ${kind}s are ${names}`,
        });
        return;
      }
      const modelType =
        info.datatype === undefined ? "of a type without a KServe datatype" : toConfigDataType(info.datatype);
      if (info.datatype === undefined || fromConfigDataType(tensor.data_type ?? "TYPE_INVALID") !== info.datatype) {
        problems.push({
          path: `${at}.data_type`,
          message: `${prefix}is ${tensor.data_type ?? "not set"} but the model's ${kind} '${tensor.name}' is ${modelType}`,
        });
      }
      if (batching && (info.shape.length === 0 || info.shape[0] !== -1)) {
        unbatchable.push(
          `${kind} '${tensor.name}' ${info.shape.length === 0 ? "is a scalar" : `has a fixed first dimension (${info.shape[0]})`}`,
        );
        return;
      }
      const reshaped = tensor.reshape !== undefined;
      const dims = reshaped ? (tensor.reshape!.shape ?? []) : (tensor.dims ?? []);
      const expected = batching ? info.shape.slice(1) : info.shape;
      const fits = dims.length === expected.length && dims.every((dim, i) => expected[i] === -1 || expected[i] === dim);
      if (!fits) {
        const notes = [
          ...(batching ? ["max_batch_size > 0, so the model's first, batch dimension is left out"] : []),
          ...(expected.includes(-1) ? ["-1 marks sizes the model leaves dynamic"] : []),
        ];
        problems.push({
          path: `${at}.${reshaped ? "reshape.shape" : "dims"}`,
          message: `${prefix}[${dims.join(", ")}] does not match the model's ${kind} '${tensor.name}': expected [${expected.join(", ")}]${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`,
        });
      }
    });
    const listed = new Set(configured.map((tensor) => tensor.name));
    for (const info of model) {
      if (kind === "input" && !listed.has(info.name)) {
        problems.push({
          path: "input",
          message: `${prefix}the model's input '${info.name}' is missing from the config`,
        });
      }
    }
  };
  check("input", config.input ?? [], io.inputs);
  check("output", config.output ?? [], io.outputs);
  if (unbatchable.length > 0) {
    problems.unshift({
      path: "max_batch_size",
      message: `${prefix}is ${maxBatchSize} but the model cannot batch: its ${unbatchable.join(", ")}; set max_batch_size to 0`,
    });
  }
  return problems;
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.path}\u0000${error.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
