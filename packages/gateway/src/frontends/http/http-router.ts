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
  private readonly routes: Route<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    this.routes.push({ method, segments: splitPath(pattern), handler });
    return this;
  }

  /** Throws INVALID_ARG when a path parameter is not valid percent-encoding. */
  match(method: string, pathname: string): RouteMatch<H> {
    const segments = splitPath(pathname);
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const raw = matchSegments(route.segments, segments);
      if (raw === undefined) continue;
      if (route.method !== method) {
        allowed.add(route.method);
        continue;
      }
      return { kind: "found", handler: route.handler, params: decodeParams(raw) };
    }
    return allowed.size > 0 ? { kind: "method-not-allowed", allowed: [...allowed] } : { kind: "not-found" };
  }
}

function splitPath(path: string): string[] {
  return path.split("/").slice(1);
}

function matchSegments(pattern: readonly string[], path: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== path.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const actual = path[i]!;
    if (expected.startsWith(":")) {
      if (actual === "") return undefined;
      params[expected.slice(1)] = actual;
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return params;
}

function decodeParams(raw: Record<string, string>): RouteParams {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    try {
      decoded[name] = decodeURIComponent(value);
    } catch (error) {
      throw new OperonError("INVALID_ARG", `malformed percent-encoding in the ${name} path segment '${value}'`, {
        cause: error,
      });
    }
  }
  return decoded;
}
