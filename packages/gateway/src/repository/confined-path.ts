import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { OperonError } from "@operon/protocol/errors";

/**
 * Every file a model config names (default_model_filename, label_filename,
 * ...) must lie inside the model's folder. A config override sent with a load
 * request is anyone's with model control, so `../../tmp/x.js` or a symlink
 * out of the folder would let it run code from elsewhere on the host.
 *
 * Resolves `name` against `base` (the version or model folder) and returns
 * the real path (symlinks followed) when the file exists, or the lexical
 * path when it does not. Throws INVALID_ARG naming `what` when the name is
 * absolute or climbs out of `root` (the model's folder), or when its real
 * path leaves `root` and `linksMayLeave` is false. Links are trusted
 * (`linksMayLeave`) only in the operator's own --model-repository folders,
 * where whoever placed them owns the host anyway (the example repository
 * links its ONNX files from node_modules); files that came with a load
 * request are confined with their real paths.
 * Messages name the file relative to the model folder, never a server path.
 */
export async function confinedPath(
  root: string,
  base: string,
  name: string,
  what: string,
  options: { linksMayLeave?: boolean } = {},
): Promise<string> {
  if (name === "" || isAbsolute(name) || name.includes("\0")) {
    throw new OperonError("INVALID_ARG", `${what} '${name}' must be a file name relative to the model's folder`);
  }
  const realRoot = await realpath(root).catch(() => resolve(root));
  const lexical = resolve(base, name);
  if (!inside(resolve(root), lexical) && !inside(realRoot, lexical)) {
    throw new OperonError("INVALID_ARG", `${what} '${name}' points outside the model's folder`);
  }
  const real = await realpath(lexical).catch(() => undefined);
  if (real !== undefined && options.linksMayLeave !== true && !inside(realRoot, real)) {
    throw new OperonError("INVALID_ARG", `${what} '${name}' is a link to a file outside the model's folder`);
  }
  return real ?? lexical;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}
