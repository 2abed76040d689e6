import { createHash } from "node:crypto";
import { basename } from "node:path";

/**
 * The shared libraries (native code) among a load request's uploaded files,
 * each with its SHA-256 (hex): what the audit log records of a load that
 * brings native code, and what the gateway's load policy (native-upload-policy.ts)
 * refuses without --allow-native-uploads.
 */
const SHARED_LIBRARY = /\.so(\.\d+)*$/;

export function uploadedLibraries(
  files: ReadonlyMap<string, Buffer> | undefined,
): Array<{ file: string; sha256: string }> {
  if (files === undefined) return [];
  return [...files]
    .filter(([path]) => SHARED_LIBRARY.test(basename(path)))
    .map(([file, data]) => ({ file, sha256: createHash("sha256").update(data).digest("hex") }));
}
