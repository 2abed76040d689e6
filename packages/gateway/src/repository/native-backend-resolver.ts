import { access, constants } from "node:fs/promises";
import { basename, join } from "node:path";
import { OperonError } from "@operon/protocol/errors";
import { DEFAULT_BACKEND_DIRECTORY, nativeBackendsUnavailableReason } from "@operon/native/tritonserver-host";

/**
 * Finds the library of a model's native backend as Triton does: a config
 * `backend: "<name>"` that is not one of Operon's built-in backends is
 * served by `libtriton_<name>.so`, looked up in
 *   1. the model's version folder  (<model>/<version>/libtriton_<name>.so)
 *   2. the model's folder          (<model>/libtriton_<name>.so)
 *   3. the backend directory       (<--backend-directory>/<name>/libtriton_<name>.so)
 * The first that exists wins. Not found: NOT_FOUND naming every path tried.
 */

/** Where native backends come from and how they are set up (Triton's --backend-directory / --backend-config). */
export interface NativeBackendOptions {
  /** Default: Operon's built backends (native/build/tritonserver/backends). */
  backendDirectory?: string;
  /** --backend-config <name>,<key>=<value>, gathered per backend name. */
  backendConfig?: Record<string, Record<string, string>>;
}

/**
 * The load failed because native backends cannot run on this host at all
 * (not built: no compiler at install, OPERON_NATIVE=0): not the model's
 * fault. A start-up load of every model ('*', or modes none/poll) leaves
 * such models unloaded with this reason and serves the rest, even with
 * --exit-on-error.
 */
export class NativeBackendsUnavailableError extends OperonError {
  constructor(message: string) {
    super("UNAVAILABLE", message);
  }
}

export function nativeLibraryName(backend: string): string {
  return `libtriton_${backend}.so`;
}

/** A backend name as a file name part: Triton's names are identifiers; nothing that could leave a folder. */
const BACKEND_NAME = /^[A-Za-z0-9_.-]+$/;

export async function resolveNativeBackend(
  model: string,
  backend: string,
  modelDir: string,
  version: string,
  options: NativeBackendOptions = {},
): Promise<string> {
  if (!BACKEND_NAME.test(backend) || backend.startsWith(".")) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${model}': backend name '${backend}' is not a valid backend name (letters, digits, '_', '-', '.')`,
    );
  }
  const unavailable = nativeBackendsUnavailableReason();
  if (unavailable !== undefined)
    throw new NativeBackendsUnavailableError(`model '${model}' needs native backend '${backend}': ${unavailable}`);
  const file = nativeLibraryName(backend);
  const backendDirectory = options.backendDirectory ?? DEFAULT_BACKEND_DIRECTORY;
  const candidates = [join(modelDir, version, file), join(modelDir, file), join(backendDirectory, backend, file)];
  for (const candidate of candidates) {
    if (
      await access(candidate, constants.R_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  // The first two relative to the model's folder: clients see them (absolute server paths are masked in client text).
  const folder = basename(modelDir);
  throw new OperonError(
    "NOT_FOUND",
    `model '${model}': backend '${backend}' is not a built-in backend (onnxruntime, typescript, operon_steps) and ${file} was not found; tried, in order: ` +
      `the version folder (${join(folder, version, file)}), the model folder (${join(folder, file)}), ` +
      `the backend directory (${candidates[2]}; set it with --backend-directory)`,
  );
}
