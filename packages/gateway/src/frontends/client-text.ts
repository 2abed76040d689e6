import { readdirSync } from "node:fs";

/**
 * Client-facing error text never names a path on the server: absolute paths
 * (model repositories, the data dir, a worker's stack) become `<server
 * path>/<last segment>` so the message still says which file, but not
 * where the server keeps it. A path counts as the server's when its first
 * segment is a top-level folder of this host (so URL paths such as
 * /v2/models/x are left alone). A `file://` URL (a model's import.meta.url,
 * a stack frame of an ES module) names a server path whatever its folder,
 * and is scrubbed the same way, URL and all.
 */
let roots: Set<string> | undefined;

function hostRoots(): Set<string> {
  if (roots === undefined) {
    try {
      roots = new Set(readdirSync("/"));
    } catch {
      roots = new Set(["home", "tmp", "var", "usr", "opt", "etc", "root", "srv", "mnt", "work", "data"]);
    }
  }
  return roots;
}

const ABSOLUTE_PATH = /(?<![\w.:/-])\/([^\s/'"`,;()[\]{}<>]+)((?:\/[^\s/'"`,;()[\]{}<>]*)*)/g;

/** file: URLs with any number of slashes and an optional host (file:///a/b, file://localhost/a/b, file:/a/b). */
const FILE_URL = /(?<![\w./:-])file:(?:\/\/[^\s/'"`,;()[\]{}<>]*)?(\/[^\s'"`,;()[\]{}<>]*)/gi;

function lastSegment(path: string): string {
  const segments = path.split("/").filter(Boolean);
  const last = segments[segments.length - 1];
  if (last === undefined) return "<server path>";
  let name = last;
  try {
    name = decodeURIComponent(last);
  } catch {
    // not percent-encoded after all: keep it as it is
  }
  return segments.length <= 1 ? "<server path>" : `<server path>/${name}`;
}

export function withoutServerPaths(text: string): string {
  const known = hostRoots();
  return text
    .replace(FILE_URL, (_whole, path: string) => lastSegment(path))
    .replace(ABSOLUTE_PATH, (whole, first: string, rest: string) => {
      if (!known.has(first)) return whole;
      const segments = `${first}${rest}`.split("/").filter(Boolean);
      return segments.length <= 1 ? "<server path>" : `<server path>/${segments[segments.length - 1]}`;
    });
}
