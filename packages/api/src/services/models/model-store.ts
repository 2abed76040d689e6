import { randomUUID } from "node:crypto";
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";

/**
 * The model store: the Triton model repository that uploads live in
 * (`<dir>/<model>/config.pbtxt`, `<dir>/<model>/<version>/model.onnx`), which
 * the gateway serves as one of its --model-repository folders.
 *
 * Every change appears at once or not at all: files are prepared in a hidden
 * folder of the store (`.staging-<id>`; the gateway ignores names starting
 * with '.') and renamed into place, and removals are a rename to a hidden
 * `.trash-<id>` folder before the delete. Each change returns an undo, so a
 * caller whose later step fails (the database, the gateway's load) can put
 * the store back as it was. Leftover hidden folders from a crash are removed
 * at start. Callers serialize changes per model (ModelWorkspace's lock).
 */
export const MODEL_FILE_NAME = "model.onnx";
export const CONFIG_FILE_NAME = "config.pbtxt";

const STAGING_PREFIX = ".staging-";
const TRASH_PREFIX = ".trash-";

export interface StoreChange {
  /** Restores the store as it was before the change. */
  undo(): Promise<void>;
}

export interface StoreRemoval extends StoreChange {
  /** Deletes the removed files for good. */
  commit(): Promise<void>;
}

export class ModelStore {
  private constructor(readonly dir: string) {}

  /** `dir` is made absolute, so the gateway's messages (which name absolute paths) can be matched against it. */
  static async create(storeDir: string): Promise<ModelStore> {
    const dir = resolve(storeDir);
    await mkdir(dir, { recursive: true });
    for (const name of await readdir(dir)) {
      if (name.startsWith(STAGING_PREFIX) || name.startsWith(TRASH_PREFIX))
        await rm(join(dir, name), { recursive: true, force: true });
    }
    return new ModelStore(dir);
  }

  modelDir(name: string): string {
    return join(this.dir, name);
  }

  modelFile(name: string, version: number): string {
    return join(this.dir, name, String(version), MODEL_FILE_NAME);
  }

  /** The path recorded as a version's artifact: relative to the store. */
  artifactUri(name: string, version: number): string {
    return `${name}/${version}/${MODEL_FILE_NAME}`;
  }

  async hasModel(name: string): Promise<boolean> {
    return isDirectory(this.modelDir(name));
  }

  /** Numeric version folders that hold a model file, ascending. */
  async versionsOnDisk(name: string): Promise<number[]> {
    const entries = await readdir(this.modelDir(name)).catch(() => [] as string[]);
    const versions: number[] = [];
    for (const entry of entries) {
      if (
        /^[1-9][0-9]*$/.test(entry) &&
        (await stat(join(this.modelDir(name), entry, MODEL_FILE_NAME)).catch(() => undefined)) !== undefined
      ) {
        versions.push(Number(entry));
      }
    }
    return versions.sort((a, b) => a - b);
  }

