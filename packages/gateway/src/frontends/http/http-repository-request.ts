import { OperonError } from "@operon/protocol/errors";
import type { ModelLoadOptions, ModelUnloadOptions } from "@operon/protocol/inference";
import { expectObject, expectString, invalidField, optionalBoolean, optionalObject } from "./http-json-fields.js";

/**
 * Bodies of the model repository extension (extension_model_repository.md).
 * Every body is optional: an empty body means no options.
 */

/** `POST v2/repository/index`: `{ready?: bool}`. */
export function decodeIndexRequest(json: unknown): { ready?: boolean } {
  if (json === undefined) return {};
  const ready = optionalBoolean(expectObject(json, "request body")["ready"], "ready");
  return ready === undefined ? {} : { ready };
}

const FILE_PREFIX = "file:";

/**
 * `POST v2/repository/models/${MODEL}/load`:
 * `{parameters: {config?: "<ModelConfig JSON>", "file:<version>/<path>": "<base64>"}}`.
 * As in Triton, file parameters need `config`; other parameters are ignored.
 * File paths must stay inside the model directory (no "..", not absolute).
 */
export function decodeLoadRequest(json: unknown): ModelLoadOptions {
  if (json === undefined) return {};
  const parameters = optionalObject(expectObject(json, "request body")["parameters"], "parameters");
  if (parameters === undefined) return {};
  const options: ModelLoadOptions = {};
  if (parameters["config"] !== undefined) options.config = expectString(parameters["config"], "parameters.config");
  const files = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(parameters)) {
    if (!key.startsWith(FILE_PREFIX)) continue;
    const path = key.slice(FILE_PREFIX.length);
    checkFilePath(key, path);
    const text = expectString(value, `parameters.${key}`);
    if (!isBase64(text)) throw invalidField(`parameters.${key}`, "is not valid base64");
    files.set(path, Buffer.from(text, "base64"));
  }
  if (files.size > 0) {
    if (options.config === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        "load request with 'file:' parameters must also provide the 'config' parameter",
      );
    }
    options.files = files;
  }
  return options;
}

/** `POST v2/repository/models/${MODEL}/unload`: `{parameters: {unload_dependents?: bool}}`. */
export function decodeUnloadRequest(json: unknown): ModelUnloadOptions {
  if (json === undefined) return {};
  const parameters = optionalObject(expectObject(json, "request body")["parameters"], "parameters");
  const unloadDependents = optionalBoolean(parameters?.["unload_dependents"], "parameters.unload_dependents");
  return unloadDependents === undefined ? {} : { unloadDependents };
}

function checkFilePath(key: string, path: string): void {
  const segments = path.split("/");
  if (
    path === "" ||
    path.startsWith("/") ||
    path.includes("\\") ||
    segments.some((s) => s === "" || s === "." || s === "..")
  ) {
    throw new OperonError(
      "INVALID_ARG",
      `load parameter '${key}' must name a relative file path inside the model directory, as in 'file:1/model.onnx'`,
    );
  }
}

/**
 * Standard padded base64. Buffer.from(…, "base64") silently skips anything
 * it does not understand, which would turn a corrupt upload into a corrupt
 * model file instead of an error.
 */
function isBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return !/[^A-Za-z0-9+/]/.test(text.slice(0, text.length - padding));
}
