import { OperonError } from "@operon/protocol/errors";
import type { ModelLoadOptions } from "@operon/protocol/inference";
import { uploadedLibraries } from "@operon/protocol/uploaded-libraries";
import { isNativeBackend } from "./model-loader.js";

/**
 * Who may bring native code through the load API. A native backend runs
 * with the server's rights, so a load whose `file:` uploads carry one (a
 * shared library among the files, or a config naming a backend that is not
 * built in, which would load a library from the upload) needs the server
 * flag --allow-native-uploads on top of the admin scope every load needs.
 * Models of the --model-repository folders are trusted, as in Triton.
 */

export interface NativeUpload {
  /** The uploaded shared libraries with their SHA-256 (hex), for the audit log. */
  libraries: Array<{ file: string; sha256: string }>;
  /** The config's backend when it is a native one. */
  backend: string | undefined;
}

/** What native code a load's uploads bring; undefined when none (no uploads, or only built-in backends and no library). */
export function nativeUploadOf(options: ModelLoadOptions): NativeUpload | undefined {
  if (options.files === undefined || options.files.size === 0) return undefined;
  const libraries = uploadedLibraries(options.files);
  const backend = configBackendOf(options.config);
  if (libraries.length === 0 && !isNativeBackend(backend)) return undefined;
  return { libraries, backend: isNativeBackend(backend) ? backend : undefined };
}

/** Throws PERMISSION_DENIED naming the flag when the load brings native code and the server does not allow it. */
export function assertNativeUploadAllowed(
  model: string,
  upload: NativeUpload | undefined,
  allowNativeUploads: boolean,
): void {
  if (upload === undefined || allowNativeUploads) return;
  const what =
    upload.libraries.length > 0
      ? `uploads a shared library (${upload.libraries.map((library) => library.file).join(", ")})`
      : `names the native backend '${upload.backend}' for uploaded files`;
  throw new OperonError(
    "PERMISSION_DENIED",
    `load of model '${model}' ${what}: native code runs with the server's rights, so loading it from uploaded files needs the server flag --allow-native-uploads (and the admin scope); models in the model repository need neither`,
  );
}

function configBackendOf(config: string | undefined): string | undefined {
  if (config === undefined) return undefined;
  try {
    const parsed = JSON.parse(config) as { backend?: unknown };
    return typeof parsed?.backend === "string" ? parsed.backend : undefined;
  } catch {
    // The loader reports a malformed config with its own message.
    return undefined;
  }
}