  async readConfigText(name: string): Promise<string | undefined> {
    return readFile(join(this.modelDir(name), CONFIG_FILE_NAME), "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
  }

  /**
   * Adds `version` of model `name`: moves the staged upload in as its model
   * file and writes config.pbtxt. A new model's folder appears whole (config
   * and version together); for an existing one the version folder appears,
   * then the config is replaced. The staged file is moved, not copied, when
   * staging and store share a file system.
   */
  async addVersion(name: string, version: number, stagedFile: string, configText: string): Promise<StoreChange> {
    const staging = await this.stagingDir();
    try {
      const versionDir = join(staging, String(version));
      await mkdir(versionDir);
      await moveFile(stagedFile, join(versionDir, MODEL_FILE_NAME));
      if (!(await this.hasModel(name))) {
        await writeDurably(join(staging, CONFIG_FILE_NAME), configText);
        await rename(staging, this.modelDir(name));
        return { undo: () => this.discard(this.modelDir(name)) };
      }
      const target = join(this.modelDir(name), String(version));
      if (await isDirectory(target))
        throw new Error(`the store already has a folder for version ${version} of model '${name}' (${target})`);
      await rename(versionDir, target);
      await rm(staging, { recursive: true, force: true });
      let config: StoreChange;
      try {
        config = await this.replaceConfig(name, configText);
      } catch (error) {
        await this.discard(target);
        throw error;
      }
      return {
        undo: async () => {
          await config.undo();
          await this.discard(target);
        },
      };
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * A new model whose first version is a set of files written from memory
   * (a step model: steps.json and the files its steps read), with its
   * config; atomically, as addVersion does for a new model. Paths are
   * relative to the version folder and were checked by the caller.
   */
  async addModelFromFiles(
    name: string,
    version: number,
    files: ReadonlyArray<readonly [string, Buffer]>,
    configText: string,
  ): Promise<StoreChange> {
    if (await this.hasModel(name)) throw new Error(`the store already has a folder for model '${name}'`);
    const staging = await this.stagingDir();
    try {
      await writeFiles(join(staging, String(version)), files);
      await writeDurably(join(staging, CONFIG_FILE_NAME), configText);
      await rename(staging, this.modelDir(name));
      return { undo: () => this.discard(this.modelDir(name)) };
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * A new version folder of an existing model, written from memory (a custom
   * step's next model.ts and its files) and renamed into place whole, so the
   * gateway never sees half a version; the config is left as it is.
   */
  async addVersionFromFiles(
    name: string,
    version: number,
    files: ReadonlyArray<readonly [string, Buffer]>,
  ): Promise<StoreChange> {
    if (!(await this.hasModel(name))) throw new Error(`the store has no folder for model '${name}'`);
    const target = join(this.modelDir(name), String(version));
    if (await isDirectory(target))
      throw new Error(`the store already has a folder for version ${version} of model '${name}' (${target})`);
    const staging = await this.stagingDir();
    try {
      await writeFiles(join(staging, String(version)), files);
      await rename(join(staging, String(version)), target);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return { undo: () => this.discard(target) };
  }

  /** Replaces (or creates) config.pbtxt atomically; the undo restores the previous text (or its absence). */
  async replaceConfig(name: string, configText: string): Promise<StoreChange> {
    const path = join(this.modelDir(name), CONFIG_FILE_NAME);
    const previous = await this.readConfigText(name);
    await this.writeConfig(path, configText);
    return {
      undo: async () => {
        if (previous === undefined) await unlink(path).catch(() => undefined);
        else await this.writeConfig(path, previous);
      },
    };
  }

  /** Takes a model's folder out of the store (a rename); commit deletes it, undo puts it back. */
  async removeModel(name: string): Promise<StoreRemoval> {
    if (!(await this.hasModel(name))) return { commit: async () => {}, undo: async () => {} };
    const trash = join(this.dir, `${TRASH_PREFIX}${randomUUID()}`);
    await rename(this.modelDir(name), trash);
    return {
      commit: () => rm(trash, { recursive: true, force: true }),
      undo: () => rename(trash, this.modelDir(name)),
    };
  }

  private async writeConfig(path: string, text: string): Promise<void> {
    const temp = join(this.dir, `${STAGING_PREFIX}${randomUUID()}.pbtxt`);
    try {
      await writeDurably(temp, text);
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  private async stagingDir(): Promise<string> {
    const dir = join(this.dir, `${STAGING_PREFIX}${randomUUID()}`);
    await mkdir(dir);
    return dir;
  }

  /** Removes a folder: out of sight first (rename), then deleted. */
  private async discard(path: string): Promise<void> {
    const trash = join(this.dir, `${TRASH_PREFIX}${randomUUID()}`);
    try {
      await rename(path, trash);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    await rm(trash, { recursive: true, force: true });
  }
}

/** Writes `files` (paths relative to `versionDir`, checked by the caller) into a new folder, each synced. */
async function writeFiles(versionDir: string, files: ReadonlyArray<readonly [string, Buffer]>): Promise<void> {
  await mkdir(versionDir);
  for (const [path, data] of files) {
    const target = join(versionDir, path);
    if (!target.startsWith(versionDir + sep)) throw new Error(`file '${path}' would leave the version folder`);
    await mkdir(dirname(target), { recursive: true });
    const handle = await open(target, "wx");
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

/** Writes and fsyncs, so that a rename of the file never exposes a torn one after a crash. */
async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, "wx");
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A rename, or copy + delete across file systems; the data is synced either way before it is visible. */
async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    await copyFile(from, to);
    await unlink(from);
  }
  const handle = await open(to, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
