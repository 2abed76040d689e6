import { lstat, opendir } from "node:fs/promises";
import { extname, join, relative, sep } from "node:path";
import { AppError } from "../../app-error.js";
import type { DuckSandbox } from "./duckdb-sandbox.js";

/**
 * A folder of images on the server as a dataset (issue 24): one row per
 * image file, `path` (relative to the folder, '/'-separated, the value an
 * `image-path` mapping reads the file by) and `size_bytes`, in path order.
 * Only admins make one, of a folder under an allowed root
 * (dataset-files.ts); the folder is listed each time the dataset's query
 * runs (a preview, a job's snapshot), so it is the folder as it is then.
 *
 * The listing walks subfolders, but never follows a symbolic link (a link
 * could lead outside the allowed roots; a job's image reads check the real
 * path again, row-request.ts). It is bounded: more than MAX_FOLDER_IMAGES
 * images, more than MAX_FOLDER_ENTRIES entries looked at, or folders nested
 * deeper than MAX_FOLDER_DEPTH, and the listing is refused with the reason,
 * never cut short (a dataset that silently lost rows would be worse).
 */
export const IMAGE_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff"]);
export const MAX_FOLDER_IMAGES = 100_000;
export const MAX_FOLDER_ENTRIES = 1_000_000;
export const MAX_FOLDER_DEPTH = 16;

export interface FolderImage {
  path: string;
  sizeBytes: number;
}

export interface FolderLimits {
  maxImages: number;
  maxEntries: number;
  maxDepth: number;
}

const DEFAULT_LIMITS: FolderLimits = {
  maxImages: MAX_FOLDER_IMAGES,
  maxEntries: MAX_FOLDER_ENTRIES,
  maxDepth: MAX_FOLDER_DEPTH,
};

/** The folder's image files, sorted by path; refuses (VALIDATION_FAILED) past the limits. */
export async function listImageFolder(folder: string, limits: FolderLimits = DEFAULT_LIMITS): Promise<FolderImage[]> {
  const refuse = (message: string) =>
    new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path: "file.path", message }] });
  const images: FolderImage[] = [];
  let entries = 0;
  const walk = async (dir: string, depth: number): Promise<void> => {
    let handle;
    try {
      handle = await opendir(dir);
    } catch (error) {
      throw refuse(`the folder '${dir}' cannot be read: ${(error as Error).message}`);
    }
    // The directory handle streams entries: a folder of a million files is not read into memory at once.
    for await (const entry of handle) {
      entries += 1;
      if (entries > limits.maxEntries)
        throw refuse(
          `the folder holds more than ${limits.maxEntries.toLocaleString("en")} entries; make a dataset of a subfolder`,
        );
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (depth >= limits.maxDepth)
          throw refuse(`the folder nests deeper than ${limits.maxDepth} levels (at '${relative(folder, full)}')`);
        await walk(full, depth + 1);
      } else if (entry.isFile() && IMAGE_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
        if (images.length >= limits.maxImages)
          throw refuse(
            `the folder holds more than ${limits.maxImages.toLocaleString("en")} images; make datasets of its subfolders`,
          );
        // lstat: the entry itself (a file swapped for a link since readdir is not followed); gone since: left out.
        const info = await lstat(full).catch(() => undefined);
        if (info?.isFile() === true)
          images.push({ path: relative(folder, full).split(sep).join("/"), sizeBytes: info.size });
      }
      // Symbolic links, sockets and other files are left out.
    }
  };
  await walk(folder, 0);
  images.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return images;
}

/** Creates the table `source` (path VARCHAR, size_bytes BIGINT) in the sandbox from the folder's listing. */
export async function createImageFolderSource(sandbox: DuckSandbox, folder: string): Promise<number> {
  const images = await listImageFolder(folder);
  await sandbox.connection.run("CREATE TABLE source (path VARCHAR NOT NULL, size_bytes BIGINT NOT NULL)");
  const appender = await sandbox.connection.createAppender("source");
  try {
    for (const image of images) {
      appender.appendVarchar(image.path);
      appender.appendBigInt(BigInt(image.sizeBytes));
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
  return images.length;
}
