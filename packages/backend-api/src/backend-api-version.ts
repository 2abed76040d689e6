import { OperonError } from "@operon/protocol/errors";

/**
 * The version of what backends and TypeScript models are written against
 * (backend.ts, typescript-model-api.ts). Bump `minor` when adding something
 * old code keeps working with (a new optional field, a new helper), `major`
 * (and reset minor) on any change that can break code written before it.
 *
 * Code written for { major: M, minor: m } runs on a server providing
 * { major: M, minor: n } when m <= n: the same major, and nothing newer than
 * the server has. Anything else is refused at load.
 */
export interface BackendApiVersion {
  readonly major: number;
  readonly minor: number;
}

export const BACKEND_API_VERSION: BackendApiVersion = Object.freeze({ major: 1, minor: 0 });

/** "1.0". */
export function formatBackendApiVersion(version: BackendApiVersion): string {
  return `${version.major}.${version.minor}`;
}

/** True when code written for `written` runs against `provided`. */
export function isCompatibleBackendApi(
  written: BackendApiVersion,
  provided: BackendApiVersion = BACKEND_API_VERSION,
): boolean {
  return written.major === provided.major && written.minor <= provided.minor;
}

/**
 * Checks the backend API version a model declares (its `operonBackendApi`
 * export or static property; undefined = it declares none and is taken as
 * written for the server's own version). Throws INVALID_ARG naming `what`
 * and both versions when the declaration is malformed or incompatible.
 */
export function assertModelBackendApi(
  declared: unknown,
  what: string,
  provided: BackendApiVersion = BACKEND_API_VERSION,
): void {
  if (declared === undefined) return;
  const record = typeof declared === "object" && declared !== null ? (declared as Record<string, unknown>) : undefined;
  const major = record?.["major"];
  const minor = record?.["minor"];
  if (!Number.isSafeInteger(major) || !Number.isSafeInteger(minor) || (major as number) < 0 || (minor as number) < 0) {
    throw new OperonError(
      "INVALID_ARG",
      `${what}: operonBackendApi must be { major, minor } (integers >= 0) naming the backend API it was written for, got ${JSON.stringify(declared) ?? String(declared)}`,
    );
  }
  const written = { major: major as number, minor: minor as number };
  if (isCompatibleBackendApi(written, provided)) return;
  const why =
    written.major !== provided.major
      ? "the major versions differ"
      : `it may use what this server's backend API ${formatBackendApiVersion(provided)} lacks`;
  throw new OperonError(
    "INVALID_ARG",
    `${what} was written for backend API ${formatBackendApiVersion(written)}, but this server provides backend API ${formatBackendApiVersion(provided)} (${why}; a model loads when the major versions match and its minor is at most the server's)`,
  );
}
