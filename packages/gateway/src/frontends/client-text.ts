import { readdirSync } from "node:fs";

/**
 * Client-facing error text never names a path on the server: absolute paths
 * (model repositories, the data dir, a worker's stack) become `<server
 * path>/<last segment>` so the message still says which file, but not
 * where the server keeps it. A path counts as the server's when its first
 * segment is a top-level folder of this host (so URL paths such as
 * /v2/models/x are left alone).
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

export function withoutServerPaths(text: string): string {
  const known = hostRoots();
  return text.replace(ABSOLUTE_PATH, (whole, first: string, rest: string) => {
    if (!known.has(first)) return whole;
    const segments = `${first}${rest}`.split("/").filter(Boolean);
    return segments.length <= 1 ? "<server path>" : `<server path>/${segments[segments.length - 1]}`;
  });
}
