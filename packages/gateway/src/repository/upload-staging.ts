import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, rmdir, writeFile } from "node:fs/promises";
import { dirname, join, posix, resolve, sep } from "node:path";
import { OperonError } from "@operon/protocol/errors";

/**
 * Model files uploaded with a load request (Triton's `file:<version>/<path>`
 * parameters) land in a managed directory, never in the user's repositories.
 *
 * Contract: every path and the total size are checked before a single byte is
 * written. Each upload gets its own folder `<root>/<model>/<upload id>/`, so a
 * model that is serving from an earlier upload is never disturbed; the caller
 * discards the folder when the load fails or when the model stops using it.
 */
export interface StagedUpload {
  /** Folder holding the model as uploaded (`<version>/<path>` files, plus config). */
  readonly dir: string;
  /** Removes the folder (and the model's folder once empty); idempotent. */
  discard(): Promise<void>;
}

export interface UploadLimits {
  maxUploadBytes: number;
}
/** Checks one upload key ("<version>/<path>") and returns its normalized relative path. */
export function checkUploadPath(key: string): string {
  if (key.length === 0) throw new OperonError("INVALID_ARG", "file parameter has an empty path");
  if (key.includes("\0") || key.includes("\\")) {
    throw new OperonError("INVALID_ARG", `file path '${key}' contains a forbidden character`);
  }
  if (key.startsWith("/") || /^[a-zA-Z]:/.test(key)) {
    throw new OperonError(
      "INVALID_ARG",
      `file path '${key}' is absolute; paths must be relative to the model directory`,
    );
  }
  const normalized = posix.normalize(key);
  if (normalized === ".." || normalized.startsWith("../") || normalized === "." || normalized.endsWith("/")) {
    throw new OperonError("INVALID_ARG", `file path '${key}' escapes the model directory`);
  }
  if (key.split("/").some((segment) => segment === "..")) {
    throw new OperonError("INVALID_ARG", `file path '${key}' escapes the model directory`);
  }
  return normalized;
}

export async function stageUpload(
  uploadRoot: string,
  modelName: string,
  files: ReadonlyMap<string, Buffer>,
  limits: UploadLimits,
): Promise<StagedUpload> {
  let total = 0;
  const checked: Array<[string, Buffer]> = [];
  for (const [key, bytes] of files) {
    const relative = checkUploadPath(key);
    total += bytes.length;
    checked.push([relative, bytes]);
  }
  if (total > limits.maxUploadBytes) {
    throw new OperonError(
      "INVALID_ARG",
      `uploaded files total ${total} bytes, over the limit of ${limits.maxUploadBytes} bytes (--max-upload-bytes)`,
    );
  }
  const modelRoot = join(resolve(uploadRoot), modelName);
  const dir = join(modelRoot, `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`);
  const discard = async (): Promise<void> => {
    await rm(dir, { recursive: true, force: true });
    await rmdir(modelRoot).catch(() => undefined); // only succeeds once no other upload is left
  };
  try {
    for (const [relative, bytes] of checked) {
      const target = resolve(dir, relative);
      if (!target.startsWith(dir + sep)) {
        throw new OperonError("INVALID_ARG", `file path '${relative}' escapes the model directory`);
      }
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, bytes);
    }
  } catch (error) {
    await discard();
    throw error;
  }
  return { dir, discard };
}

/**
 * Removes every upload under `uploadRoot`: at start (an upload serves only
 * the process that received it; after a crash or a kill its files are
 * leftovers) and at stop. The root itself stays.
 */
export async function clearUploads(uploadRoot: string): Promise<void> {
  const entries = await readdir(uploadRoot).catch(() => [] as string[]);
  await Promise.all(entries.map((entry) => rm(join(uploadRoot, entry), { recursive: true, force: true })));
}
