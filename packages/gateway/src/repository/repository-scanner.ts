import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * Reads Triton-layout model repositories: `<repo>/<model>/config.pbtxt` and
 * numeric version folders `<repo>/<model>/<version>/…`. Pure file-system
 * queries; no parsing of configs or models happens here.
 */

/** A model name is a single safe path segment. */
export function isValidModelName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !/[/\\\0]/.test(name) && name !== "." && name !== "..";
}

/** Every model folder across the repositories; the first repository wins on duplicates. */
export async function listRepositoryModels(repositories: readonly string[]): Promise<Map<string, string>> {
  const models = new Map<string, string>();
  for (const repository of repositories) {
    // A repository removed while the server runs lists as empty (its models unload in poll mode).
    const entries = await readdir(repository, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [];
      throw error;
    });
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!entry.name.startsWith(".") && (entry.isDirectory() || entry.isSymbolicLink())) {
        const modelDir = join(repository, entry.name);
        if ((await isDirectory(modelDir)) && !models.has(entry.name)) models.set(entry.name, modelDir);
      }
    }
  }
  return models;
}

export async function findModelDir(repositories: readonly string[], name: string): Promise<string | undefined> {
  if (!isValidModelName(name)) return undefined;
  for (const repository of repositories) {
    const modelDir = join(repository, name);
    if (await isDirectory(modelDir)) return modelDir;
  }
  return undefined;
}

/** Numeric version folders of a model, ascending. Other entries are ignored, as in Triton. */
export async function listVersionDirs(modelDir: string): Promise<number[]> {
  const entries = await readdir(modelDir, { withFileTypes: true });
  const versions: number[] = [];
  for (const entry of entries) {
    if (/^[0-9]+$/.test(entry.name) && (await isDirectory(join(modelDir, entry.name)))) {
      const version = Number(entry.name);
      if (Number.isSafeInteger(version) && version > 0) versions.push(version);
    }
  }
  return versions.sort((a, b) => a - b);
}

/** config.pbtxt text, or undefined when the model has none. */
export async function readConfigText(modelDir: string): Promise<{ path: string; text: string } | undefined> {
  const path = join(modelDir, "config.pbtxt");
  try {
    return { path, text: await readFile(path, "utf8") };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * A cheap signature of everything under a model folder (paths, sizes, mtimes)
 * so that poll mode can tell a changed model from an unchanged one.
 */
export async function modelFingerprint(modelDir: string): Promise<string> {
  const parts: string[] = [];
  async function walk(dir: string, prefix: string, depth: number): Promise<void> {
    if (depth > 4) return;
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, entry.name);
      const info = await stat(full).catch(() => undefined);
      if (info === undefined) continue;
      if (info.isDirectory()) await walk(full, `${prefix}${entry.name}/`, depth + 1);
      else parts.push(`${prefix}${entry.name}:${info.size}:${info.mtimeMs}`);
    }
  }
  await walk(modelDir, "", 0);
  return parts.join("|");
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
