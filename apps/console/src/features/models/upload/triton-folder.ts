import { MODEL_NAME_PATTERN } from "./model-name";

/** A file of a picked folder: its name and its path inside the pick ("add_sub/1/model.onnx"), as File has them. */
export interface FolderFile {
  name: string;
  webkitRelativePath: string;
  size: number;
}

/** A Triton model folder, read from a folder pick: config.pbtxt and its version folders' model files. */
export interface TritonFolder<F extends FolderFile> {
  /** The folder's name: the model's. */
  name: string;
  configFile: F;
  /** Ascending by version. */
  versions: Array<{ version: number; file: F }>;
}

export type ReadFolder<F extends FolderFile> =
  | { ok: true; folder: TritonFolder<F> }
  | { ok: false; problems: string[] };

/** The ONNX file Triton looks for in a version folder (default_model_filename may name another; the upload takes .onnx). */
const MODEL_FILE = /\.onnx$/i;

/**
 * What a picked Triton model folder holds, as Triton lays it out: `<model>/config.pbtxt` and numbered version folders
 * `<model>/<n>/` with one ONNX file each. Every problem is named at once (no config.pbtxt, no version folder with an
 * ONNX file, a version folder with two, a name the model store does not take); other files (README, labels) are
 * ignored. Works on the browser's File objects (webkitRelativePath) and on plain objects in tests.
 */
export function readTritonFolder<F extends FolderFile>(files: readonly F[]): ReadFolder<F> {
  const problems: string[] = [];
  const paths = files.map((file) => ({ file, parts: (file.webkitRelativePath || file.name).split("/") }));
  const roots = [...new Set(paths.map((entry) => entry.parts[0]))];
  if (files.length === 0 || roots.length !== 1 || paths.every((entry) => entry.parts.length < 2))
    return { ok: false, problems: ["choose one model folder (the one holding config.pbtxt)"] };
  const name = roots[0]!;
  if (!MODEL_NAME_PATTERN.test(name))
    problems.push(`the folder's name “${name}” is not a model name: letters, digits, '_', '.' and '-' only`);
  const configFile = paths.find((entry) => entry.parts.length === 2 && entry.parts[1] === "config.pbtxt")?.file;
  if (configFile === undefined) problems.push(`${name}/config.pbtxt is missing: a Triton model folder has one`);

  const byVersion = new Map<number, F[]>();
  for (const { file, parts } of paths) {
    if (parts.length !== 3 || !/^\d+$/.test(parts[1]!) || !MODEL_FILE.test(parts[2]!)) continue;
    const version = Number(parts[1]);
    byVersion.set(version, [...(byVersion.get(version) ?? []), file]);
  }
  for (const [version, found] of byVersion) {
    if (version < 1) problems.push(`${name}/${version}/: versions start at 1`);
    if (found.length > 1)
      problems.push(
        `${name}/${version}/ holds ${found.length} ONNX files (${found.map((file) => file.name).join(", ")}); keep one`,
      );
  }
  if (byVersion.size === 0)
    problems.push(`no version folder with an ONNX file: Triton reads ${name}/1/model.onnx, ${name}/2/model.onnx, …`);
  if (problems.length > 0) return { ok: false, problems };
  const versions = [...byVersion.entries()]
    .sort(([a], [b]) => a - b)
    .map(([version, found]) => ({ version, file: found[0]! }));
  return { ok: true, folder: { name, configFile: configFile!, versions } };
}
