import { describe, expect, it } from "vitest";
import { ERROR_KINDS, grpcStatusOf, httpStatusOf, logLevelOf } from "./errors.js";

describe("error kind mapping", () => {
  it.each([
    ["INVALID_ARG", 400, 3],
    ["NOT_FOUND", 404, 5],
    ["UNAVAILABLE", 503, 14],
    ["INTERNAL", 500, 13],
    ["UNSUPPORTED", 501, 12],
    ["ALREADY_EXISTS", 400, 6],
    ["CANCELLED", 400, 1],
    ["UNKNOWN", 400, 2],
    ["UNAUTHENTICATED", 401, 16],
    ["PERMISSION_DENIED", 403, 7],
    ["RESOURCE_EXHAUSTED", 429, 8],
  ] as const)("maps %s to HTTP %i and gRPC %i", (kind, http, grpc) => {
    expect(httpStatusOf(kind)).toBe(http);
    expect(grpcStatusOf(kind)).toBe(grpc);
  });

  it("covers every kind in the table above", () => {
    expect(ERROR_KINDS).toHaveLength(11);
  });
});

describe("log level of a failed request", () => {
  it.each([
    ["INVALID_ARG", "info"],
    ["NOT_FOUND", "info"],
    ["UNSUPPORTED", "info"],
    ["ALREADY_EXISTS", "info"],
    ["CANCELLED", "info"],
    ["UNAUTHENTICATED", "info"],
    ["PERMISSION_DENIED", "info"],
    ["RESOURCE_EXHAUSTED", "info"],
    ["UNAVAILABLE", "warn"],
    ["INTERNAL", "error"],
    ["UNKNOWN", "error"],
  ] as const)("logs %s at %s", (kind, level) => {
    expect(logLevelOf(kind)).toBe(level);
  });

  it("has a level for every kind", () => {
    for (const kind of ERROR_KINDS) expect(["info", "warn", "error"]).toContain(logLevelOf(kind));
  });
});
