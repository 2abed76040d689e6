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

/** Paths at most this long are remembered once matched (Router.match); longer ones are matched every time. */
const MAX_REMEMBERED_PATH_LENGTH = 256;

/** Matched paths remembered at once, over all methods: past this the memory starts again, empty. */
const MAX_REMEMBERED_PATHS = 4096;

export class Router<H> {
  /** Routes by segment count, each list in the order added: a path is compared only with routes of its length. */
  private readonly byLength = new Map<number, Route<H>[]>();
  /**
   * Paths found before, by method, and what they matched (params frozen: every request of the path shares them).
   * Clients send the same few paths again and again; a lookup costs one hash of the path, a match a split, a
   * walk over the routes and a fresh params object (3-4 µs a request on Node 20). Bounded in count and path
   * length, so a client sending endless distinct paths costs at most MAX_REMEMBERED_PATHS × 256 characters.
   */
  private readonly remembered = new Map<string, Map<string, RouteMatch<H>>>();
  private rememberedCount = 0;

  add(method: string, pattern: string, handler: H): this {
    this.forget();
    const segments = splitPath(pattern);
    let routes = this.byLength.get(segments.length);
    if (routes === undefined) this.byLength.set(segments.length, (routes = []));
    routes.push({ method, segments, handler });
    return this;
  }

  /** Throws INVALID_ARG when a path parameter is not valid percent-encoding. */
  match(method: string, pathname: string): RouteMatch<H> {
    const known = this.remembered.get(method)?.get(pathname);
    if (known !== undefined) return known;
    const match = this.matchRoutes(method, pathname);
    if (match.kind === "found" && pathname.length <= MAX_REMEMBERED_PATH_LENGTH) this.remember(method, pathname, match);
    return match;
  }

  private remember(method: string, pathname: string, match: RouteMatch<H> & { kind: "found" }): void {
    if (this.rememberedCount >= MAX_REMEMBERED_PATHS) this.forget();
    let paths = this.remembered.get(method);
    if (paths === undefined) this.remembered.set(method, (paths = new Map()));
    Object.freeze(match.params);
    paths.set(pathname, Object.freeze(match));
    this.rememberedCount += 1;
  }

  /** How many matched paths are remembered now (for tests). */
  get rememberedPaths(): number {
    return this.rememberedCount;
  }

  private forget(): void {
    this.remembered.clear();
    this.rememberedCount = 0;
  }

  private matchRoutes(method: string, pathname: string): RouteMatch<H> {
    // Nothing is allocated for a route that does not match.
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
