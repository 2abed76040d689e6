import { OperonError } from "@operon/protocol/errors";

/**
 * A minimal path router: patterns are "/"-separated literals and `:name`
 * parameters, matched segment by segment against the raw path and then
 * percent-decoded, so "a%2Fb" is one model name "a/b". Routes are tried in
 * the order added (a literal route added first shadows a parameter).
 */
export type RouteParams = Readonly<Record<string, string>>;

export type RouteMatch<H> =
  | { kind: "found"; handler: H; params: RouteParams }
  | { kind: "method-not-allowed"; allowed: string[] }
  | { kind: "not-found" };

interface Route<H> {
  method: string;
  segments: string[];
  handler: H;
}

export class Router<H> {
  /** Routes by segment count, each list in the order added: a path is compared only with routes of its length. */
  private readonly byLength = new Map<number, Route<H>[]>();

  add(method: string, pattern: string, handler: H): this {
    const segments = splitPath(pattern);
    let routes = this.byLength.get(segments.length);
    if (routes === undefined) this.byLength.set(segments.length, (routes = []));
    routes.push({ method, segments, handler });
    return this;
  }

  /** Throws INVALID_ARG when a path parameter is not valid percent-encoding. */
  match(method: string, pathname: string): RouteMatch<H> {
    // Runs for every request: nothing is allocated for a route that does not match.
    const segments = splitPath(pathname);
    let allowed: Set<string> | undefined;
    for (const route of this.byLength.get(segments.length) ?? []) {
      if (!matchesSegments(route.segments, segments)) continue;
      if (route.method !== method) {
        (allowed ??= new Set()).add(route.method);
        continue;
      }
      return { kind: "found", handler: route.handler, params: decodeParams(route.segments, segments) };
    }
    return allowed !== undefined ? { kind: "method-not-allowed", allowed: [...allowed] } : { kind: "not-found" };
  }
}

function splitPath(path: string): string[] {
  return path.split("/").slice(1);
}

/** Whether `path` fits the pattern of the same length: literals equal, parameters not empty. */
function matchesSegments(pattern: readonly string[], path: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const actual = path[i]!;
    if (expected.charCodeAt(0) === COLON ? actual === "" : expected !== actual) return false;
  }
  return true;
}

const COLON = 0x3a;

/** The parameters of a matching path, percent-decoded. */
function decodeParams(pattern: readonly string[], path: readonly string[]): RouteParams {
  const decoded: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    if (expected.charCodeAt(0) !== COLON) continue;
    const name = expected.slice(1);
    const value = path[i]!;
    try {
      decoded[name] = value.indexOf("%") === -1 ? value : decodeURIComponent(value);
    } catch (error) {
      throw new OperonError("INVALID_ARG", `malformed percent-encoding in the ${name} path segment '${value}'`, {
        cause: error,
      });
    }
  }
  return decoded;
}
